"""Reading in the driver: a bare read, iterated on a one-machine cluster, skips the object store.

Iterating ``read_parquet(...)`` through Ray tasks moves every byte twice more
than reading the files in the consumer's process: the task copies its table
into the object store (touching fresh shared-memory pages) and the consumer
maps it back, while a single ``pyarrow.dataset`` process decodes straight into
the memory it hands out (benchmark ``read_parquet``).  So when all of these
hold, an iterator (``iter_batches``, ``iter_rows``, the torch and tf
exporters) runs the read tasks on threads of its own process instead:

* the plan is a read and nothing else but column selections (``select_columns``,
  ``read_parquet(columns=)``) and a ``limit``;
* its datasource says its read tasks may run there (``Datasource.reads_in_driver``:
  the Parquet, CSV and JSON sources, whose decoding runs in Arrow's C++ without the GIL);
* this process is a driver (not a Ray task or actor) that started the Ray
  cluster itself (``ray.init()`` with no address), the cluster is still that
  one node, and this is no Ray Client: so the threads use the very CPUs the
  tasks would have, and no other machine could have run them;
* ``DataContext.read_in_driver`` is true (the default; set it false to keep a
  crash of a native reader out of the driver, as a Ray task would).

The read tasks are the planner's, each makes one block exactly as
:func:`~bridge.execution.operators.run_block_transform` does in a task (the
selections fused onto it as the planner fuses them), and the blocks come out
in task order: the same rows, values, types and block boundaries as through
Ray.  One thread per CPU of the cluster reads (``max_tasks_in_flight_per_op``
caps it); tasks running or done and not yet handed out are at most one more
than the threads, and their estimated bytes stay within
``DataContext.bytes_in_flight_budget()`` (one task at least), so the driver
holds about what the object store would have.  ``ds.stats()`` shows the read
with ``in_driver_threads=N``.  Errors are the task's own, not wrapped in
Ray's ``RayTaskError`` (the library's errors come out the same either way).

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

from bridge._ray import cluster_is_this_machine
from bridge.block import Block, BlockMetadata
from bridge.context import DataContext
from bridge.execution.operators import PhysicalOp, run_block_transform
from bridge.execution.progress import ProgressBars
from bridge.execution.stats import DatasetStats
from bridge.execution.streaming_executor import ExecutionStopped
from bridge.execution.transform import BlockTransform
from bridge.io.datasource import ReadTask
from bridge.plan.logical import Limit, LogicalOp, Project, Read

#: Seconds between checks for a stop request while a read is under way.
_POLL_S = 0.1


def driver_read(plan: LogicalOp, ctx: DataContext, stats: DatasetStats) -> DriverRead | None:
    """A :class:`DriverRead` of the optimised ``plan`` where the module docstring's conditions hold, else ``None``."""
    if not ctx.read_in_driver:
        return None
    projects: list[Project] = []
    limit: int | None = None
    while isinstance(plan, (Project, Limit)):  # a selection keeps every row: the two commute
        if isinstance(plan, Limit):
            limit = plan.n if limit is None else min(limit, plan.n)
        else:
            projects.insert(0, plan)
        plan = plan.input
    if not (isinstance(plan, Read) and plan.datasource.reads_in_driver) or not cluster_is_this_machine():
        return None
    cpus = int(ray.cluster_resources().get("CPU", 0))
    if cpus < 1:
        return None
    from bridge.execution.planner import fused_transform

    transform = fused_transform(list(projects))  # as the planner fuses them onto the read's tasks
    name = "->".join([plan.name, *(p.name for p in projects)])
    tasks = plan.datasource.get_read_tasks(plan.parallelism_for())
    threads = min(cpus, ctx.max_tasks_in_flight_per_op or cpus)
    return DriverRead(name, tasks, transform, ctx, stats, threads=threads, limit=limit)


def _run(transform: BlockTransform, name: str, index: int, task: ReadTask) -> tuple[Block, BlockMetadata]:
    # run_block_transform's CPU time is the process's, which here would count the other
    # threads' work too: this thread's own instead (Arrow's decoding threads are in neither).
    cpu = time.thread_time()
    block, meta = run_block_transform(transform, name, index, task, ())
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

    def __init__(self, name: str, tasks: list[ReadTask], transform: BlockTransform, ctx: DataContext,
                 stats: DatasetStats, threads: int, limit: int | None = None) -> None:
        super().__init__(name, [])
        self._tasks = tasks
        self._transform = transform
        self._limit = limit
        self._budget = ctx.bytes_in_flight_budget()
        self._close_lock = threading.Lock()
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
        """Stop the read (see the class docstring) and close its progress bar; idempotent, any thread."""
        self._stop.set()
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        self._bars.close(finished=self._finished)
        if self._run_stats.end is None:
            self._run_stats.end = time.time()

    def iter_blocks(self) -> Iterator[Block]:
        """The read's non-empty blocks in task order; raises a task's error as the task raised it.

        Tasks in flight (running or done and not yet handed out): at most ``threads + 1``, and
        their estimated bytes within ``DataContext.bytes_in_flight_budget()`` (one at least).
        """
        pool = concurrent.futures.ThreadPoolExecutor(self.threads, thread_name_prefix="raybridge-read")
        pending: collections.deque[tuple[concurrent.futures.Future[tuple[Block, BlockMetadata]], int]] = (
            collections.deque())
        waiting = collections.deque(enumerate(self._tasks))
        remaining = self._limit
        in_flight = 0  # estimated bytes of ``pending``
        try:
            while remaining is None or remaining > 0:
                while waiting and len(pending) <= self.threads and not self._stop.is_set():
                    index, task = waiting[0]
                    size = int(task.metadata.size_bytes or 0)
                    if pending and in_flight + size > self._budget:
                        break
                    waiting.popleft()
                    pending.append((self._submit(pool, index, task), size))
                    in_flight += size
                if self._stop.is_set():
                    raise ExecutionStopped("the read was stopped before its end")
                if not pending:
                    break
                future, size = pending.popleft()
                in_flight -= size
                block, meta = self._wait(future)
                self.stats.record(meta)
                if remaining is not None:
                    block = block.slice(0, remaining)
                    remaining -= block.num_rows
                self._bars.update(self, block.num_rows)
                if block.num_rows:
                    yield block
            self._finished = True
        finally:
            self._stop.set()
            for f, _ in pending:
                f.cancel()
            pool.shutdown(wait=False, cancel_futures=True)
            self.close()

    def _submit(self, pool: concurrent.futures.ThreadPoolExecutor, index: int, task: ReadTask
                ) -> concurrent.futures.Future[tuple[Block, BlockMetadata]]:
        try:
            return pool.submit(_run, self._transform, self.name, index, task)
        except RuntimeError:
            # The interpreter is shutting down (the main thread ended while this one still
            # iterates): no new threads may start, so this thread reads the task itself.
            done: concurrent.futures.Future[tuple[Block, BlockMetadata]] = concurrent.futures.Future()
            try:
                done.set_result(_run(self._transform, self.name, index, task))
            except Exception as err:  # noqa: BLE001 - raised to the consumer by _wait, in order
                done.set_exception(err)
            return done

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
