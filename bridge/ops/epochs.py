"""Epochs: ``repeat(n)`` and the per-epoch ``randomize_block_order()``.

Every consumption of a Dataset plans and runs it again from its last
``materialize()``, so steps placed after ``materialize()`` run once per epoch.
Two operators build on that:

* :func:`randomize_block_order_op` is a barrier over block *references* (no data
  moves): it permutes the order of the blocks.  Without a seed each execution
  draws a new order, so every epoch differs; a resumable iterator pins the
  order of one epoch by handing a seed through the execution context.
* :class:`Repeat` streams the input plan ``n`` times (``None``: forever) as one
  sequence of blocks.  Its physical operator runs one nested execution per
  epoch on a feeder thread, so the whole repeated stream stays bounded in memory.
"""

from __future__ import annotations

import dataclasses
import queue
import threading
from typing import TYPE_CHECKING, Any

import numpy as np

from bridge.execution.bundle import RefBundle
from bridge.execution.operators import PhysicalOp
from bridge.plan.logical import AllToAll, LogicalOp

if TYPE_CHECKING:
    from bridge.context import DataContext

#: Attribute a consumer sets on the DataContext copy it executes with, to fix the
#: randomness of seedless per-epoch shuffles (so that a resumed epoch replays).
EPOCH_SEED_ATTR = "_raybridge_epoch_seed"


def epoch_seed(base_seed: int, epoch: int) -> int:
    """A seed for ``epoch`` derived from ``base_seed`` (stable across processes)."""
    return int(np.random.SeedSequence([base_seed & 0xFFFFFFFF, epoch]).generate_state(1)[0])


def randomize_block_order_op(input_op: LogicalOp, seed: int | None) -> AllToAll:
    """A logical operator that permutes the order of its input blocks."""

    def permute(bundles: list[RefBundle], ctx: DataContext) -> list[RefBundle]:
        singles = [s for b in bundles for s in b.split_singletons()]
        effective = seed if seed is not None else getattr(ctx, EPOCH_SEED_ATTR, None)
        order = np.random.default_rng(effective).permutation(len(singles))
        return [singles[i] for i in order]

    label = "RandomizeBlockOrder" if seed is None else f"RandomizeBlockOrder(seed={seed})"
    return AllToAll([input_op], permute, label, preserves_rows=True)


@dataclasses.dataclass(eq=False)
class Repeat(LogicalOp):
    """The input plan, ``times`` times in a row (``None``: forever)."""

    times: int | None

    @property
    def name(self) -> str:
        return f"Repeat({'forever' if self.times is None else self.times})"

    def to_physical(self, ctx: DataContext, build: Any) -> PhysicalOp:
        """Planner hook: the repeated plan becomes a source of its own (see module docstring)."""
        return RepeatOp(self.name, self.input, self.times, ctx)


class RepeatOp(PhysicalOp):
    """A source operator that streams nested executions of ``plan``, epoch after epoch."""

    def __init__(self, name: str, plan: LogicalOp, times: int | None, ctx: DataContext) -> None:
        super().__init__(name, [])
        self._plan = plan
        self._times = times
        self._ctx = ctx
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=16)
        self._finished = threading.Event()
        self._stop = threading.Event()
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        self._inputs_done = [True]

    def _feed(self) -> None:
        from bridge.dataset import Dataset

        epoch = 0
        base = getattr(self._ctx, EPOCH_SEED_ATTR, None)
        try:
            while not self._stop.is_set() and (self._times is None or epoch < self._times):
                ctx = self._ctx.copy()
                if base is not None:
                    setattr(ctx, EPOCH_SEED_ATTR, epoch_seed(base, epoch))
                bundles, _ = Dataset(self._plan)._execute(ctx)
                try:
                    for bundle in bundles:
                        while not self._stop.is_set():
                            try:
                                self._queue.put(bundle, timeout=0.1)
                                break
                            except queue.Full:
                                continue
                        if self._stop.is_set():
                            break
                finally:
                    close = getattr(bundles, "close", None)
                    if close is not None:
                        close()
                epoch += 1
        except BaseException as err:  # noqa: BLE001 - re-raised on the executor thread
            self._error = err
        finally:
            self._finished.set()

    def _ensure_started(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._feed, name="raybridge-repeat", daemon=True)
            self._thread.start()

    def has_output(self) -> bool:
        self._ensure_started()
        if not self._out:
            try:
                self._out.append(self._queue.get_nowait())
            except queue.Empty:
                pass
        if self._error is not None and not self._out:
            err, self._error = self._error, None
            raise err
        return bool(self._out)

    def completed(self) -> bool:
        return self.aborted or (self._finished.is_set() and self._queue.empty() and self._error is None)

    def queued_output_bytes(self) -> int:
        return sum(b.size_bytes for b in self._out)

    def abort(self) -> None:
        super().abort()
        self._stop.set()

    def shutdown(self) -> None:
        self._stop.set()
