"""Logical plan -> physical operators, fusing map-like chains into one task per block."""

from __future__ import annotations

from collections.abc import Iterator

from bridge.block import Block, BlockMetadata
from bridge.context import DataContext
from bridge.execution.actor_pool import build_actor_pool, fit_pools_to_cluster
from bridge.execution.operators import AllToAllOp, InputOp, LimitOp, MapOp, PhysicalOp, UnionOp
from bridge.execution.transform import BlockTransform
from bridge.io.datasource import ReadTask
from bridge.plan.logical import AllToAll, InputData, Limit, LogicalOp, MapLike, Read, Union


def _identity() -> BlockTransform:
    return BlockTransform(lambda blocks, ctx: blocks, "")


def fused_transform(group: list[MapLike], ctx: DataContext | None = None) -> BlockTransform:
    """The block transforms of a run of map-like operators, first to last, as one (one task per block).

    A factory marked ``takes_context`` (a seedless ``random_sample``) is given the executing context: it
    reads the epoch seed a consumer fixed there, so that every rank samples alike.
    """
    transform = _identity()
    for m in group:
        transform = transform + (m.make(ctx) if getattr(m.make, "takes_context", False)  # type: ignore[call-arg]
                                 else m.make())
    return transform


def _fusable(a: MapLike, b: MapLike) -> bool:
    ca, cb = a.compute, b.compute
    return (
        not ca.actors
        and not cb.actors
        and (ca.num_gpus or 0) == (cb.num_gpus or 0)
        and (ca.num_cpus or 1) == (cb.num_cpus or 1)
        and ca.ray_remote_args == cb.ray_remote_args
    )


def _remote_args(op: MapLike) -> dict[str, object]:
    args: dict[str, object] = dict(op.compute.ray_remote_args)
    if op.compute.num_cpus is not None:
        args["num_cpus"] = op.compute.num_cpus
    if op.compute.num_gpus:
        args["num_gpus"] = op.compute.num_gpus
    return args


class _JoinedRead:
    """The blocks of several read tasks, in order, from one task (picklable: a read task travels)."""

    def __init__(self, tasks: list[ReadTask]) -> None:
        self.tasks = tasks

    def __call__(self) -> Iterator[Block]:
        for task in self.tasks:
            yield from task()


def bundled_reads(tasks: list[ReadTask], min_rows: int) -> list[ReadTask]:
    """Consecutive read tasks joined until each holds at least ``min_rows`` rows.

    A map with a ``batch_size`` fused onto a read runs inside the read's tasks, so its batches
    could not be larger than one task's rows: ``range(100, override_num_blocks=50)
    .map_batches(fn, batch_size=10)`` called ``fn`` on 50 batches of 2 rows.  Ray Data bundles
    a read's tasks up to the batch size by their row counts, and so does this: 10 batches of 10.
    A task whose row count is not known before it runs (``0``: a CSV file) stays alone, as Ray
    Data leaves it.

    Example:
        >>> from bridge.io.datasource import ReadTask, meta
        >>> tasks = [ReadTask(lambda: iter(()), meta(n, 0)) for n in (2, 2, 0, 5, 1, 1)]
        >>> [t.metadata.num_rows for t in bundled_reads(tasks, 4)]
        [4, 0, 5, 2]
    """
    out: list[ReadTask] = []
    group: list[ReadTask] = []

    def flush() -> None:
        if len(group) == 1:
            out.append(group[0])
        elif group:
            metas = [t.metadata for t in group]
            files = [f for m in metas for f in (m.input_files or ())]
            out.append(ReadTask(_JoinedRead(list(group)), BlockMetadata(
                num_rows=sum(m.num_rows for m in metas), size_bytes=sum(m.size_bytes for m in metas),
                schema=next((m.schema for m in metas if m.schema is not None), None), input_files=files or None)))
        group.clear()

    rows = 0
    for task in tasks:
        if not task.metadata.num_rows:
            flush()
            out.append(task)
            rows = 0
            continue
        group.append(task)
        rows += task.metadata.num_rows
        if rows >= min_rows:
            flush()
            rows = 0
    flush()
    return out


def plan(op: LogicalOp, ctx: DataContext) -> list[PhysicalOp]:
    """The physical operators for ``op``, in topological order (the last one is the output)."""
    ops: list[PhysicalOp] = []
    _build(op, ctx, ops)
    if any(getattr(o, "uses_actors", False) for o in ops):
        fit_pools_to_cluster(ops)
    return ops


def _check_resources(op: MapLike) -> None:
    """Tasks asking for more GPUs or CPUs than any node has would wait forever: say so now."""
    num_cpus, num_gpus = op.compute.num_cpus, op.compute.num_gpus
    if not num_gpus and num_cpus is None:
        return
    from bridge.execution.actor_sizing import check_request_fits

    check_request_fits(op.name, "task", float(num_cpus or 0), float(num_gpus or 0))


def _build(op: LogicalOp, ctx: DataContext, out: list[PhysicalOp]) -> PhysicalOp:
    if isinstance(op, MapLike):
        # Collect the run of fusable map-like operators ending at ``op``.
        group = [op]
        child = op.input
        while isinstance(child, MapLike) and _fusable(child, group[0]):
            group.insert(0, child)
            child = child.input
        if group[0].uses_actors:
            deps = [_build(child, ctx, out)]
            phys = build_actor_pool(group, deps, ctx)
            out.append(phys)
            return phys
        _check_resources(group[0])
        transform = fused_transform(group, ctx)
        label = "->".join(m.name for m in group)
        min_rows = max((m.min_rows_per_bundle or 0) for m in group) or None
        if isinstance(child, Read) and not (min_rows and any(m.bundle_after_read for m in group)):
            tasks = child.datasource.get_read_tasks(child.parallelism_for())
            if min_rows:
                tasks = bundled_reads(tasks, min_rows)
            phys = MapOp(f"{child.name}->{label}", [], transform, ctx, read_tasks=tasks,
                         remote_args=_remote_args(group[0]))
        else:
            deps = [_build(child, ctx, out)]
            phys = MapOp(label, deps, transform, ctx, remote_args=_remote_args(group[0]), min_rows_per_bundle=min_rows)
        concurrencies = [m.compute.concurrency for m in group]
        caps = [c if isinstance(c, int) else c[1] for c in concurrencies if c is not None and not isinstance(c, bool)]
        if caps:
            # concurrency= on a plain function caps its tasks in flight (Ray Data's meaning).
            phys.max_running = max(min(min(caps), phys.max_running), 1)
        out.append(phys)
        return phys
    if isinstance(op, Read):
        phys = MapOp(op.name, [], _identity(), ctx, read_tasks=op.datasource.get_read_tasks(op.parallelism_for()))
    elif isinstance(op, InputData):
        phys = InputOp(op.name, op.bundles)
    elif isinstance(op, Limit):
        phys = LimitOp(op.name, [_build(op.input, ctx, out)], op.n)
    elif isinstance(op, AllToAll):
        deps = [_build(i, ctx, out) for i in op.inputs]
        phys = AllToAllOp(op.name, deps, op.fn, ctx)
    elif isinstance(op, Union):
        deps = [_build(i, ctx, out) for i in op.inputs]
        phys = UnionOp(op.name, deps)
    else:
        # Logical operators defined outside this module plan themselves (e.g. ops.epochs.Repeat).
        phys = op.to_physical(ctx, lambda child: _build(child, ctx, out))
    out.append(phys)
    return phys
