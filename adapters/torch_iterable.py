"""``ds.to_torch()``: a ``torch.utils.data.IterableDataset`` over a Dataset.

The class subclasses torch's; this module is loaded only with the torch adapter
(``bridge`` never imports it), and ``raybridge_adapters.torch_adapter.TorchIterableDataset``
names the same class.

* **Ranks.** With ``torch.distributed`` initialised (or explicit ``rank=`` /
  ``world_size=`` for other launchers such as Horovod), rank ``r`` takes rows
  ``[r * per, (r + 1) * per)`` of the epoch's row stream, ``per = rows // world``
  (``equal=True``; the remainder of fewer than ``world`` rows is dropped), so
  every rank yields the same number of batches and DDP never hangs.  Every rank
  runs the plan itself; with several ranks, seedless shuffles use a seed shared
  by all ranks (broadcast from rank 0 when ``torch.distributed`` is initialised,
  else ``0``) so the shares never overlap.  ``streaming_split`` runs the plan once
  for all ranks instead.
* **DataLoader workers.** With ``num_workers=k`` the creating process feeds
  batch ``i`` to worker ``i % k`` (:mod:`raybridge_adapters.worker_feed`): every row
  exactly once, converted in parallel; with ``batch_size`` set here (and
  ``DataLoader(tds, batch_size=None)``) in the same order as ``num_workers=0``.  Rows
  (``batch_size=None``) go to the workers in chunks of 1,024, which the DataLoader
  interleaves: every row once, not in order.  A loop that stops early and
  iterates again starts that epoch again (its rows may come twice, none is lost):
  the feed runs ahead of the loop, so where the loop stopped is not known.
  Workers make CPU tensors: ``device="cuda"`` with workers is refused at the first
  batch (``pin_memory=True`` on the DataLoader, then ``.to("cuda")`` in the loop).
* **Length.** ``len()`` is this rank's batches (or rows when ``batch_size=None``).
* **Resume.** ``state_dict()`` / ``load_state_dict()`` hold ``epoch``, ``seed`` and
  ``rows_consumed`` (this rank's).  With ``num_workers > 0`` pass the number of
  batches the loop consumed in its current epoch: ``state_dict(batches_consumed=i)``
  (rows, ``batch_size=None``, cannot resume exactly with workers: an error says so).
"""

from __future__ import annotations

import numbers
import os
import sys
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import torch

from bridge.iteration.options import BatchOptions, check_seed
from bridge.iteration.resumable import BatchIterator, check_state, new_seed

from .worker_feed import WorkerFeed, worker_batches

#: Rows per chunk sent to workers when the exporter yields single rows.
_ROW_CHUNK = 1024


def _is_column(value: Any) -> bool:
    """A column of a batch: a tensor or array with rows, or a list / tuple of them."""
    if isinstance(value, (torch.Tensor, np.ndarray)):
        return value.ndim > 0
    return isinstance(value, (list, tuple))


def _refuse_batching_batches(batch_size: int | None, caller: Any) -> None:
    """``DataLoader(ds.to_torch(batch_size=n))``: the loader's default ``batch_size=1`` and collate stack
    each of our batches once more, so every tensor came with an extra leading dimension (``[1, n, ...]``)
    and a model fed it failed far away or, worse, broadcast it.  ``caller`` is the frame that asked
    for the first item: torch's iterable-dataset fetcher, whose ``auto_collation`` says the loader
    batches.  (A ``collate_fn`` of the user's own is taken to know what it gets.)"""
    if batch_size is None or caller is None:
        return
    fetcher = caller.f_locals.get("self")
    if type(fetcher).__name__ != "_IterableDatasetFetcher" or not getattr(fetcher, "auto_collation", False):
        return
    from torch.utils.data import default_collate

    if getattr(fetcher, "collate_fn", None) is not default_collate:
        return
    from bridge.errors import BridgeValueError

    raise BridgeValueError(
        f"DataLoader(to_torch(batch_size={batch_size})): the DataLoader batches again (its batch_size defaults "
        f"to 1), so each tensor would come as [k, {batch_size}, ...] instead of [{batch_size}, ...]",
        f"pass DataLoader(tds, batch_size=None); or to_torch(batch_size=None) (rows) and let the DataLoader "
        f"batch them: DataLoader(tds, batch_size={batch_size})")


def _refuse_device_in_worker(device: Any, workers: int) -> None:
    """``to_torch(device="cuda")`` read by DataLoader workers: a worker makes CPU tensors (CUDA cannot
    start in a forked process, and the DataLoader hands a worker's batch over as it is), so the loop got
    CPU tensors where it had asked for a device. Refused, naming the two ways that work; ``"auto"``
    means the CPU in a worker."""
    if device is None or device == "auto" or torch.device(device).type == "cpu":
        return
    from bridge.errors import BridgeValueError

    raise BridgeValueError(
        f"to_torch(device={device!r}) with DataLoader(num_workers={workers}): the workers' batches stay on "
        f"the CPU (CUDA cannot start in a DataLoader worker), so the loop would get CPU tensors",
        "keep the workers and move each batch in the loop: to_torch(device='cpu'), "
        "DataLoader(tds, batch_size=None, num_workers=k, pin_memory=True), then "
        "{k: v.to('cuda', non_blocking=True) for k, v in batch.items()}; or num_workers=0, where "
        "to_torch copies to the device itself on a background thread")


def _rank_world(rank: int | None, world_size: int | None, torch: Any) -> tuple[int, int]:
    if rank is not None or world_size is not None:
        from bridge.errors import BridgeError

        if rank is None or world_size is None or not 0 <= rank < world_size:
            msg = f"to_torch: rank={rank!r}, world_size={world_size!r} do not name a rank of the world"
            raise BridgeError(msg, "pass both, with 0 <= rank < world_size (e.g. hvd.rank(), hvd.size())")
        return rank, world_size
    dist = torch.distributed
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def _samples_without_seed(op: Any) -> bool:
    """Whether the plan ending at ``op`` holds a ``random_sample`` without a seed."""
    if getattr(getattr(op, "make", None), "seedless_sample", False):
        return True
    return any(_samples_without_seed(i) for i in getattr(op, "inputs", ()))


class TorchIterableDataset(torch.utils.data.IterableDataset):
    """A Dataset as a torch ``IterableDataset`` (see :mod:`raybridge_adapters.torch_iterable`).

    Example:
        >>> import bridge, torch
        >>> tds = bridge.range(100).to_torch(batch_size=10)
        >>> loader = torch.utils.data.DataLoader(tds, batch_size=None, num_workers=2)
        >>> sum(len(b["id"]) for b in loader)  # doctest: +SKIP
        100
    """

    def __init__(self, ds: Any, *, batch_size: int | None = None, dtypes: Any = None, device: Any = "cpu",
                 collate_fn: Any = None, pin_memory: bool | None = None, fill_nulls: Any = None,
                 drop_last: bool = False, local_shuffle_buffer_size: int | None = None,
                 local_shuffle_seed: int | None = None, prefetch_batches: int = 1, rank: int | None = None,
                 world_size: int | None = None, seed: int | None = None, equal: bool = True,
                 zero_copy: bool = False) -> None:
        from .torch_format import make_formatter

        # Here, not in ``to_torch``: ``to_any("torch", seed=...)`` and the class itself come this way too.
        seed = check_seed("to_torch", seed)
        self._ds = ds
        self.batch_size = batch_size
        self.drop_last = drop_last
        self._fmt_kw = dict(dtypes=dtypes, device=device, collate_fn=collate_fn, pin_memory=pin_memory,
                            fill_nulls=fill_nulls, zero_copy=zero_copy)
        make_formatter(**self._fmt_kw, caller="to_torch")  # validate now (device, dtypes) rather than in a worker
        # Arrow batches of batch_size rows (or _ROW_CHUNK-row pieces of the stream when batch_size is None).
        self._options = BatchOptions(
            batch_size=_ROW_CHUNK if batch_size is None else batch_size, batch_format="pyarrow",
            prefetch_batches=prefetch_batches,
            drop_last=drop_last and batch_size is not None,  # (rows: no short batch to drop)
            local_shuffle_buffer_size=local_shuffle_buffer_size,
            local_shuffle_seed=local_shuffle_seed, caller="to_torch")
        self.rank, self.world_size = _rank_world(rank, world_size, torch)
        if seed is None:
            seed = new_seed() if self.world_size == 1 else self._shared_seed(torch)
        self.seed = int(seed)
        self.epoch = 0
        self.rows_consumed = 0
        #: (epoch, rows_consumed) where the latest pass began, and whether it fed rows to workers.
        self._round: tuple[int, int] | None = None
        self._rows_to_workers = False
        self._equal = equal
        #: A seedless random_sample draws its rows by the epoch's seed: its row count is the epoch's.
        self._count_per_epoch = _samples_without_seed(ds._plan)
        #: The (seed, epoch) whose row count start / stop were cut from (a sample's count runs the plan).
        self._bounds_for = (self.seed, self.epoch)
        self._set_bounds(ds.count() if not self._count_per_epoch else self._epoch_count())
        self._calls = 0
        self._feed: WorkerFeed | None = WorkerFeed(self._epoch_tables)
        self._feed_addr = (self._feed.address, self._feed.authkey)
        self._owner_pid = os.getpid()

    def _set_bounds(self, total: int) -> None:
        """This rank's rows ``[start, stop)`` of an epoch of ``total`` rows."""
        per, extra = divmod(total, self.world_size)
        if self._equal:
            extra = 0
        self.start = self.rank * per + min(self.rank, extra)
        self.stop = self.start + per + (1 if self.rank < extra else 0)

    def _epoch_count(self) -> int:
        """The rows of this epoch, with the epoch's seed (what every rank's pass of it will yield)."""
        from bridge.context import DataContext
        from bridge.ops.epochs import EPOCH_SEED_ATTR, epoch_seed

        ctx = DataContext.get_current().copy()
        setattr(ctx, EPOCH_SEED_ATTR, epoch_seed(self.seed, self.epoch))
        bundles, _ = self._ds._execute(ctx)
        return sum(b.num_rows for b in bundles)

    @staticmethod
    def _shared_seed(torch: Any) -> int:
        dist = torch.distributed
        if dist.is_available() and dist.is_initialized():
            box: list[Any] = [new_seed() if dist.get_rank() == 0 else None]
            dist.broadcast_object_list(box, src=0)
            return int(box[0])
        return 0

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_feed"] = None  # the feed stays in the creating process
        return state

    # -------------------------------------------------------------- size and state
    def num_rows(self) -> int:
        """Rows this rank yields per epoch."""
        return self.stop - self.start

    def __len__(self) -> int:
        rows = self.num_rows()
        if self.batch_size is None:
            return rows
        return rows // self.batch_size if self.drop_last else -(-rows // self.batch_size)

    def set_epoch(self, epoch: int) -> None:
        """Start the next iteration at ``epoch`` (like ``DistributedSampler.set_epoch``)."""
        self.epoch, self.rows_consumed, self._round = int(epoch), 0, None

    def state_dict(self, batches_consumed: int | None = None) -> dict[str, Any]:
        """``epoch``, ``seed`` and ``rows_consumed``; with DataLoader workers pass ``batches_consumed``,
        the batches the loop took in the epoch it is in (the feed runs ahead of the loop)."""
        if batches_consumed is None:
            return {"epoch": self.epoch, "seed": self.seed, "rows_consumed": self.rows_consumed}
        if isinstance(batches_consumed, bool) or not isinstance(batches_consumed, numbers.Integral) \
                or batches_consumed < 0:
            from bridge.errors import BridgeValueError

            msg = f"to_torch().state_dict(batches_consumed=...) needs a whole number >= 0; got {batches_consumed!r}"
            raise BridgeValueError(msg, "pass the count of batches your loop took in this epoch (e.g. step + 1)")
        if self._rows_to_workers:
            from bridge.errors import BridgeError

            msg = ("to_torch(batch_size=None).state_dict(batches_consumed=...): DataLoader workers interleave "
                   "the rows of their chunks, so no count of batches names the rows consumed")
            raise BridgeError(msg, "set to_torch(batch_size=B) and DataLoader(batch_size=None) to resume exactly")
        epoch, start = self._round if self._round is not None else (self.epoch, self.rows_consumed)
        rows = start + batches_consumed * (self.batch_size or 1)
        if rows >= self.num_rows():
            epoch, rows = epoch + 1, 0
        return {"epoch": epoch, "seed": self.seed, "rows_consumed": rows}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        check_state(state, "to_torch().load_state_dict")
        self.epoch, self.seed = int(state["epoch"]), int(state["seed"])
        self.rows_consumed = int(state["rows_consumed"])
        self._round, self._rows_to_workers = None, False

    # -------------------------------------------------------------- iteration
    def _batch_iterator(self, formatter: Any) -> BatchIterator:
        if self._count_per_epoch and self._bounds_for != (self.seed, self.epoch):
            # Each epoch samples its own rows: the ranks cut this epoch's count (a count made without the
            # epoch's seed once split another sample, and the ranks' shares overlapped).
            self._set_bounds(self._epoch_count())
            self._bounds_for = (self.seed, self.epoch)
        it = BatchIterator(self._ds, self._options, formatter=formatter, epoch=self.epoch, seed=self.seed)
        it.rows_consumed = self.start + self.rows_consumed
        it.stop_row = self.stop
        return it

    def _epoch_tables(self, _round: int) -> Iterator[Any]:
        """In the creating process: one epoch of Arrow batches for the DataLoader workers.

        The position advances only when the epoch was sent to the end: what the feed sent is not
        what the loop consumed (the workers and the DataLoader hold batches in flight), so a loop
        that stops early and iterates again starts that epoch again from where this round began
        (rows may come twice, none is lost), and ``state_dict(batches_consumed=i)`` counts from there.
        """
        self._round, self._rows_to_workers = (self.epoch, self.rows_consumed), self.batch_size is None
        yield from self._batch_iterator(None)
        self.epoch, self.rows_consumed = self.epoch + 1, 0

    def __iter__(self) -> Iterator[Any]:
        from .torch_format import make_formatter

        _refuse_batching_batches(self.batch_size, sys._getframe(0).f_back)  # (a generator: runs at the first next())
        info = torch.utils.data.get_worker_info()
        if info is not None and os.getpid() != self._owner_pid:
            _refuse_device_in_worker(self._fmt_kw["device"], info.num_workers)
            # The tables came over the feed's socket: this process's own memory, nothing to copy.
            fmt = make_formatter(**{**self._fmt_kw, "device": "cpu", "zero_copy": True})
            self._calls += 1
            token = (info.seed - info.id, self._calls)
            tables = worker_batches(*self._feed_addr, token, info.id, info.num_workers)
            yield from self._emit(fmt(t) for t in tables)
            return
        it = self._batch_iterator(make_formatter(**self._fmt_kw))
        self._round, self._rows_to_workers = (self.epoch, self.rows_consumed), False
        if self.batch_size is not None:
            for batch in it:
                self.rows_consumed = it.rows_consumed - self.start
                yield batch
        else:
            for batch in it:
                for row in self._rows(batch):
                    self.rows_consumed += 1
                    yield row
        self.epoch, self.rows_consumed = self.epoch + 1, 0

    def _emit(self, batches: Iterator[Any]) -> Iterator[Any]:
        for batch in batches:
            if self.batch_size is not None:
                yield batch
            else:
                yield from self._rows(batch)

    @staticmethod
    def _rows(batch: Any) -> Iterator[Any]:
        """One batch cut into rows: a dict of columns gives dicts, a tuple / list of columns (what a
        ``collate_fn`` may return) tuples / lists, one tensor or array its rows."""
        if isinstance(batch, Mapping):
            n = len(next(iter(batch.values()))) if batch else 0
            for i in range(n):
                yield {k: v[i] for k, v in batch.items()}
            return
        if isinstance(batch, (torch.Tensor, np.ndarray)) and batch.ndim:
            yield from batch
            return
        if isinstance(batch, (tuple, list)) and batch and all(_is_column(c) for c in batch) \
                and len({len(c) for c in batch}) == 1:
            make = (lambda *r: type(batch)(*r)) if hasattr(batch, "_fields") else (lambda *r: type(batch)(r))
            for i in range(len(batch[0])):
                yield make(*(c[i] for c in batch))
            return
        from bridge.errors import BridgeValueError

        got = type(batch).__name__ + (f" of {[type(c).__name__ for c in batch][:4]}"
                                      if isinstance(batch, (tuple, list)) else "")
        msg = f"to_torch(batch_size=None): collate_fn returned {got}, which cannot be cut into rows"
        raise BridgeValueError(msg, "return a dict of columns, a tuple / list of columns of one length or one "
                                    "tensor, or pass to_torch(batch_size=B) to get collate_fn's output as it is")

    def __repr__(self) -> str:
        return (f"TorchIterableDataset(rank={self.rank}/{self.world_size}, rows={self.num_rows()}, "
                f"batch_size={self.batch_size}, epoch={self.epoch})")
