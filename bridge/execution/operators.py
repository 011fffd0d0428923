"""Physical operators run by the streaming executor.

Each operator has input queues, a set of running Ray tasks it can be woken by
(``waitables``), and an ordered output queue.  The executor moves bundles
between them and decides who may start work (backpressure).  New kinds of
operator (actor pools, shuffles) subclass :class:`PhysicalOp`.
"""

from __future__ import annotations

import collections
import itertools
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import ray

from bridge.block import Block, BlockMetadata, Timer, combine_chunks, concat_blocks
from bridge.context import DataContext
from bridge.errors import BridgeError
from bridge.execution.bundle import RefBundle, slice_block
from bridge.execution.stats import OpStats
from bridge.execution.transform import BlockTransform, TaskContext
from bridge.io.datasource import ReadTask


class PhysicalOp:
    """Base class: queues, completion and the hooks the executor calls."""

    def __init__(self, name: str, deps: list[PhysicalOp]) -> None:
        self.name = name
        self.deps = deps
        self.stats = OpStats(name)
        self._inputs_done = [False] * max(len(deps), 1)
        self._out: collections.deque[RefBundle] = collections.deque()
        #: Finished outputs waiting for an earlier input's output (ordered emission).
        self._done: dict[int, RefBundle] = {}
        self._next_emit = 0
        self.aborted = False
        #: Rows this operator expects to output, when known (progress bars).
        self.estimated_rows: int | None = None

    # -- inputs
    def add_input(self, bundle: RefBundle, input_index: int) -> None:
        raise NotImplementedError

    def mark_inputs_done(self, input_index: int) -> None:
        self._inputs_done[input_index] = True

    def all_inputs_done(self) -> bool:
        return all(self._inputs_done)

    # -- work
    def tick(self) -> None:
        """Called once per executor loop round: housekeeping such as scaling an actor pool."""

    def can_dispatch(self) -> bool:
        return False

    def dispatch(self) -> None:
        raise NotImplementedError

    def is_source(self) -> bool:
        return not self.deps

    def waitables(self) -> list[ray.ObjectRef]:
        return []

    def on_ready(self, ref: ray.ObjectRef) -> None:
        raise NotImplementedError

    def task_refs(self, ref: ray.ObjectRef) -> list[ray.ObjectRef]:
        """Every return of the running task that ``ref`` (one of ``waitables()``) belongs to.

        Operators keep their tasks as ``_running: {waited ref: (..., other refs, ...)}``.
        """
        entry = getattr(self, "_running", {}).get(ref, ())
        return [ref, *(x for x in entry if isinstance(x, ray.ObjectRef))]

    def running_refs(self) -> list[ray.ObjectRef]:
        """Every return of every task in flight: what an aborted execution leaves unread."""
        return [r for w in self.waitables() for r in self.task_refs(w)]

    def num_running(self) -> int:
        return 0

    def running_bytes(self) -> int:
        return 0

    def pending_input_bytes(self) -> int:
        return 0

    # -- an actor pool's cold start (see StreamingExecutor._held_for_cold_start)
    def starting_cores(self) -> float:
        """Cores this operator's workers take while it cannot run anything yet (an actor pool starting)."""
        return 0.0

    def first_calls_unfed(self) -> int:
        """While :meth:`starting_cores` is above 0: the first calls no queued input feeds yet."""
        return 0

    def task_cores(self) -> float:
        """Cores one task of this operator is charged when tasks share the machine with starting actors."""
        return 0.0

    # -- outputs
    def has_output(self) -> bool:
        return bool(self._out)

    def get_output(self) -> RefBundle:
        return self._out.popleft()

    def queued_output_bytes(self) -> int:
        return sum(b.size_bytes for b in self._out)

    def completed(self) -> bool:
        """No more outputs will ever come (queued ones may still wait to be taken)."""
        return self.aborted or (self.all_inputs_done() and self.num_running() == 0 and not self._has_pending_inputs())

    def _has_pending_inputs(self) -> bool:
        return False

    def abort(self) -> None:
        """Stop early (a downstream limit was reached): stop dispatching, drop inputs."""
        self.aborted = True

    def _emit(self, index: int, bundle: RefBundle, preserve_order: bool) -> None:
        """Queue the output of input ``index``; with ``preserve_order``, only once all earlier ones left."""
        if not preserve_order:
            self._out.append(bundle)
            return
        self._done[index] = bundle
        while self._next_emit in self._done:
            self._out.append(self._done.pop(self._next_emit))
            self._next_emit += 1

    def shutdown(self) -> None:
        pass


class InputOp(PhysicalOp):
    """Bundles that already exist (a materialised Dataset): emitted as they are."""

    def __init__(self, name: str, bundles: list[RefBundle]) -> None:
        super().__init__(name, [])
        self._out.extend(bundles)
        self._inputs_done = [True]
        self.estimated_rows = sum(b.num_rows for b in bundles)
        for b in bundles:
            self.stats.num_tasks += 0
            self.stats.rows_out += b.num_rows
            self.stats.bytes_out += b.size_bytes


def run_block_transform(
    transform: BlockTransform, op_name: str, index: int, read_task: ReadTask | None, blocks: tuple[Block, ...]
) -> tuple[Block, BlockMetadata]:
    """Run ``transform`` over one input (a read task or blocks) into one output block; in a task or an actor."""
    with Timer() as timer:
        source = iter(read_task()) if read_task is not None else iter(blocks)
        outs = list(transform(source, TaskContext(index, op_name)))
        if not outs:
            # Nothing came out (a map with no output row): no rows, and no columns -- the input's
            # would be a guess (transform._no_output).
            out = pa.table({})
        else:
            out = concat_blocks(outs)
            if out.num_columns and out.column(0).num_chunks > 32:
                out = combine_chunks(out)
    return out, BlockMetadata.of(out, exec_stats=timer.stats())


@ray.remote(num_returns=2)
def _run_map_task(
    transform: BlockTransform, op_name: str, index: int, read_task: ReadTask | None, *blocks: Block
) -> tuple[Block, BlockMetadata]:
    return run_block_transform(transform, op_name, index, read_task, blocks)


class MapOp(PhysicalOp):
    """Runs a (fused) block transform as one Ray task per input bundle, in order."""

    def __init__(
        self,
        name: str,
        deps: list[PhysicalOp],
        transform: BlockTransform,
        ctx: DataContext,
        read_tasks: list[ReadTask] | None = None,
        remote_args: dict[str, Any] | None = None,
        min_rows_per_bundle: int | None = None,
    ) -> None:
        super().__init__(name, deps)
        self.transform = transform
        self.ctx = ctx
        self.remote_args = {"max_retries": ctx.max_task_retries, "retry_exceptions": False}
        self.remote_args.update(remote_args or {})
        self.min_rows = min_rows_per_bundle
        self._pending: collections.deque[tuple[int, Any]] = collections.deque()
        self._bundler: list[RefBundle] = []
        self._counter = itertools.count()
        self._running: dict[ray.ObjectRef, tuple[int, ray.ObjectRef, int]] = {}
        self._avg_out = 0.0
        if read_tasks is not None:
            for t in read_tasks:
                self._pending.append((next(self._counter), t))
            self._inputs_done = [True]
            self.estimated_rows = sum(t.metadata.num_rows for t in read_tasks)
        from bridge._ray import cluster_cpus

        self.max_running = ctx.max_tasks_in_flight_per_op or max(2 * cluster_cpus(), 2)

    def add_input(self, bundle: RefBundle, input_index: int) -> None:
        if self.min_rows:
            self._bundler.append(bundle)
            if sum(b.num_rows for b in self._bundler) >= self.min_rows:
                self._pending.append((next(self._counter), RefBundle.merge(self._bundler)))
                self._bundler = []
        else:
            self._pending.append((next(self._counter), bundle))

    def mark_inputs_done(self, input_index: int) -> None:
        super().mark_inputs_done(input_index)
        if self._bundler:
            self._pending.append((next(self._counter), RefBundle.merge(self._bundler)))
            self._bundler = []

    def _has_pending_inputs(self) -> bool:
        return bool(self._pending) or bool(self._bundler)

    def can_dispatch(self) -> bool:
        return bool(self._pending) and len(self._running) < self.max_running and not self.aborted

    def pending_input_bytes(self) -> int:
        return sum(item.size_bytes for _, item in self._pending if isinstance(item, RefBundle))

    def task_cores(self) -> float:
        # Ray's own default for a task is one CPU; a task uses at least a core while it runs.
        return max(float(self.remote_args.get("num_cpus", 1) or 0), 1.0)

    def dispatch(self) -> None:
        index, item = self._pending.popleft()
        read_task, refs, in_bytes = None, [], 0
        if isinstance(item, ReadTask):
            read_task, in_bytes = item, item.metadata.size_bytes
        else:
            refs, in_bytes = item.refs, item.size_bytes
        block_ref, meta_ref = _run_map_task.options(**self.remote_args).remote(
            self.transform, self.name, index, read_task, *refs
        )
        self._running[meta_ref] = (index, block_ref, in_bytes)

    def waitables(self) -> list[ray.ObjectRef]:
        return list(self._running)

    def num_running(self) -> int:
        return len(self._running)

    def running_bytes(self) -> int:
        return sum(int(self._avg_out or b) for _, _, b in self._running.values())

    def on_ready(self, ref: ray.ObjectRef) -> None:
        index, block_ref, _ = self._running.pop(ref)
        try:
            meta: BlockMetadata = ray.get(ref)
        except (ray.exceptions.WorkerCrashedError, ray.exceptions.OutOfMemoryError) as err:
            # The worker process died under the task (killed for memory, or an os._exit in the function)
            # on every try Ray made: Ray's error names neither the step nor the block.
            msg = (f"{self.name}: the task for input block {index} lost its worker process on every try Ray "
                   f"made ({type(err).__name__})")
            raise BridgeError(msg, "the block likely runs out of memory: lower batch_size (or read smaller "
                                   "blocks: override_num_blocks=), or ask more memory for each task with "
                                   "memory=<bytes> in map_batches; a function that exits the process (os._exit, "
                                   "a crash in native code) fails the same way") from err
        self.stats.record(meta)
        n = self.stats.num_tasks
        self._avg_out += (meta.size_bytes - self._avg_out) / n
        self._emit(index, RefBundle([block_ref], [meta]), self.ctx.preserve_order)

    def abort(self) -> None:
        # The tasks in flight (at most ``max_running``) run to their end and their outputs are
        # dropped with their refs. No ray.cancel of them: a cancel racing a task's own completion
        # trips a fatal check in Ray 2.60's task manager ("Check failed: it != submissible_tasks_.end()"
        # in CompletePendingTask) and kills this driver -- seen mid-suite after an actor pool's
        # workers died and the execution stopped (driver log, 2026-11-23 23:29).
        super().abort()
        self._running.clear()
        self._pending.clear()
        self._bundler.clear()

    def shutdown(self) -> None:
        if self._running:
            self.abort()


class LimitOp(PhysicalOp):
    """Passes the first ``n`` rows; then tells the executor to stop upstream.

    ``limit(0)`` waits for the first input block and passes an empty slice of it, so that the
    result keeps its columns (``schema()``, ``columns()``) as an empty ``filter`` does.
    """

    def __init__(self, name: str, deps: list[PhysicalOp], n: int) -> None:
        super().__init__(name, deps)
        self.remaining = n
        self._schema_sent = n > 0  # n > 0: the rows passed carry the schema

    def add_input(self, bundle: RefBundle, input_index: int) -> None:
        if not self._schema_sent and bundle.refs:
            self._schema_sent = True
            ref, meta = bundle.refs[0], bundle.metas[0]
            if meta.num_rows:
                block_ref, meta_ref = slice_block.remote(ref, 0, 0)
                ref, meta = block_ref, ray.get(meta_ref)  # type: ignore[assignment]
            self._out.append(RefBundle([ref], [meta]))
            return
        if self.remaining <= 0:
            return
        refs, metas = [], []
        for ref, meta in zip(bundle.refs, bundle.metas):
            if self.remaining <= 0:
                break
            if meta.num_rows <= self.remaining:
                refs.append(ref)
                metas.append(meta)
                self.remaining -= meta.num_rows
            else:
                new_ref = slice_block.remote(ref, 0, self.remaining)
                block_ref, meta_ref = new_ref
                refs.append(block_ref)
                metas.append(ray.get(meta_ref))  # type: ignore[arg-type]
                self.remaining = 0
        if refs:
            out = RefBundle(refs, metas)
            self.stats.rows_out += out.num_rows
            self.stats.bytes_out += out.size_bytes
            self._out.append(out)

    def reached(self) -> bool:
        return self.remaining <= 0 and self._schema_sent

    def completed(self) -> bool:
        return self.reached() or super().completed()


class AllToAllOp(PhysicalOp):
    """A barrier: waits for every input bundle, then runs ``fn(bundles)`` (which submits its own tasks)."""

    def __init__(self, name: str, deps: list[PhysicalOp], fn: Callable[..., list[RefBundle]], ctx: DataContext) -> None:
        super().__init__(name, deps)
        self.fn = fn
        self.ctx = ctx
        self._inputs: list[list[RefBundle]] = [[] for _ in deps]
        self._ran = False

    def add_input(self, bundle: RefBundle, input_index: int) -> None:
        self._inputs[input_index].append(bundle)

    def _has_pending_inputs(self) -> bool:
        return not self._ran

    def can_dispatch(self) -> bool:
        return self.all_inputs_done() and not self._ran and not self.aborted

    def dispatch(self) -> None:
        self._ran = True
        with Timer() as timer:
            args = self._inputs if len(self._inputs) > 1 else self._inputs[0]
            outputs = self.fn(args, self.ctx)
        self._inputs = []
        es = timer.stats()
        for b in outputs:
            for meta in b.metas:
                # Reduce tasks report their own spans (timelines); others count as one unit of output.
                self.stats.record(meta)
            self._out.append(b)
        # The operator is active from its first map task to its last reduce: the driver-side span.
        self.stats.first_start = min(self.stats.first_start or es.start_ts, es.start_ts)
        self.stats.last_end = max(self.stats.last_end or es.end_ts, es.end_ts)
        self.stats.extra["exchange_s"] = es.wall_s


class UnionOp(PhysicalOp):
    """Outputs of every input, input 0 first (order kept by buffering later inputs)."""

    def __init__(self, name: str, deps: list[PhysicalOp]) -> None:
        super().__init__(name, deps)
        self._buffers: list[list[RefBundle]] = [[] for _ in deps]
        self._current = 0
        self._schemas: dict[int, pa.Schema] = {}  # first non-empty schema of each input

    def add_input(self, bundle: RefBundle, input_index: int) -> None:
        from bridge.ops.zip_op import check_union_schemas  # raises SchemaMismatchError naming the columns

        if bundle.num_rows and bundle.schema is not None and input_index not in self._schemas:
            self._schemas[input_index] = bundle.schema
            order = sorted(self._schemas)
            check_union_schemas(self.name, [self._schemas[i] for i in order], order)
        self._buffers[input_index].append(bundle)
        self._drain()

    def mark_inputs_done(self, input_index: int) -> None:
        super().mark_inputs_done(input_index)
        self._drain()

    def _drain(self) -> None:
        while self._current < len(self._buffers):
            buf = self._buffers[self._current]
            self._out.extend(buf)
            for b in buf:
                self.stats.rows_out += b.num_rows
                self.stats.bytes_out += b.size_bytes
            buf.clear()
            if not self._inputs_done[self._current]:
                return
            self._current += 1

    def _has_pending_inputs(self) -> bool:
        return any(self._buffers)
