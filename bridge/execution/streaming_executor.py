"""The streaming executor: runs a DAG of physical operators on Ray, bounded in memory.

A background thread loops: move finished bundles downstream, start tasks where
inputs wait and the byte budget allows, and wait briefly on running tasks.
The last operator's bundles go to a queue the consumer reads from; bytes sitting
in that queue count against the budget, so a slow consumer slows the sources
instead of filling the object store.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Iterator

import ray

from bridge.context import DataContext
from bridge.execution.bundle import RefBundle
from bridge.execution.operators import LimitOp, PhysicalOp
from bridge.execution.progress import ProgressBars
from bridge.execution.stats import DatasetStats

_DONE = object()


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
        self._bars = ProgressBars(ops, ctx.enable_progress_bars)

    # ------------------------------------------------------------------ consumer side
    def start(self) -> StreamingExecutor:
        self._thread = threading.Thread(target=self._run, name="raybridge-executor", daemon=True)
        self._thread.start()
        return self

    def iter_bundles(self) -> Iterator[RefBundle]:
        """Output bundles in order; raises the first error of any task."""
        if self._thread is None:
            self.start()
        try:
            while True:
                t0 = time.perf_counter()
                item = self._out.get()
                self.stats.iter_wait_s += time.perf_counter() - t0
                if item is _DONE:
                    return
                if isinstance(item, BaseException):
                    raise item
                assert isinstance(item, RefBundle)
                with self._out_lock:
                    self._out_bytes -= item.size_bytes
                self._wake.set()
                yield item
        finally:
            self.shutdown()

    def shutdown(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=10)
        for op in self.ops:
            op.shutdown()
        self._bars.close()
        if self.stats.end is None:
            self.stats.end = time.time()

    # ------------------------------------------------------------------ the loop
    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                if self._step():
                    break
            self._out.put(_DONE)
        except BaseException as err:  # noqa: BLE001 - everything goes to the consumer
            self._out.put(unwrap_error(err))
            for op in self.ops:
                op.abort()
        finally:
            self.stats.end = time.time()

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
                    owners[ref].on_ready(ref)
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

    def _dispatch(self) -> None:
        # Downstream first: finishing work in flight frees memory before sources add more.
        for op in reversed(self.ops):
            while op.can_dispatch():
                if op.is_source():
                    busy = self._in_flight_bytes()
                    if busy > 0 and busy >= self.budget:
                        break
                elif self._out_bytes > self.budget:
                    break
                op.dispatch()
