"""Reading in the driver: a bare read, iterated on a one-machine cluster, skips the object store.

Iterating ``read_parquet(...)`` through Ray tasks moves every byte twice more
than reading the files in the consumer's process: the task copies its table
into the object store (touching fresh shared-memory pages) and the consumer
maps it back, while a single ``pyarrow.dataset`` process decodes straight into
the memory it hands out (benchmark ``read_parquet``).  So when all of these
hold, an iterator (``iter_batches``, ``iter_rows``, the torch and tf
exporters) runs the read tasks on threads of its own process instead:

* the plan is a read and nothing else (projections pushed into it), or a limit of one;
* its datasource says its read tasks may run there (``Datasource.reads_in_driver``:
  the Parquet source, whose decoding runs in Arrow's C++ without the GIL);
* the Ray cluster is this machine alone, and this process is not a Ray Client,
  so the threads use the very CPUs the tasks would have;
* ``DataContext.read_in_driver`` is true (the default; set it false to keep a
  crash of a native reader out of the driver, as a Ray task would).

The read tasks are the planner's, each makes one block exactly as
:func:`~bridge.execution.operators.run_block_transform` does in a task, and the
blocks come out in task order: the same rows, values, types and block
boundaries as through Ray.  One thread per CPU of the cluster reads, at most
one task ahead of them is held, so the driver holds at most ``CPUs + 1`` blocks
of the read (each bounded by ``target_max_block_size`` through the datasource's
task sizing).  ``ds.stats()`` shows the read with ``in_driver_threads=N``.

Example:
    >>> import bridge, os, tempfile, pyarrow as pa, pyarrow.parquet as pq
    >>> d = tempfile.mkdtemp()
    >>> pq.write_table(pa.table({"x": [1, 2, 3]}), os.path.join(d, "a.parquet"))
    >>> ds = bridge.read_parquet(d)
    >>> [b["x"].tolist() for b in ds.iter_batches(batch_size=2)]
    [[1, 2], [3]]
    >>> "in_driver_threads" in ds.stats()
    True
"""

from __future__ import annotations

import collections
import concurrent.futures
import threading
import time
from collections.abc import Iterator

import ray

from bridge.block import Block, BlockMetadata
from bridge.context import DataContext
from bridge.execution.operators import PhysicalOp, run_block_transform
from bridge.execution.progress import ProgressBars
from bridge.execution.stats import DatasetStats
from bridge.execution.streaming_executor import ExecutionStopped
from bridge.execution.transform import BlockTransform
from bridge.io.datasource import ReadTask
from bridge.plan.logical import Limit, LogicalOp, Read

#: Seconds between checks for a stop request while a read is under way.
_POLL_S = 0.1


def driver_read(plan: LogicalOp, ctx: DataContext, stats: DatasetStats) -> DriverRead | None:
    """A :class:`DriverRead` of the optimised ``plan`` where the module docstring's conditions hold, else ``None``."""
    limit = plan.n if isinstance(plan, Limit) else None
    if isinstance(plan, Limit):
        plan = plan.input
    if not (ctx.read_in_driver and isinstance(plan, Read) and plan.datasource.reads_in_driver):
        return None
    if not cluster_is_this_machine():
        return None
    from bridge._ray import cluster_cpus

    tasks = plan.datasource.get_read_tasks(plan.parallelism_for())
    return DriverRead(plan.name, tasks, ctx, stats, threads=cluster_cpus(), limit=limit)


def cluster_is_this_machine() -> bool:
    """Whether the Ray cluster is one node, this process's own (and this is no Ray Client)."""
    try:
        if ray.util.client.ray.is_connected():
            return False
        alive = [n for n in ray.nodes() if n.get("Alive")]
        return len(alive) == 1 and alive[0].get("NodeID") == ray.get_runtime_context().get_node_id()
    except Exception:  # noqa: BLE001 - anything unclear: the tasks, which always work
        return False


def _run(identity: BlockTransform, name: str, index: int, task: ReadTask) -> tuple[Block, BlockMetadata]:
    # run_block_transform's CPU time is the process's, which here would count the other
    # threads' work too: this thread's own instead (Arrow's decoding threads are in neither).
    cpu = time.thread_time()
    block, meta = run_block_transform(identity, name, index, task, ())
    if meta.exec_stats is not None:
        meta.exec_stats.cpu_s = time.thread_time() - cpu
    return block, meta


class DriverRead(PhysicalOp):
    """Runs read tasks on ``threads`` threads of this process, yielding their blocks in order
    (the first ``limit`` rows of them, if given).

    An operator so that progress bars and ``stats()`` show it as they show the
    read on Ray; it is not run by the streaming executor but iterated:
    :meth:`iter_blocks` once.  ``request_stop()`` (any thread, a signal handler)
    and ``close()`` stop it: no task starts after them, a task under way runs
    to its end on its thread and its block is dropped.
    """

    def __init__(self, name: str, tasks: list[ReadTask], ctx: DataContext, stats: DatasetStats,
                 threads: int, limit: int | None = None) -> None:
        super().__init__(name, [])
        self._tasks = tasks
        self._limit = limit
        self._run_stats = stats
        self.threads = max(int(threads), 1)
        self.estimated_rows = sum(t.metadata.num_rows or 0 for t in tasks) or None
        self.stats.extra["in_driver_threads"] = self.threads
        stats.ops = [self.stats]
        self._bars = ProgressBars([self], ctx.enable_progress_bars)
        self._stop = threading.Event()
        self._finished = False
        self._closed = False

    def completed(self) -> bool:
        return self._finished

    def request_stop(self) -> None:
        """Ask the read to stop; returns at once and takes no lock (safe in a signal handler)."""
        self._stop.set()

    def close(self) -> None:
        """Stop the read (see the class docstring) and close its progress bar; idempotent."""
        self._stop.set()
        if not self._closed:
            self._closed = True
            self._bars.close(finished=self._finished)
            if self._run_stats.end is None:
                self._run_stats.end = time.time()

    def iter_blocks(self) -> Iterator[Block]:
        """The read's non-empty blocks in task order; raises a task's error as the task raised it."""
        identity = BlockTransform(lambda blocks, _: blocks, "")
        pool = concurrent.futures.ThreadPoolExecutor(self.threads, thread_name_prefix="raybridge-read")
        pending: collections.deque[concurrent.futures.Future[tuple[Block, BlockMetadata]]] = collections.deque()
        tasks = iter(enumerate(self._tasks))
        remaining = self._limit
        try:
            while True:
                while len(pending) <= self.threads and not self._stop.is_set():
                    nxt = next(tasks, None)
                    if nxt is None:
                        break
                    index, task = nxt
                    pending.append(pool.submit(_run, identity, self.name, index, task))
                if self._stop.is_set():
                    raise ExecutionStopped("the read was stopped before its end")
                if not pending:
                    self._finished = True
                    return
                block, meta = self._wait(pending.popleft())
                self.stats.record(meta)
                if remaining is not None and block.num_rows >= remaining:
                    block, limit_reached = block.slice(0, remaining), True
                else:
                    limit_reached = False
                self._bars.update(self, block.num_rows)
                if remaining is not None:
                    remaining -= block.num_rows
                if block.num_rows:
                    yield block
                if limit_reached:
                    self._finished = True
                    return
        finally:
            self._stop.set()
            for f in pending:
                f.cancel()
            pool.shutdown(wait=False, cancel_futures=True)
            self.close()

    def _wait(self, future: concurrent.futures.Future[tuple[Block, BlockMetadata]]) -> tuple[Block, BlockMetadata]:
        t0 = time.perf_counter()
        try:
            while True:
                try:
                    return future.result(timeout=_POLL_S)
                except concurrent.futures.TimeoutError:
                    if self._stop.is_set():
                        raise ExecutionStopped("the read was stopped before its end") from None
        finally:
            self._run_stats.iter_wait_s += time.perf_counter() - t0
