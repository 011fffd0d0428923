"""Resumable iteration: an epoch's batches plus ``state_dict()`` / ``load_state_dict()``.

The state is ``{"epoch", "seed", "rows_consumed"}`` in the style of torchdata's
``StatefulDataLoader``.  Resuming replays the same epoch (same seed, so the
same block order and the same local shuffle) and drops the rows already
consumed, so a restarted job neither repeats nor skips a row.  Exactness needs
a deterministic plan: seeded shuffles, or the seedless ones of this library
(``randomize_block_order()`` and the local shuffle buffer), whose randomness the
iterator fixes per epoch from its seed.

Like Ray Data's, the iterable makes a full new pass each time a ``for`` loop
starts it again after a pass ended (the next epoch: ``epoch`` goes up, so
seedless shuffles draw a new order); ``next()`` works on it directly too.

Example:
    >>> import bridge
    >>> it = bridge.range(10).iter_batches(batch_size=4)
    >>> first = next(it)
    >>> state = it.state_dict()
    >>> rest = bridge.range(10).iter_batches(batch_size=4)
    >>> rest.load_state_dict(state)
    >>> [len(b["id"]) for b in rest]
    [4, 2]
"""

from __future__ import annotations

import numbers
import secrets
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from bridge.iteration import interrupt
from bridge.ops.epochs import EPOCH_SEED_ATTR, epoch_seed

if TYPE_CHECKING:
    from bridge.block import Block
    from bridge.dataset import Dataset
    from bridge.iteration.options import BatchOptions

STATE_KEYS = ("epoch", "seed", "rows_consumed")


def new_seed() -> int:
    return secrets.randbits(31)


def check_state(state: dict[str, Any], where: str) -> None:
    from bridge.errors import BridgeError

    missing = [k for k in STATE_KEYS if k not in state]
    if missing:
        msg = f"{where}: the state is missing {missing}; got keys {sorted(state)}"
        raise BridgeError(msg, "pass the dict returned by state_dict() of the same kind of iterator")
    for key in ("epoch", "rows_consumed"):
        value = state[key]
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
            msg = f"{where}: state[{key!r}] must be a whole number >= 0; got {value!r}"
            raise BridgeError(msg, "pass the dict returned by state_dict() unchanged")


class BatchIterator(Iterator[Any]):
    """Batches of one epoch of ``ds``; starts executing on the first ``next()``.

    ``iter()`` on an iterator whose pass ended (exhausted or closed) starts a new
    pass over the next epoch; on one not started or mid-pass it continues.

    ``options`` are the arguments of :meth:`bridge.Dataset.iter_batches`; ``formatter``
    replaces the batch format (the torch and tf exporters use it); ``seed`` fixes the
    epoch's randomness (``None``: drawn at random, recorded in the state).
    """

    def __init__(
        self,
        ds: Dataset,
        options: BatchOptions,
        *,
        formatter: Callable[[Block], Any] | None = None,
        epoch: int = 0,
        seed: int | None = None,
    ) -> None:
        from bridge.iteration.batch_iterator import iter_counted_batches  # noqa: F401 - fail early if broken

        self._ds = ds
        self.options = options
        self._formatter = formatter
        self.epoch = epoch
        self.seed = new_seed() if seed is None else int(seed)
        self.rows_consumed = 0
        #: End the epoch's row stream at this position (a rank's share; set by exporters).
        self.stop_row: int | None = None
        self._gen: Iterator[tuple[int, Any]] | None = None
        #: The execution's output stream; its ``close()`` stops the execution from any thread.
        self._stream: Any = None
        #: Ctrl-C while this iterator waits in ``next()`` on the main thread stops its execution.
        self._sigint = False
        #: The pass ended (exhausted or closed): the next ``iter()`` starts a new one.
        self._ended = False

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict[str, Any]:
        """Where this iterator stands: ``{"epoch", "seed", "rows_consumed"}``."""
        return {"epoch": self.epoch, "seed": self.seed, "rows_consumed": self.rows_consumed}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue from ``state`` (call before the first ``next()``)."""
        from bridge.errors import BridgeError

        check_state(state, "load_state_dict")
        if self._gen is not None:
            msg = "load_state_dict() was called on an iterator that already started"
            raise BridgeError(msg, "create a new iterator (ds.iter_batches(...)) and load the state into it first")
        self.epoch, self.seed, self.rows_consumed = int(state["epoch"]), int(state["seed"]), int(state["rows_consumed"])

    # ------------------------------------------------------------------ iteration
    def _start(self) -> Iterator[tuple[int, Any]]:
        from bridge.context import DataContext
        from bridge.iteration.batch_iterator import iter_counted_batches

        ctx = DataContext.get_current().copy()
        this_epoch = epoch_seed(self.seed, self.epoch)
        setattr(ctx, EPOCH_SEED_ATTR, this_epoch)
        bundles, stats = self._ds._execute(ctx, to_iterate=True)
        self._stream = bundles
        self._sigint = interrupt.install() and hasattr(bundles, "request_stop")
        options = self.options
        if options.local_shuffle_seed is None:
            options = options.replace(local_shuffle_seed=this_epoch)
        return iter_counted_batches(bundles, options, formatter=self._formatter, stats=stats,
                                    skip_rows=self.rows_consumed, stop_row=self.stop_row)

    def __iter__(self) -> BatchIterator:
        if self._ended:
            # A second ``for`` over the same iterable: a full new pass, as in Ray Data.
            self._ended = False
            self._gen = None
            self.epoch += 1
            self.rows_consumed = 0
        return self

    def __next__(self) -> Any:
        if self._gen is None:
            self._gen = self._start()
        if self._sigint:
            interrupt.waiting = self._stream.request_stop
        try:
            rows, batch = next(self._gen)
        except StopIteration:
            self._ended = True
            raise
        except BaseException:
            # KeyboardInterrupt or an error: the pass is over, so stop the executor, its
            # tasks and actors now rather than when the iterator is garbage-collected.
            self.close()
            raise
        finally:
            if self._sigint:
                interrupt.waiting = None
        self.rows_consumed += rows
        return batch

    def close(self) -> None:
        """Stop the execution behind this iterator early.

        A ``for`` loop does not close its iterator when the loop body raises; the
        iterator closes itself when it is dropped, or call this.
        """
        self._stop_execution()
        self._gen = iter(())
        self._ended = True

    def _stop_execution(self) -> None:
        # The executor first: the thread that prepares batches may be waiting on it,
        # and closing the batch generator waits for that thread.
        stream, self._stream = self._stream, None
        gen, self._gen = self._gen, None
        self._sigint = False
        for closeable in (stream, gen):
            close = getattr(closeable, "close", None)
            if close is not None:
                close()

    def __del__(self) -> None:
        try:
            self._stop_execution()
        except Exception:  # noqa: BLE001 - best effort at interpreter shutdown
            pass
