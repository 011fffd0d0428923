"""The streaming executor: runs a DAG of physical operators on Ray, bounded in memory.

A background thread loops: move finished bundles downstream, start tasks where
inputs wait and the byte budget allows (and, while an actor pool is starting on a
machine its actors fill, only what its first calls need), and wait briefly on
running tasks.
The last operator's bundles go to a queue the consumer reads from; bytes sitting
in that queue count against the budget, so a slow consumer slows the sources
instead of filling the object store.
"""

from __future__ import annotations

import atexit
import queue
import threading
import time
import weakref
from collections.abc import Iterable, Iterator

import ray

from bridge._ray import ray_session, session_ended_error
from bridge.context import DataContext
from bridge.errors import BridgeError
from bridge.execution.bundle import RefBundle
from bridge.execution.operators import LimitOp, PhysicalOp
from bridge.execution.progress import ProgressBars
from bridge.execution.stats import DatasetStats

_DONE = object()
_STOPPED = object()  # the execution was stopped from outside (the consumer closed or was interrupted)
#: Executions not yet shut down: stopped at interpreter exit, before Ray's own shutdown runs.
_LIVE: weakref.WeakSet[StreamingExecutor] = weakref.WeakSet()


class ExecutionStopped(Exception):
    """Raised to a reader still waiting on an execution that was stopped (its consumer went away)."""


def collect_quietly(refs: Iterable[ray.ObjectRef]) -> None:
    """Mark the results of abandoned tasks as seen, so that Ray does not log their errors.

    Ray prints "Unhandled error" with the worker's traceback for every task error
    whose ref is dropped unread: after the first failure, the sibling tasks (and
    the other return of the failed one) would each print one, burying the one
    error the user is shown.  ``ray.wait`` with ``fetch_local`` marks a finished
    result as read; tasks still running (left to finish) are waited for on a
    daemon thread.
    """
    pending = list(dict.fromkeys(refs))
    if not pending:
        return
    try:
        _, pending = ray.wait(pending, num_returns=len(pending), timeout=0)
    except Exception:  # noqa: BLE001 - Ray shutting down: nothing left to log either
        return
    if pending:
        threading.Thread(target=_wait_quietly, args=(pending,), name="raybridge-reaper", daemon=True).start()


def _wait_quietly(refs: list[ray.ObjectRef]) -> None:
    try:
        ray.wait(refs, num_returns=len(refs), timeout=60)
    except BaseException:  # noqa: BLE001 - Ray shutting down raises SystemExit in this thread: nothing to tell
        pass


def unwrap_error(err: BaseException) -> BaseException:
    """A RayTaskError around one of our errors -> our error, chained to the user's original."""
    from bridge.errors import BridgeError, UserCodeError
    from bridge.execution import lineage

    if lineage.is_block_lost(err):
        return lineage.block_lost_error(err)
    cause = getattr(err, "cause", None)
    if isinstance(err, ray.exceptions.RayTaskError) and isinstance(cause, BridgeError):
        if isinstance(cause, UserCodeError) and cause.original is not None:
            cause.__cause__ = cause.original
        return cause
    return err


class StreamingExecutor:
    """Executes physical operators (in topological order, the last one is the output)."""

    def __init__(self, ops: list[PhysicalOp], ctx: DataContext, stats: DatasetStats) -> None:
        from bridge.arrow_values import register_pandas_extension_types

        register_pandas_extension_types()  # before any block or schema of this run is read here
        self.ops = ops
        self.ctx = ctx
        self.stats = stats
        stats.ops = [op.stats for op in ops]
        self.final = ops[-1]
        self._downstream: dict[int, list[tuple[PhysicalOp, int]]] = {id(op): [] for op in ops}
        for op in ops:
            for i, dep in enumerate(op.deps):
                self._downstream[id(dep)].append((op, i))
        self._done_signalled: set[int] = set()
        self._out: queue.Queue[object] = queue.Queue()
        self._out_bytes = 0
        self._out_lock = threading.Lock()
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self.budget = ctx.bytes_in_flight_budget()
        self._cpus: int | None = None  # the cluster's, asked once an actor pool starts cold
        self._bars = ProgressBars(ops, ctx.enable_progress_bars, budget=self.budget)
        self._finished = False
        self._shutdown_lock = threading.Lock()
        self._is_shut_down = False
        #: All returns of the task whose ``on_ready`` is running (collected if it raises).
        self._failing: list[ray.ObjectRef] = []
        #: The Ray session it runs in: after a ``ray.shutdown()`` the loop's next ``ray.wait`` would start
        #: a Ray of its own (Ray's auto-init, from this daemon thread), so the loop checks it each round.
        self._session = ray_session()
        self._session_checked = time.monotonic()
        self._session_same = True
        _LIVE.add(self)

    # ------------------------------------------------------------------ consumer side
    def start(self) -> StreamingExecutor:
        self._thread = threading.Thread(target=self._run, name="raybridge-executor", daemon=True)
        self._thread.start()
        return self

    def iter_bundles(self) -> BundleStream:
        """Output bundles in order; raises the first error of any task.

        ``close()`` on the stream stops the execution from any thread, also while
        another thread waits in ``next()`` on it.
        """
        return BundleStream(self)

    def _iter_bundles(self) -> Iterator[RefBundle]:
        if self._thread is None:
            self.start()
        try:
            while True:
                t0 = time.perf_counter()
                item = self._out.get()
                self.stats.iter_wait_s += time.perf_counter() - t0
                if item is _DONE:
                    return
                if item is _STOPPED:
                    raise ExecutionStopped("the execution was stopped before its end")
                if isinstance(item, BaseException):
                    raise item
                assert isinstance(item, RefBundle)
                with self._out_lock:
                    self._out_bytes -= item.size_bytes
                self._wake.set()
                yield item
        finally:
            self.shutdown()

    def _take_ready(self, max_bundles: int, max_bytes: int) -> list[RefBundle]:
        """Output bundles already queued, in order, without waiting (at most ``max_bundles`` / ``max_bytes``)."""
        taken: list[RefBundle] = []
        size = 0
        # Bundles handed out stop counting against the budget while the consumer still holds
        # them: keep a group to a quarter of the budget, so the execution stays within it.
        max_bytes = min(max_bytes, self.budget // 4)
        with self._out.mutex:
            waiting = self._out.queue
            while waiting and len(taken) < max_bundles:
                item = waiting[0]
                if not isinstance(item, RefBundle) or (taken and size + item.size_bytes > max_bytes):
                    break  # the end, an error or the size bound: left for the generator
                waiting.popleft()
                taken.append(item)
                size += item.size_bytes
        if taken:
            with self._out_lock:
                self._out_bytes -= size
            self._wake.set()
        return taken

    def request_stop(self) -> None:
        """Ask the loop to stop; returns at once and takes no lock (safe in a signal handler)."""
        self._stop.set()
        self._wake.set()

    def shutdown(self) -> None:
        """Stop the loop, drop running tasks, release actors, close progress bars; idempotent, any thread."""
        self.request_stop()
        with self._shutdown_lock:
            if self._is_shut_down:
                return
            self._is_shut_down = True
            if self._thread is not None and self._thread is not threading.current_thread():
                self._thread.join(timeout=10)
            if self._session_alive():  # (else nothing is left to stop, and a Ray call would start one)
                refs = [r for op in self.ops for r in op.running_refs()]
                for op in self.ops:
                    op.shutdown()
                collect_quietly(refs)
            self._bars.close(finished=self._finished)
            if self.stats.end is None:
                self.stats.end = time.time()
            _LIVE.discard(self)

    # ------------------------------------------------------------------ the loop
    def _run(self) -> None:
        try:
            finished = False
            while not self._stop.is_set():
                if not self._session_alive():
                    raise session_ended_error("the Dataset's execution", self._session)
                if self._step():
                    finished = self._finished = True
                    break
            self._out.put(_DONE if finished else _STOPPED)
        except BaseException as err:  # noqa: BLE001 - everything goes to the consumer
            if not self._session_alive() and not isinstance(err, BridgeError):  # (Ray's own error from a call
                err = session_ended_error("the Dataset's execution", self._session)  # the shutdown cut short)
            self._out.put(unwrap_error(err))
            if not self._session_alive():
                return
            refs = self._failing + [r for op in self.ops for r in op.running_refs()]
            for op in self.ops:
                op.abort()
            collect_quietly(refs)
        finally:
            self.stats.end = time.time()

    def _session_alive(self) -> bool:
        """Whether Ray still runs the session this execution started in (its name read at most every half
        second: a ``ray.shutdown()`` alone is seen at once, one followed by ``ray.init()`` within that)."""
        if not ray.is_initialized():
            return False
        now = time.monotonic()
        if self._session is not None and now - self._session_checked > 0.5:
            self._session_checked = now
            self._session_same = ray_session() == self._session
        return self._session_same

    def _in_flight_bytes(self) -> int:
        total = sum(op.queued_output_bytes() + op.running_bytes() + op.pending_input_bytes() for op in self.ops)
        return total + self._out_bytes

    def _step(self) -> bool:
        """One round of the loop.  Returns True when everything is done."""
        for op in self.ops:
            op.tick()
        self._move_outputs()
        self._dispatch()
        self._move_outputs()
        if self._bars.enabled:
            self._bars.refresh(self._in_flight_bytes)
        if self.final.completed() and not self.final.has_output():
            return True
        waitables = [w for op in self.ops for w in op.waitables()]
        if waitables:
            ready, _ = ray.wait(waitables, num_returns=1, timeout=0.1, fetch_local=False)
            if ready:
                # Pick up everything else that finished meanwhile too.
                more, _ = ray.wait(waitables, num_returns=len(waitables), timeout=0, fetch_local=False)
                owners = {w: op for op in self.ops for w in op.waitables()}
                for ref in set(ready) | set(more):
                    self._failing = owners[ref].task_refs(ref)
                    owners[ref].on_ready(ref)
                self._failing = []
        else:
            self._wake.wait(0.05)
            self._wake.clear()
        return False

    def _move_outputs(self) -> None:
        for op in self.ops:
            while op.has_output():
                bundle = op.get_output()
                self._bars.update(op, bundle.num_rows)
                if op is self.final:
                    with self._out_lock:
                        self._out_bytes += bundle.size_bytes
                    self._out.put(bundle)
                else:
                    for down, idx in self._downstream[id(op)]:
                        down.add_input(bundle, idx)
            if isinstance(op, LimitOp) and op.reached():
                self._abort_upstream(op)
            if op.completed() and id(op) not in self._done_signalled:
                self._done_signalled.add(id(op))
                for down, idx in self._downstream[id(op)]:
                    down.mark_inputs_done(idx)

    def _abort_upstream(self, op: PhysicalOp) -> None:
        for dep in op.deps:
            if not dep.aborted and not dep.completed():
                dep.abort()
            self._abort_upstream(dep)

    def _held_for_cold_start(self, op: PhysicalOp) -> bool:
        """Whether ``op``'s next task waits for the actor pools it feeds to have a ready actor.

        While every actor of a pool is still starting, nothing downstream of it can move, and on a
        machine with few cores the tasks upstream of it only take the cores its actors need to start
        (the first output waits for an actor, not for more input).  So while the pools ``op`` feeds
        are all starting, ``op`` runs no more tasks than the cores the starting actors leave free
        (each actor counted as a whole core at least: :meth:`PhysicalOp.starting_cores`) -- except
        those needed for one first call per starting actor.  A machine with cores to spare runs
        ``op`` as before; the hold ends when one actor is ready.
        """
        cores = op.task_cores()
        consumers = [down for down, _ in self._downstream[id(op)]]
        if not cores or not consumers:
            return False
        starting = [down.starting_cores() for down in consumers]
        if not all(starting):
            return False
        if self._cpus is None:
            from bridge._ray import cluster_cpus

            self._cpus = cluster_cpus()
        if (op.num_running() + 1) * cores <= self._cpus - sum(starting):
            return False
        return op.num_running() >= max(down.first_calls_unfed() for down in consumers)

    def _dispatch(self) -> None:
        # Downstream first: finishing work in flight frees memory before sources add more.
        for op in reversed(self.ops):
            while op.can_dispatch():
                if self._held_for_cold_start(op):
                    break
                if op.is_source():
                    busy = self._in_flight_bytes()
                    if busy > 0 and busy >= self.budget:
                        break
                elif self._out_bytes > self.budget:
                    break
                op.dispatch()


class BundleStream(Iterator[RefBundle]):
    """The output of one execution; ``close()`` stops it at once, from any thread."""

    def __init__(self, executor: StreamingExecutor) -> None:
        self._executor = executor
        self._gen = executor._iter_bundles()

    def __next__(self) -> RefBundle:
        return next(self._gen)

    def take_ready(self, max_bundles: int, max_bytes: int) -> list[RefBundle]:
        """The next bundles that are already done, without waiting for more (see ``ReadyBundles``)."""
        return self._executor._take_ready(max_bundles, max_bytes)

    def request_stop(self) -> None:
        """Ask the execution to stop without waiting (for a signal handler); ``close()`` finishes the job."""
        self._executor.request_stop()

    def close(self) -> None:
        self._executor.shutdown()


@atexit.register
def _shutdown_live_executors() -> None:
    # Registered after Ray's own atexit hook, so it runs first: executors stop while Ray still works.
    for executor in list(_LIVE):
        try:
            executor.shutdown()
        except Exception:  # noqa: BLE001 - best effort at interpreter exit
            pass
