"""DataIterator: what ``Dataset.iterator()`` returns and what a Ray Train worker receives.

One interface over two sources: a whole Dataset (:class:`DatasetIterator`) and
one share of a ``streaming_split`` (``DataSplitIterator`` subclasses
:class:`DataIterator`).  A subclass provides ``batches(options, formatter)``
(one epoch per call), ``schema()``, ``materialize()`` and ``stats()``; ``iter_batches``,
``iter_rows`` and the torch / tf exporters are built on ``batches`` here.

Every iterable returned makes a full new pass when a ``for`` loop starts it
again after a pass ended, as in Ray Data.

Example:
    >>> import bridge
    >>> it = bridge.range(10).iterator()
    >>> [len(b["id"]) for b in it.iter_batches(batch_size=4)]
    [4, 4, 2]
    >>> rows = it.iter_rows()
    >>> len(list(rows)), len(list(rows))
    (10, 10)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from bridge.iteration.options import BatchOptions
from bridge.keywords import checked_keywords

if TYPE_CHECKING:
    import pyarrow as pa

    from bridge.dataset import Dataset, MaterializedDataset


class RowIterator(Iterator[dict[str, Any]]):
    """Rows of one pass; ``iter()`` after the pass ended starts a new pass (``next()`` works too)."""

    def __init__(self, batches: Callable[[], Iterator[Any]]) -> None:
        self._batches = batches
        self._rows: Iterator[dict[str, Any]] | None = None
        self._ended = False

    def _gen(self) -> Iterator[dict[str, Any]]:
        from bridge.batch import block_to_rows

        for block in self._batches():
            yield from block_to_rows(block)

    def __iter__(self) -> RowIterator:
        if self._ended:
            self._ended, self._rows = False, None
        return self

    def __next__(self) -> dict[str, Any]:
        if self._rows is None:
            self._rows = self._gen()
        try:
            return next(self._rows)
        except StopIteration:
            self._ended = True
            raise


class DataIterator:
    """Batches, rows and framework tensors of a Dataset or of one split (see the module docstring).

    Example:
        >>> import bridge
        >>> it = bridge.range(4).iterator()
        >>> [len(b["id"]) for b in it.iter_batches(batch_size=3)]
        [3, 1]
    """

    @checked_keywords("iter_batches")
    def iter_batches(self, *, batch_size: int | None = 256, batch_format: str = "numpy", prefetch_batches: int = 1,
                     drop_last: bool = False, local_shuffle_buffer_size: int | None = None,
                     local_shuffle_seed: int | None = None) -> Iterator[Any]:
        """Batches of ``batch_size`` rows, one epoch per call (arguments of :meth:`bridge.Dataset.iter_batches`).

        Example:
            >>> import bridge
            >>> it = bridge.range(10).iterator()
            >>> [b["id"].tolist() for b in it.iter_batches(batch_size=4)]
            [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
        """
        return self.batches(BatchOptions(
            batch_size=batch_size, batch_format=batch_format, prefetch_batches=prefetch_batches,
            drop_last=drop_last, local_shuffle_buffer_size=local_shuffle_buffer_size,
            local_shuffle_seed=local_shuffle_seed))

    def batches(self, options: BatchOptions, formatter: Callable[[Any], Any] | None = None) -> Iterator[Any]:
        """One epoch of batches cut as ``options`` say, each Arrow batch passed through ``formatter`` if given.

        What ``iter_batches`` and the framework exporters run on; an adapter that hands a split
        to its framework calls it with its own formatter.

        Example:
            >>> import bridge
            >>> from bridge.iteration.options import BatchOptions
            >>> it = bridge.range(5).iterator()
            >>> list(it.batches(BatchOptions(batch_size=2), formatter=lambda table: table.num_rows))
            [2, 2, 1]
        """
        raise NotImplementedError

    def schema(self) -> pa.Schema | None:
        """The Arrow schema of the rows this iterator yields.

        Example:
            >>> import bridge
            >>> bridge.from_items([{"a": 1, "b": "x"}]).iterator().schema()
            a: int64
            b: string
        """
        raise NotImplementedError

    def materialize(self) -> MaterializedDataset:
        """The rows this iterator yields, held in the object store as a :class:`~bridge.MaterializedDataset`.

        Example:
            >>> import bridge
            >>> bridge.range(10, override_num_blocks=2).iterator().materialize()
            MaterializedDataset(num_blocks=2, num_rows=10, schema=id: int64)
        """
        raise NotImplementedError

    def stats(self) -> Any:
        """Execution statistics of the last pass (as :meth:`bridge.Dataset.stats`).

        Example:
            >>> import bridge
            >>> it = bridge.range(10).map_batches(lambda b: b).iterator()
            >>> sum(len(b["id"]) for b in it.iter_batches())
            10
            >>> "MapBatches(<lambda>)" in it.stats()
            True
        """
        raise NotImplementedError

    def iter_rows(self) -> Iterator[dict[str, Any]]:
        """Rows as dicts; iterating the result again makes a new pass.

        Example:
            >>> import bridge
            >>> rows = bridge.range(3).iterator().iter_rows()
            >>> list(rows)
            [{'id': 0}, {'id': 1}, {'id': 2}]
            >>> len(list(rows))
            3
        """
        return RowIterator(lambda: self.iter_batches(batch_size=None, batch_format="pyarrow"))

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return self.iter_rows()

    def iter_torch_batches(self, **options: Any) -> Iterator[Any]:
        """Batches as dicts of torch tensors (arguments of :meth:`bridge.Dataset.iter_torch_batches`).

        Example:
            >>> import bridge
            >>> it = bridge.range(4).iterator()
            >>> [b["id"].tolist() for b in it.iter_torch_batches(batch_size=2)]
            [[0, 1], [2, 3]]
        """
        from bridge.registry import get_adapter

        torch_adapter: Any = get_adapter("torch")
        return torch_adapter.batch_stream(
            lambda formatter, kw: self.batches(BatchOptions(**kw), formatter), options)

    @checked_keywords("iter_tf_batches")
    def iter_tf_batches(self, *, batch_size: int | None = 256, dtypes: Any = None, prefetch_batches: int = 1,
                        drop_last: bool = False, local_shuffle_buffer_size: int | None = None,
                        local_shuffle_seed: int | None = None, fill_nulls: Any = None) -> Iterator[Any]:
        """Batches as ``{column: tf.Tensor}`` (dtype rules: ``adapters/tf_adapter.py``).

        Example:
            >>> import bridge
            >>> it = bridge.range(4).iterator()
            >>> [b["id"].numpy().tolist() for b in it.iter_tf_batches(batch_size=2)]  # doctest: +SKIP
            [[0, 1], [2, 3]]
        """
        from bridge.registry import get_adapter

        tf_adapter: Any = get_adapter("tf")
        options = BatchOptions(batch_size=batch_size, prefetch_batches=prefetch_batches, drop_last=drop_last,
                               local_shuffle_buffer_size=local_shuffle_buffer_size,
                               local_shuffle_seed=local_shuffle_seed, caller="iter_tf_batches")
        return self.batches(options, tf_adapter.batch_formatter(dtypes=dtypes, fill_nulls=fill_nulls))

    def to_tf(self, feature_columns: str | list[str], label_columns: str | list[str] | None = None, *,
              batch_size: int = 1, drop_last: bool = False, **options: Any) -> Any:
        """A ``tf.data.Dataset`` of ``(features, labels)``; each pass over it is one epoch of this iterator.

        Example:
            >>> import bridge
            >>> it = bridge.from_items([{"x": 1.0, "y": 0}, {"x": 2.0, "y": 1}]).iterator()
            >>> tfds = it.to_tf("x", "y", batch_size=2)  # doctest: +SKIP
            >>> [(x.numpy().tolist(), y.numpy().tolist()) for x, y in tfds]  # doctest: +SKIP
            [([1.0, 2.0], [0, 1])]
        """
        from bridge.registry import get_adapter

        tf_adapter: Any = get_adapter("tf")
        return tf_adapter.from_iterator(
            self, feature_columns, label_columns, batch_size=batch_size, drop_last=drop_last, **options)


class DatasetIterator(DataIterator):
    """A :class:`DataIterator` over a whole Dataset: ``Dataset.iterator()``."""

    def __init__(self, ds: Dataset) -> None:
        self._ds = ds

    def batches(self, options: BatchOptions, formatter: Callable[[Any], Any] | None = None) -> Iterator[Any]:
        """Batches of the Dataset (a resumable, re-iterable iterator: see ``Dataset.iter_batches``)."""
        from bridge.iteration.resumable import BatchIterator

        return BatchIterator(self._ds, options, formatter=formatter)

    def iter_torch_batches(self, **options: Any) -> Iterator[Any]:
        return self._ds.iter_torch_batches(**options)

    def to_tf(self, feature_columns: str | list[str], label_columns: str | list[str] | None = None, *,
              batch_size: int = 1, drop_last: bool = False, **options: Any) -> Any:
        return self._ds.to_tf(feature_columns, label_columns, batch_size=batch_size, drop_last=drop_last, **options)

    def to_torch(self, **options: Any) -> Any:
        return self._ds.to_torch(**options)

    def schema(self) -> pa.Schema | None:
        return self._ds.schema()

    def materialize(self) -> MaterializedDataset:
        return self._ds.materialize()

    def stats(self) -> str:
        return self._ds.stats()

    def __repr__(self) -> str:
        return f"DataIterator({self._ds!r})"


__all__ = ["DataIterator", "DatasetIterator", "RowIterator"]
