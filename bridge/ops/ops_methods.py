"""Dataset methods for global (all-to-all) operations: shuffle, sort, groupby, aggregate, repartition, zip.

:class:`bridge.dataset.Dataset` inherits this mixin.  Each method appends an
``AllToAll`` logical operator whose function (in ``bridge/ops/<op>.py``)
runs map and reduce Ray tasks over pyarrow kernels; intermediate pieces stay
in the object store (spilling to disk when it is full), never on the driver.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from bridge.dataset_mixin import DatasetMixin
from bridge.keywords import checked_keywords
from bridge.plan.logical import AllToAll

if TYPE_CHECKING:
    from bridge.dataset import Dataset
    from bridge.ops.aggregate import AggregateFn
    from bridge.ops.grouped_data import GroupedData


class GlobalOpsMethods(DatasetMixin):
    """All-to-all methods of :class:`bridge.Dataset`."""

    def _all_to_all(self, fn: Any, label: str, preserves_rows: bool = False) -> Dataset:
        return self._with(AllToAll([self._plan], fn, label, preserves_rows))

    # ------------------------------------------------------------------ shuffle / sort / repartition
    @checked_keywords("random_shuffle")
    def random_shuffle(self, *, seed: int | None = None, num_blocks: int | None = None) -> Dataset:
        """Shuffle all rows across blocks.

        With ``seed`` the output is identical on every run; without one, every
        execution (every epoch) draws a new order.

        Example:
            >>> import bridge
            >>> sorted(r["id"] for r in bridge.range(5).random_shuffle(seed=1).take_all())
            [0, 1, 2, 3, 4]
        """
        from bridge.iteration.options import check_rows, check_seed
        from bridge.ops.shuffle import random_shuffle_fn

        seed = check_seed("random_shuffle", seed)
        num_blocks = check_rows("random_shuffle", "num_blocks", num_blocks, minimum=1, none_ok=True, unit="blocks",
                                hint="pass num_blocks=None")
        return self._all_to_all(random_shuffle_fn(seed, num_blocks), "RandomShuffle", preserves_rows=True)

    @checked_keywords("sort")
    def sort(self, key: str | list[str], descending: bool | list[bool] = False,
             boundaries: list[Any] | None = None) -> Dataset:
        """Sort rows by one or several columns; nulls (and NaN) come last.

        ``boundaries`` (one ascending key, as Ray Data): the output's blocks are cut at
        those values instead of sampled ones -- ``[10, 20]`` gives three blocks, rows
        below 10, then ``10 <= key < 20``, then the rest (nulls last), empty ones kept.

        Example:
            >>> import bridge
            >>> bridge.from_items([{"x": 2}, {"x": None}, {"x": 1}]).sort("x").take_all()
            [{'x': 1}, {'x': 2}, {'x': None}]
        """
        from bridge.ops.sort import check_boundaries, normalize_sort_keys, sort_fn

        sort_keys = normalize_sort_keys(key, descending)
        label = f"Sort({sort_keys})"
        return self._all_to_all(sort_fn(sort_keys, label, check_boundaries(sort_keys, boundaries)), label,
                                preserves_rows=True)

    @checked_keywords("repartition")
    def repartition(self, num_blocks: int | None = None, target_num_rows_per_block: int | None = None, *,
                    strict: bool = False, shuffle: bool = False, keys: list[str] | str | None = None,
                    sort: bool = False) -> Dataset:
        """Exactly ``num_blocks`` blocks of near-equal row counts (order kept unless ``shuffle``).

        ``keys=[...]``: exactly ``num_blocks`` blocks, every row with one key value in
        the same block (``sort=True`` also sorts each block by the keys, nulls last).
        ``target_num_rows_per_block=n`` instead: blocks of exactly ``n`` rows in order, the
        last one shorter, what Ray Data gives with ``strict=True`` (its default splits per
        input block, giving at most ``n`` rows each); ``strict`` is accepted either way.

        Example:
            >>> import bridge
            >>> bridge.range(10).repartition(3).num_blocks()
            3
            >>> bridge.range(10).repartition(target_num_rows_per_block=4).materialize().num_blocks()
            3
            >>> ds = bridge.from_items([{"k": i % 3} for i in range(9)]).repartition(3, keys=["k"], sort=True)
            >>> ds.materialize().num_blocks()
            3
            >>> blocks = [b["k"].to_pylist() for b in ds.iter_batches(batch_size=None, batch_format="pyarrow")]
            >>> sorted(k for b in blocks for k in set(b))  # each key in one block (some blocks may be empty)
            [0, 1, 2]
            >>> all(b == sorted(b) for b in blocks)
            True
        """
        from bridge.errors import BridgeValueError
        from bridge.ops.shuffle import random_shuffle_fn, repartition_fn, repartition_keys_fn, repartition_rows_fn

        for flag, value in (("shuffle", shuffle), ("strict", strict), ("sort", sort)):
            if not isinstance(value, bool):
                msg = f"repartition: {flag} must be True or False; got {value!r}"
                raise BridgeValueError(msg, f"pass {flag}=True or leave it out")
        if (num_blocks is None) == (target_num_rows_per_block is None):
            msg = (f"repartition: pass exactly one of num_blocks or target_num_rows_per_block; got "
                   f"num_blocks={num_blocks!r}, target_num_rows_per_block={target_num_rows_per_block!r}")
            raise BridgeValueError(msg, "call repartition(8) or repartition(target_num_rows_per_block=10_000)")
        if target_num_rows_per_block is not None:
            rows = target_num_rows_per_block
            if not isinstance(rows, int) or isinstance(rows, bool) or rows < 1 or shuffle or keys is not None \
                    or sort:
                extra = " with shuffle=True" if shuffle else " with keys=" if keys is not None else \
                    " with sort=True" if sort else ""
                msg = f"repartition: target_num_rows_per_block must be an int >= 1, alone; got {rows!r}{extra}"
                raise BridgeValueError(msg, "call repartition(target_num_rows_per_block=10_000), or "
                                            "repartition(num_blocks, keys=[...]) to group by keys")
            return self._all_to_all(repartition_rows_fn(rows), f"Repartition[rows={rows}]", preserves_rows=True)
        if not isinstance(num_blocks, int) or isinstance(num_blocks, bool) or num_blocks < 1:
            raise BridgeValueError(f"repartition: num_blocks must be an int >= 1; got {num_blocks!r}",
                                   "call repartition(8)")
        if keys is not None:
            key_list = [keys] if isinstance(keys, str) else list(keys)
            if not key_list or not all(isinstance(k, str) for k in key_list) or shuffle:
                msg = f"repartition(keys=...): needs one or more column names, without shuffle; got keys={keys!r}" \
                      f"{' with shuffle=True' if shuffle else ''}"
                raise BridgeValueError(msg, 'call repartition(8, keys=["user_id"])')
            label = f"Repartition[{num_blocks}, keys={key_list}{', sorted' if sort else ''}]"
            return self._all_to_all(repartition_keys_fn(num_blocks, key_list, bool(sort), label), label,
                                    preserves_rows=True)
        if sort:
            raise BridgeValueError("repartition(sort=True) sorts by keys=, which is missing",
                                   'call repartition(8, keys=["k"], sort=True), or ds.sort("k")')
        if shuffle:
            return self._all_to_all(random_shuffle_fn(None, num_blocks), f"Repartition[{num_blocks}, shuffle]",
                                    preserves_rows=True)
        return self._all_to_all(repartition_fn(num_blocks), f"Repartition[{num_blocks}]", preserves_rows=True)

    @checked_keywords("random_sample")
    def random_sample(self, fraction: float, *, seed: int | None = None) -> Dataset:
        """Keep each row with probability ``fraction`` (reproducible with ``seed``).

        Example:
            >>> import bridge
            >>> 300 < bridge.range(1000).random_sample(0.5, seed=0).count() < 700
            True
        """
        import numbers
        from functools import partial

        from bridge.errors import BridgeTypeError, BridgeValueError
        from bridge.iteration.options import check_seed
        from bridge.ops.shuffle import random_sample_transform

        seed = check_seed("random_sample", seed)
        if isinstance(fraction, bool) or not isinstance(fraction, (int, float, numbers.Real)):
            raise BridgeTypeError(f"random_sample: fraction must be a number in [0, 1]; got {fraction!r} "
                                  f"({type(fraction).__name__})", "pass e.g. 0.1")
        if not 0.0 <= fraction <= 1.0:
            raise BridgeValueError(f"random_sample: fraction must be in [0, 1]; got {fraction}", "pass e.g. 0.1")
        make = partial(random_sample_transform, fraction, seed)
        make.takes_context = True  # type: ignore[attr-defined]
        make.seedless_sample = seed is None  # type: ignore[attr-defined]
        return self._ds._map_like(make, f"RandomSample({fraction})", None, None, None, None, {})

    def zip(self, *others: Dataset) -> Dataset:
        """Columns of ``self`` and ``others`` side by side (row counts must be equal).

        Clashing column names get a suffix: ``x`` becomes ``x_1``, then ``x_2``.

        Example:
            >>> import bridge
            >>> bridge.range(2).zip(bridge.range(2)).take_all()
            [{'id': 0, 'id_1': 0}, {'id': 1, 'id_1': 1}]
            >>> bridge.range(1).zip(bridge.range(1), bridge.range(1)).take_all()
            [{'id': 0, 'id_1': 0, 'id_2': 0}]
        """
        from bridge.ops.zip_op import zip_fn

        if not others:
            from bridge.errors import BridgeValueError

            raise BridgeValueError("zip() needs at least one other Dataset", "call ds.zip(other) or ds.zip(a, b)")
        out = self._ds
        from bridge.dataset import check_datasets

        check_datasets("zip", others)
        for other in others:  # one exchange per input: names clash-suffixed left to right, as Ray Data does
            out = out._with(AllToAll([out._plan, other._plan], zip_fn("Zip"), "Zip"))
        return out

    # ------------------------------------------------------------------ groupby / aggregate
    @checked_keywords("groupby")
    def groupby(self, key: str | list[str] | None) -> GroupedData:
        """Group rows by one or several key columns (``None``: all rows in one group).

        Example:
            >>> import bridge
            >>> bridge.from_items([{"k": 1}, {"k": 1}, {"k": 2}]).groupby("k").count().take_all()
            [{'k': 1, 'count()': 2}, {'k': 2, 'count()': 1}]
        """
        from bridge.ops.grouped_data import GroupedData

        keys = [] if key is None else [key] if isinstance(key, str) else list(key) if isinstance(key, Iterable) \
            else [key]
        if (key is not None and not keys) or not all(isinstance(k, str) for k in keys):
            from bridge.errors import BridgeValueError

            raise BridgeValueError(f"groupby: key must be a column name or a list of them; got {key!r}",
                              'call ds.groupby("k") or ds.groupby(["k1", "k2"])')
        return GroupedData(self._ds, keys)

    def aggregate(self, *aggs: AggregateFn) -> dict[str, Any]:
        """Whole-Dataset aggregations -> ``{name: value}``.

        Example:
            >>> import bridge
            >>> bridge.range(4).aggregate(bridge.Count(), bridge.Sum("id"))
            {'count()': 4, 'sum(id)': 6}
        """
        from bridge.ops.groupby import aggregate_fn
        from bridge.ops.grouped_data import check_aggs

        aggs_list = check_aggs("aggregate", aggs)
        label = f"Aggregate({', '.join(a.name for a in aggs_list)})"
        rows = self._all_to_all(aggregate_fn([], aggs_list, label), label).take_all()
        if not rows:  # no rows at all: counts are 0, everything else undefined
            from bridge.ops.aggregate import Count

            return {a.name: 0 if isinstance(a, Count) else None for a in aggs_list}
        return rows[0]

    def _column_aggregate(self, cls: Any, op: str, on: str | list[str] | None, **kwargs: Any) -> Any:
        """Ray Data's return shape: one column -> the value; several -> ``{"op(col)": value}``."""
        from bridge.ops.grouped_data import aggregated_columns

        columns = aggregated_columns(self._ds, op, on, [])
        aggs = [cls(c, **kwargs) for c in columns]
        result = self.aggregate(*aggs)
        if len(aggs) == 1:
            return result[aggs[0].name]
        return result

    @checked_keywords("sum")
    def sum(self, on: str | list[str] | None = None, ignore_nulls: bool = True) -> Any:
        """Sum of a column; for several (or ``on=None``: every numeric one) ``{"sum(col)": sum}``.

        As in Ray Data, a list of one column gives the value itself.  Null when no non-null value.

        Example:
            >>> import bridge
            >>> bridge.from_items([{"a": 1, "b": 2.0}, {"a": 3, "b": 4.0}]).sum()
            {'sum(a)': 4, 'sum(b)': 6.0}
        """
        from bridge.ops.aggregate import Sum

        return self._column_aggregate(Sum, "sum", on, ignore_nulls=ignore_nulls)

    @checked_keywords("min")
    def min(self, on: str | list[str] | None = None, ignore_nulls: bool = True) -> Any:
        """Smallest value of a column (several: ``{"min(col)": min}``).

        Example:
            >>> import bridge
            >>> ds = bridge.from_items([{"a": 1, "b": 2.0}, {"a": 3, "b": 5.0}])
            >>> ds.min("a")
            1
            >>> ds.min()
            {'min(a)': 1, 'min(b)': 2.0}
        """
        from bridge.ops.aggregate import Min

        return self._column_aggregate(Min, "min", on, ignore_nulls=ignore_nulls)

    @checked_keywords("max")
    def max(self, on: str | list[str] | None = None, ignore_nulls: bool = True) -> Any:
        """Largest value of a column (several: ``{"max(col)": max}``).

        Example:
            >>> import bridge
            >>> ds = bridge.from_items([{"a": 1, "b": 2.0}, {"a": 3, "b": 5.0}])
            >>> ds.max("a")
            3
            >>> ds.max(["a", "b"])
            {'max(a)': 3, 'max(b)': 5.0}
        """
        from bridge.ops.aggregate import Max

        return self._column_aggregate(Max, "max", on, ignore_nulls=ignore_nulls)

    @checked_keywords("mean")
    def mean(self, on: str | list[str] | None = None, ignore_nulls: bool = True) -> Any:
        """Mean of a column (several: ``{"mean(col)": mean}``).

        Example:
            >>> import bridge
            >>> ds = bridge.from_items([{"a": 1, "b": 2.0}, {"a": 3, "b": 5.0}])
            >>> ds.mean("a")
            2.0
            >>> ds.mean()
            {'mean(a)': 2.0, 'mean(b)': 3.5}
        """
        from bridge.ops.aggregate import Mean

        return self._column_aggregate(Mean, "mean", on, ignore_nulls=ignore_nulls)

    @checked_keywords("std")
    def std(self, on: str | list[str] | None = None, ddof: int = 1, ignore_nulls: bool = True) -> Any:
        """Standard deviation of a column (``ddof=1`` like pandas); several: ``{"std(col)": std}``.

        Example:
            >>> import bridge
            >>> ds = bridge.from_items([{"a": 1}, {"a": 3}])
            >>> ds.std("a")
            1.4142135623730951
            >>> ds.std("a", ddof=0)
            1.0
        """
        from bridge.ops.aggregate import Std

        return self._column_aggregate(Std, "std", on, ddof=ddof, ignore_nulls=ignore_nulls)

    @checked_keywords("unique")
    def unique(self, column: str, ignore_nulls: bool = False) -> list[Any]:
        """The distinct values of ``column`` (order unspecified; null included unless ``ignore_nulls``).

        Example:
            >>> import bridge
            >>> sorted(bridge.from_items([{"x": 1}, {"x": 2}, {"x": 1}]).unique("x"))
            [1, 2]
        """
        from bridge.ops.aggregate import Unique

        return self._column_aggregate(Unique, "unique", column, ignore_nulls=ignore_nulls) or []
