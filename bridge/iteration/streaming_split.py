"""``streaming_split(n)``: n iterators fed by one streaming execution.

A coordinator actor (no CPU reserved) runs the Dataset's plan once per epoch
and deals its blocks to ``n`` queues through a :class:`SplitDispatcher`.  Each
:class:`DataSplitIterator` is a small picklable handle (actor + index): hand it
to a Ray actor, a Ray Train worker or a torch DDP rank.  Blocks travel by
reference; a consumer fetches only its own.

Epochs: each ``iter_batches()`` on a split is one epoch.  Epoch ``e + 1``
starts when every split has finished epoch ``e`` (the barrier Ray Data has).
A consumer that stops reading fills its queue, which pauses the stream; the
others then wait, and after ``DataContext.stall_timeout_s`` they raise
:class:`StallError` naming the stalled split(s), instead of hanging forever.

Equal shares (``equal=True``, the default) follow ``torch.utils.data.DistributedSampler``:
when an epoch's rows do not divide by ``n``, every split gets ``ceil(rows / n)``
rows, the few missing ones repeated from the start of the epoch (so 101 rows in
2 splits give 51 + 51, row 0 twice; 3 rows in 5 splits give one row each), or
with ``drop_last=True`` every split gets ``rows // n`` and the rest is dropped.
Either way split 0's process gets a ``UserWarning`` at the end of such an epoch
saying how many rows were padded or dropped, and ``split.stats()`` reports
``padded_rows`` / ``dropped_rows`` per epoch.  ``equal=False`` deals whole
blocks with no row repeated or lost (shares may differ by up to a block).

Example:
    >>> import bridge
    >>> a, b = bridge.range(101).streaming_split(2)  # 51 rows each, row 0 twice
    >>> # in two processes/actors: for batch in a.iter_batches(batch_size=10): ...
"""

from __future__ import annotations

import threading
import time
import warnings
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, cast

import ray

from bridge.errors import BridgeError, StallError
from bridge.execution.bundle import RefBundle
from bridge.iteration.data_iterator import DataIterator
from bridge.iteration.options import BatchOptions
from bridge.iteration.split_dispatcher import SplitDispatcher

if TYPE_CHECKING:
    from bridge.block import BlockMetadata
    from bridge.dataset import Dataset

#: Blocks a split may have waiting before the stream pauses for it.
MAX_QUEUED_BLOCKS = 4


def _slice_bundle(single: RefBundle, start: int, length: int) -> RefBundle:
    from bridge.execution.bundle import slice_block

    block_ref, meta_ref = slice_block.remote(single.refs[0], start, length)
    meta = cast("BlockMetadata", ray.get(meta_ref))  # num_returns=2: Ray's stubs cannot type the pair
    return RefBundle([block_ref], [meta])


class SplitCoordinator:
    """The actor behind ``streaming_split`` (used via ``ray.remote``; see the module docstring)."""

    def __init__(self, ds: Dataset, n: int, equal: bool, stall_timeout_s: float, drop_last: bool = False) -> None:
        self.ds = ds
        self.n = n
        self.equal = equal
        self.drop_last = drop_last
        self.stall_timeout_s = stall_timeout_s
        self.cond = threading.Condition()
        self.epoch = -1
        self.dispatcher: SplitDispatcher | None = None
        self.done: set[int] = set(range(n))  # splits that finished the current epoch
        #: Splits whose consumer stopped reading the current epoch early (``release``): nothing more is
        #: dealt to them, and once every split is done or released the epoch's execution stops.
        self.released: set[int] = set()
        self.error: BaseException | None = None
        self.last_seen = [time.monotonic()] * n
        self.rows_delivered: dict[int, list[int]] = {}
        # Per epoch, set when its stream ends: (rows in the stream, rows padded, rows dropped).
        self.fill: dict[int, tuple[int, int, int]] = {}
        #: Per split, the epoch its next pass reads: kept here, not in the handle, since a handle pickled
        #: to a Ray task each epoch is a fresh copy (it asked for epoch 0 again, and hung).
        self.next_epochs = [0] * n

    def begin_epoch(self, split: int) -> int:
        """The epoch ``split``'s next pass reads (and count it as begun)."""
        with self.cond:
            epoch = self.next_epochs[split]
            self.next_epochs[split] += 1
            return epoch

    # ------------------------------------------------------------------ producer
    def _feed(self, dispatcher: SplitDispatcher, epoch: int) -> None:
        try:
            bundles, _ = self.ds._execute()
            for bundle in bundles:
                with self.cond:
                    while (not self._abandoned(dispatcher) and any(
                            dispatcher.queued(i) >= MAX_QUEUED_BLOCKS for i in range(self.n) if i not in self.released)):
                        self.cond.wait(0.5)
                    if self._abandoned(dispatcher):
                        break
                    dispatcher.add(bundle)
                    for i in self.released:
                        dispatcher.queues[i].clear()
                    self.cond.notify_all()
            close = getattr(bundles, "close", None)
            if close is not None and self._abandoned(dispatcher):
                close()  # stops the epoch's executor: nobody reads it any more
            with self.cond:
                dispatcher.finish()
                self.fill[epoch] = (dispatcher.total_rows, dispatcher.padded_rows, dispatcher.dropped_rows)
                self.cond.notify_all()
        except BaseException as err:  # noqa: BLE001 - handed to every consumer
            with self.cond:
                self.error = err
                self.cond.notify_all()

    def _abandoned(self, dispatcher: SplitDispatcher) -> bool:
        """Every split of this dispatcher's epoch stopped reading (finished or released) before its end."""
        return dispatcher is not self.dispatcher or (bool(self.released) and len(self.done) == self.n)

    def release(self, split: int, epoch: int) -> None:
        """``split``'s consumer stopped reading ``epoch`` early: drop what waits for it, and wake everyone.

        Without this, a consumer that breaks out of its loop leaves a request blocked here and the
        epoch's blocks held (by the dispatcher's queues and reserve) until the stall timeout.
        """
        with self.cond:
            if epoch != self.epoch or split in self.done:
                return
            self.released.add(split)
            self.done.add(split)
            if self.dispatcher is not None:
                self.dispatcher.queues[split].clear()
                if len(self.done) == self.n:
                    self.dispatcher.reserve.clear()
                    self.dispatcher.head = []
            self.cond.notify_all()

    def _start_epoch(self) -> None:
        self.epoch += 1
        self.released = set()
        self.done = set()
        self.dispatcher = SplitDispatcher(self.n, self.equal, _slice_bundle, self.drop_last)
        self.rows_delivered[self.epoch] = [0] * self.n
        threading.Thread(target=self._feed, args=(self.dispatcher, self.epoch), name="raybridge-split-feed",
                         daemon=True).start()

    # ------------------------------------------------------------------ consumers
    def _stalled(self, me: int) -> list[int]:
        now = time.monotonic()
        d = self.dispatcher
        out = []
        for i in range(self.n):
            if i == me or now - self.last_seen[i] < self.stall_timeout_s:
                continue
            queue_full = d is not None and d.queued(i) >= MAX_QUEUED_BLOCKS
            behind = i not in self.done
            if queue_full or behind:
                out.append(i)
        return out

    def next_bundle(self, split: int, epoch: int) -> RefBundle | None:
        """The next block for ``split`` in ``epoch``, or ``None`` at the end of the epoch."""
        start = time.monotonic()
        with self.cond:
            self.last_seen[split] = time.monotonic()
            while True:
                if self.error is not None:
                    raise self.error
                if epoch == self.epoch + 1 and len(self.done) == self.n:
                    self._start_epoch()
                if epoch == self.epoch and split in self.released:
                    return None
                if epoch == self.epoch and self.dispatcher is not None and self.dispatcher.queues[split]:
                    item = self.dispatcher.queues[split].popleft()
                    if item is None:
                        self.done.add(split)
                    else:
                        self.rows_delivered[epoch][split] += item.num_rows
                    self.last_seen[split] = time.monotonic()
                    self.cond.notify_all()
                    return item
                if epoch == self.epoch and split in self.done:
                    msg = f"streaming_split: split {split} asked for epoch {epoch} again after reading it to its end"
                    raise BridgeError(msg, "iterate every split once per epoch, in step with the others")
                if epoch < self.epoch or epoch > self.epoch + 1:
                    msg = f"streaming_split: split {split} asked for epoch {epoch} while the splits are at epoch {self.epoch}"
                    raise BridgeError(msg, "iterate every split once per epoch, in step with the others")
                if time.monotonic() - start > self.stall_timeout_s:
                    stalled = self._stalled(split)
                    if stalled:
                        msg = (f"streaming_split: split {split} waited {time.monotonic() - start:.0f}s in epoch "
                               f"{max(epoch, 0)}; split(s) {stalled} stopped reading")
                        hint = ("every split must be consumed to the end of each epoch (equal row counts are dealt "
                                "in step); raise DataContext.stall_timeout_s if a consumer is just slow")
                        raise StallError(msg, hint)
                self.cond.wait(0.5)
                self.last_seen[split] = time.monotonic()

    def schema(self) -> Any:
        """The Dataset's schema (runs its plan to the first block; the splits' epochs are not touched)."""
        return self.ds.schema()

    def epoch_fill(self, epoch: int) -> tuple[int, int, int]:
        """``(rows, padded_rows, dropped_rows)`` of a finished epoch's stream."""
        return self.fill[epoch]

    def stats(self) -> dict[str, Any]:
        """Per epoch: rows delivered to each split, and rows padded / dropped to keep the shares equal."""
        return {"epoch": self.epoch, "rows_delivered": dict(self.rows_delivered),
                "padded_rows": {e: f[1] for e, f in self.fill.items()},
                "dropped_rows": {e: f[2] for e, f in self.fill.items()}}


_RemoteCoordinator = ray.remote(num_cpus=0)(SplitCoordinator)

#: Seconds a split waits for one block before it warns that the other splits may not be read.
WAIT_WARNING_S = 30.0


class DataSplitIterator(DataIterator):
    """One consumer's share of a ``streaming_split``; picklable, usable from any Ray worker.

    A :class:`~bridge.iteration.data_iterator.DataIterator`: ``iter_rows``, ``iter_torch_batches``,
    ``iter_tf_batches`` and ``to_tf`` each read one epoch per pass, like ``iter_batches``.
    """

    def __init__(self, coordinator: Any, index: int, n: int) -> None:
        self._coord = coordinator
        self.index = index
        self.n = n

    def __reduce__(self) -> Any:
        return (DataSplitIterator, (self._coord, self.index, self.n))

    def _bundles(self, epoch: int) -> Iterator[RefBundle]:
        pending = self._coord.next_bundle.remote(self.index, epoch)
        finished = warned = False
        try:
            while True:
                if not warned and not ray.wait([pending], timeout=WAIT_WARNING_S)[0]:
                    warned = True  # (ray.wait, not ray.get's timeout: a task error caused by a timeout is one too)
                    warnings.warn(self._waiting_message(), UserWarning, stacklevel=2)
                item = ray.get(pending)
                if item is None:
                    finished = True
                    if self.index == 0:
                        self._warn_if_uneven(epoch)
                    return
                pending = self._coord.next_bundle.remote(self.index, epoch)  # one request ahead
                yield item
        finally:
            if not finished:
                # The consumer stopped early (break, an error, Ctrl-C): tell the coordinator, so the
                # request still pending there returns and the epoch's blocks are let go.
                self._coord.release.remote(self.index, epoch)

    def _waiting_message(self) -> str:
        # (A loop reading split 0 to its end before split 1 waited the whole stall timeout, 10 minutes by
        # default, in silence.)
        return (f"streaming_split({self.n}): split {self.index} has waited {WAIT_WARNING_S:g}s for its next block. "
                "Either the Dataset's plan is slow to make it, or another split is not being read: the splits "
                "are dealt in step, so read all of them at the same time (one per Ray Train worker, or one "
                "thread each). A loop that reads them one after another waits until StallError "
                "(DataContext.stall_timeout_s).")

    def _warn_if_uneven(self, epoch: int) -> None:
        # Split 0 speaks for all (like rank 0 logging), in the consumer's process rather than the actor's log.
        rows, padded, dropped = ray.get(self._coord.epoch_fill.remote(epoch))
        if not padded and not dropped:
            return
        share = (rows + padded) // self.n
        if padded:
            msg = (f"streaming_split({self.n}): the epoch had {rows} rows, which do not divide by {self.n}; "
                   f"{_rows(padded)} repeated from the start of the epoch so that every split gets {share} "
                   "(DistributedSampler's padding). Pass drop_last=True to drop the remainder instead, or "
                   "equal=False for uneven shares with no row repeated.")
        else:
            msg = (f"streaming_split({self.n}): the epoch had {rows} rows, which do not divide by {self.n}; "
                   f"{_rows(dropped)} dropped (drop_last=True) so that every split gets {share}. Pass "
                   "drop_last=False to repeat rows from the start instead, or equal=False for uneven shares.")
        warnings.warn(msg, UserWarning, stacklevel=2)  # raised on the batcher thread: no user frame to point at

    def _next_epoch(self) -> int:
        return int(ray.get(self._coord.begin_epoch.remote(self.index)))

    def batches(self, options: BatchOptions, formatter: Any = None) -> Iterator[Any]:
        """One epoch of this split's batches (see :meth:`DataIterator.batches`)."""
        from bridge.iteration.batch_iterator import iter_batches

        yield from iter_batches(self._bundles(self._next_epoch()), options, formatter=formatter)

    def schema(self) -> Any:
        """The Arrow schema of the split Dataset."""
        return ray.get(self._coord.schema.remote())

    def materialize(self) -> Any:
        """One epoch of this split, held in the object store as a ``MaterializedDataset``."""
        from bridge.dataset import MaterializedDataset
        from bridge.plan.logical import InputData

        bundles = list(self._bundles(self._next_epoch()))
        return MaterializedDataset(InputData([], bundles, f"Split{self.index}"))

    def stats(self) -> dict[str, Any]:
        """The split's coordinator stats (shared by all splits), keyed by epoch.

        ``rows_delivered``: rows per split; ``padded_rows``: rows repeated from the start of the
        epoch so that the shares are equal (``equal=True``); ``dropped_rows``: rows dropped instead
        (``drop_last=True``).  An epoch appears in the last two once its stream has ended.
        """
        return ray.get(self._coord.stats.remote())

    def __repr__(self) -> str:
        return f"DataSplitIterator(split={self.index} of {self.n})"


def _rows(k: int) -> str:
    return f"{k} row" if k == 1 else f"{k} rows"


def streaming_split(ds: Dataset, n: int, *, equal: bool = True, drop_last: bool = False,
                    stall_timeout_s: float | None = None) -> list[DataSplitIterator]:
    """``n`` iterators over one streaming execution of ``ds`` (see the module docstring).

    Args:
        ds: The Dataset; its plan runs once per epoch.
        n: Number of splits (consumers).
        equal: Every split gets the same number of rows each epoch.  ``False``: whole blocks,
            shares may differ, no row is repeated or dropped.
        drop_last: With ``equal=True``, drop the ``rows % n`` remainder instead of repeating
            ``n - rows % n`` rows from the start of the epoch (the default, as
            ``DistributedSampler`` does).  Either way a ``UserWarning`` says how many.
        stall_timeout_s: Seconds a split may stop reading before the others raise ``StallError``
            (default ``DataContext.stall_timeout_s``).

    Example:
        >>> import bridge
        >>> from bridge.iteration.streaming_split import streaming_split
        >>> a, b = streaming_split(bridge.range(101), 2, drop_last=True)  # 50 rows each, one dropped
    """
    from bridge._ray import ensure_ray
    from bridge.context import DataContext

    if not isinstance(n, int) or n < 1:
        raise BridgeError(f"streaming_split(n) needs a positive number of splits; got {n!r}", "call streaming_split(2)")
    ensure_ray()
    timeout = DataContext.get_current().stall_timeout_s if stall_timeout_s is None else stall_timeout_s
    coord = _RemoteCoordinator.options(max_concurrency=max(2 * n + 4, 8)).remote(ds, n, equal, float(timeout),
                                                                               drop_last)
    return [DataSplitIterator(coord, i, n) for i in range(n)]
