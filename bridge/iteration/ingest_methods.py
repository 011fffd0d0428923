"""Dataset methods for training ingest (epochs, splits, torch / tf.data exporters).

Kept apart from ``dataset.py`` so each domain's methods live with their code;
:class:`bridge.dataset.Dataset` inherits this mixin.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from bridge.dataset_mixin import DatasetMixin
from bridge.keywords import checked_keywords

if TYPE_CHECKING:
    from bridge.dataset import Dataset, MaterializedDataset
    from bridge.iteration.data_iterator import DataIterator
    from bridge.iteration.streaming_split import DataSplitIterator


class IngestMethods(DatasetMixin):
    """Training-ingest methods of :class:`bridge.Dataset`."""

    # ------------------------------------------------------------------ epochs
    @checked_keywords("repeat")
    def repeat(self, times: int | None = None) -> Dataset:
        """Stream the Dataset ``times`` times in a row as one sequence (``None``: forever).

        Each repetition is a new epoch: steps after the last ``materialize()`` run
        again (so ``randomize_block_order()`` reorders every epoch).  Consume a
        forever-repeating Dataset with ``limit()``, ``take()`` or by breaking out.

        Example:
            >>> import bridge
            >>> bridge.range(3).repeat(2).take_all()
            [{'id': 0}, {'id': 1}, {'id': 2}, {'id': 0}, {'id': 1}, {'id': 2}]
        """
        from bridge.errors import BridgeValueError
        from bridge.ops.epochs import Repeat

        if times is not None and (not isinstance(times, int) or times < 0):
            raise BridgeValueError(f"repeat(times) needs a non-negative int or None; got {times!r}", "call repeat(3)")
        return self._with(Repeat([self._plan], times))

    @checked_keywords("randomize_block_order")
    def randomize_block_order(self, *, seed: int | None = None) -> Dataset:
        """Permute the order of the blocks (no data moves); a new order every epoch without a seed.

        With ``local_shuffle_buffer_size`` on the iterator this is the cheap
        per-epoch shuffle; ``random_shuffle()`` is the full one.

        Example:
            >>> import bridge
            >>> ds = bridge.range(100, override_num_blocks=10).materialize().randomize_block_order(seed=1)
            >>> sorted(r["id"] for r in ds.take_all()) == list(range(100))
            True
        """
        from bridge.iteration.options import check_seed
        from bridge.ops.epochs import randomize_block_order_op

        return self._with(randomize_block_order_op(self._plan, check_seed("randomize_block_order", seed)))

    # ------------------------------------------------------------------ static splits
    @checked_keywords("split")
    def split(self, n: int, *, equal: bool = False) -> list[MaterializedDataset]:
        """``n`` contiguous parts (sizes differ by at most a row; ``equal=True``: identical).

        Example:
            >>> import bridge
            >>> [p.count() for p in bridge.range(10).split(3)]
            [4, 3, 3]
        """
        from bridge.ops.splits import split

        return split(self._ds, n, equal=equal)

    @checked_keywords("split_at_indices")
    def split_at_indices(self, indices: Sequence[int]) -> list[MaterializedDataset]:
        """Parts ``[0, i0), [i0, i1), ..., [ik, N)``.

        Example:
            >>> import bridge
            >>> [p.count() for p in bridge.range(10).split_at_indices([2, 5])]
            [2, 3, 5]
        """
        from bridge.ops.splits import split_at_indices

        if isinstance(indices, (int, str)) or not hasattr(indices, "__len__"):
            from bridge.errors import BridgeValueError

            msg = f"split_at_indices needs a list of row indices; got {indices!r}"
            raise BridgeValueError(msg, f"pass a list, e.g. split_at_indices([{indices!r}])")
        if len(indices) == 0:
            from bridge.errors import BridgeValueError

            msg = "split_at_indices needs at least one row index; got []"
            raise BridgeValueError(msg, "pass e.g. split_at_indices([100, 250]); for one part use materialize()")
        return split_at_indices(self._ds, indices)

    @checked_keywords("split_proportionately")
    def split_proportionately(self, proportions: Sequence[float]) -> list[MaterializedDataset]:
        """Parts with these fractions of the rows, plus one part with the rest.

        Example:
            >>> import bridge
            >>> [p.count() for p in bridge.range(10).split_proportionately([0.2, 0.5])]
            [2, 5, 3]
        """
        import numbers

        from bridge.ops.splits import split_proportionately

        if not isinstance(proportions, (str, bytes)) and hasattr(proportions, "__iter__"):
            proportions = list(proportions)  # a generator once, not used up by the check
        if isinstance(proportions, (str, bytes)) or not hasattr(proportions, "__iter__") or not all(
                isinstance(p, numbers.Real) and not isinstance(p, bool) for p in proportions):
            from bridge.errors import BridgeTypeError

            msg = f"split_proportionately: proportions must be a list of numbers; got {proportions!r}"
            raise BridgeTypeError(msg, "pass e.g. [0.8, 0.1] for 80% / 10% / 10%")
        return split_proportionately(self._ds, proportions)

    @checked_keywords("train_test_split")
    def train_test_split(self, test_size: float | int, *, shuffle: bool = False, seed: int | None = None,
                         stratify: str | None = None) -> tuple[MaterializedDataset, MaterializedDataset]:
        """``(train, test)``; ``test_size`` is a fraction or a row count; ``shuffle`` shuffles fully first.

        ``stratify="col"`` takes that fraction of every group of ``col`` into the test set (its last rows),
        as Ray Data does.

        Example:
            >>> import bridge
            >>> train, test = bridge.range(10).train_test_split(0.2)
            >>> train.count(), test.count()
            (8, 2)
        """
        from bridge.iteration.options import check_seed
        from bridge.ops.splits import train_test_split

        seed = check_seed("train_test_split", seed)
        return train_test_split(self._ds, test_size, shuffle=shuffle, seed=seed, stratify=stratify)

    @checked_keywords("streaming_split")
    def streaming_split(self, n: int, *, equal: bool = True, drop_last: bool = False,
                        stall_timeout_s: float | None = None) -> list[DataSplitIterator]:
        """``n`` iterators fed by one streaming execution, each usable from another actor or process.

        With ``equal=True`` every split gets the same number of rows (and so of
        batches) every epoch: a remainder is padded by repeating rows from the
        start of the epoch (as ``DistributedSampler`` does), or dropped with
        ``drop_last=True``; a warning and ``split.stats()`` say how many.
        ``equal=False`` deals every row exactly once, in uneven shares.  A split
        that stops reading makes the others raise ``StallError`` naming it after
        ``stall_timeout_s`` (default ``DataContext.stall_timeout_s``).

        Example:
            >>> import bridge
            >>> a, b = bridge.range(11).streaming_split(2)
            >>> sum(len(x["id"]) for x in a.iter_batches()), sum(len(x["id"]) for x in b.iter_batches())  # doctest: +SKIP
            (6, 6)
        """
        from bridge.iteration.streaming_split import streaming_split

        return streaming_split(self._ds, n, equal=equal, drop_last=drop_last,
                               stall_timeout_s=stall_timeout_s)

    # ------------------------------------------------------------------ exporters
    @checked_keywords("iter_torch_batches")
    def iter_torch_batches(
        self,
        *,
        batch_size: int | None = 256,
        dtypes: Any = None,
        device: Any = "cpu",
        collate_fn: Callable[[dict[str, Any]], Any] | None = None,
        pin_memory: bool | None = None,
        fill_nulls: Any = None,
        prefetch_batches: int = 1,
        drop_last: bool = False,
        local_shuffle_buffer_size: int | None = None,
        local_shuffle_seed: int | None = None,
        zero_copy: bool = False,
    ) -> Iterator[Any]:
        """Batches as ``{column: torch.Tensor}`` (dtype rules: ``adapters/torch_format.py``).

        On the CPU every batch owns its memory: an in-place change to it
        (``batch["x"].sub_(mean)``) changes nothing else.  ``zero_copy=True``
        saves that copy where a tensor could be a view of the object store's
        memory: faster, but then the batches must be treated as read-only, as
        an in-place change would reach the Dataset itself (every later epoch
        and reader).  On a GPU a batch is a copy either way.

        Conversion and the host-to-device copy run on a background thread,
        ``prefetch_batches`` ahead, while the loop body takes long enough for
        that overlap to pay; a loop that does little work of its own gets them
        on its own thread, when it asks for the next batch (a thread would only
        pass the GIL back and forth with it).  The times are measured as the
        loop runs and the choice follows them (``bridge/iteration/batch_iterator.py``);
        ``prefetch_batches=0`` never uses the thread.  Returns a resumable
        iterator (``state_dict()`` / ``load_state_dict()``).

        Example:
            >>> import bridge
            >>> next(iter(bridge.range(4).iter_torch_batches(batch_size=2)))["id"].tolist()
            [0, 1]
        """
        from bridge.iteration.options import BatchOptions
        from bridge.iteration.resumable import BatchIterator
        from bridge.registry import get_adapter

        options = BatchOptions(batch_size=batch_size, prefetch_batches=prefetch_batches, drop_last=drop_last,
                               local_shuffle_buffer_size=local_shuffle_buffer_size,
                               local_shuffle_seed=local_shuffle_seed, caller="iter_torch_batches")
        torch_adapter: Any = get_adapter("torch")
        formatter = torch_adapter.batch_formatter(
            dtypes=dtypes, device=device, collate_fn=collate_fn, pin_memory=pin_memory, fill_nulls=fill_nulls,
            zero_copy=zero_copy)
        return BatchIterator(self._ds, options, formatter=formatter)

    @checked_keywords("iter_tf_batches")
    def iter_tf_batches(
        self,
        *,
        batch_size: int | None = 256,
        dtypes: Any = None,
        prefetch_batches: int = 1,
        drop_last: bool = False,
        local_shuffle_buffer_size: int | None = None,
        local_shuffle_seed: int | None = None,
        fill_nulls: Any = None,
    ) -> Iterator[Any]:
        """Batches as ``{column: tf.Tensor}`` (list columns: ``tf.RaggedTensor``; rules: ``adapters/tf_adapter.py``).

        ``dtypes``: one ``tf.DType`` or ``{column: tf.DType}`` to cast to.  Returns a
        resumable iterator that makes a new pass when iterated again.

        Example:
            >>> import bridge
            >>> next(iter(bridge.range(4).iter_tf_batches(batch_size=2)))["id"].numpy().tolist()  # doctest: +SKIP
            [0, 1]
        """
        return self.iterator().iter_tf_batches(
            batch_size=batch_size, dtypes=dtypes, prefetch_batches=prefetch_batches, drop_last=drop_last,
            local_shuffle_buffer_size=local_shuffle_buffer_size, local_shuffle_seed=local_shuffle_seed,
            fill_nulls=fill_nulls)

    def iterator(self) -> DataIterator:
        """A :class:`~bridge.iteration.data_iterator.DataIterator` over this Dataset, as Ray Train workers get.

        It has ``iter_batches``, ``iter_rows``, ``iter_torch_batches``, ``iter_tf_batches``,
        ``to_tf``, ``schema``, ``materialize`` and ``stats``; each iteration is a new epoch.

        Example:
            >>> import bridge
            >>> it = bridge.range(6).iterator()
            >>> sum(len(b["id"]) for b in it.iter_batches(batch_size=4))
            6
        """
        from bridge.iteration.data_iterator import DatasetIterator

        return DatasetIterator(self._ds)

    def to_torch(self, *, batch_size: int | None = None, **options: Any) -> Any:
        """A ``torch.utils.data.IterableDataset``: DataLoader workers and ranks each get their share.

        ``batch_size=None`` yields rows (let the DataLoader batch them);
        otherwise batches (use ``DataLoader(..., batch_size=None)``).  See
        ``adapters/torch_iterable.py`` for sharding, ``len()`` and resume.

        Example:
            >>> import bridge, torch
            >>> tds = bridge.range(10).to_torch(batch_size=5)
            >>> len(tds)
            2
        """
        return self._ds.to_any("torch", batch_size=batch_size, **options)

    def to_tf(self, feature_columns: str | list[str], label_columns: str | list[str] | None = None, *,
              batch_size: int = 1, drop_last: bool = False, **options: Any) -> Any:
        """A ``tf.data.Dataset`` of ``(features, labels)`` whose signature comes from the Arrow schema.

        A column name gives one tensor, a list of names a dict of tensors; list
        columns become ``tf.RaggedTensor`` s.  See ``adapters/tf_adapter.py``.

        Example:
            >>> import bridge
            >>> tfds = bridge.from_items([{"x": 1.0, "y": 0}]).to_tf("x", "y", batch_size=1)  # doctest: +SKIP
        """
        return self._ds.to_any("tf", feature_columns=feature_columns, label_columns=label_columns,
                           batch_size=batch_size, drop_last=drop_last, **options)
