"""Logical plan -> physical operators, fusing map-like chains into one task per block."""

from __future__ import annotations

from bridge.context import DataContext
from bridge.execution.actor_pool import build_actor_pool, fit_pools_to_cluster
from bridge.execution.operators import AllToAllOp, InputOp, LimitOp, MapOp, PhysicalOp, UnionOp
from bridge.execution.transform import BlockTransform
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
