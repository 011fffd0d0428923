"""GroupedData: what ``Dataset.groupby(key)`` returns."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from bridge.errors import BridgeError
from bridge.ops.aggregate import AggregateFn, Count, Max, Mean, Min, Std, Sum, default_columns
from bridge.plan.logical import AllToAll

if TYPE_CHECKING:
    from bridge.dataset import Dataset


def from_ray_data(agg: Any, op: str) -> Any:
    """Ray Data's own built-in aggregation (``ray.data.aggregate.Sum("x")``, ...) as this library's
    equivalent with the same column, options and output name; anything else as it is."""
    cls = type(agg)
    if not cls.__module__.startswith("ray.data"):
        return agg
    from bridge.ops import aggregate as ours

    name = cls.__name__
    on: Any = getattr(agg, "_target_col_name", None)
    alias = getattr(agg, "name", None)
    nulls = getattr(agg, "_ignore_nulls", True)
    if name in ("Count", "Sum", "Min", "Max", "Mean", "AbsMax", "ZeroPercentage", "CountDistinct", "AsList"):
        return getattr(ours, name)(on=on, ignore_nulls=nulls, alias_name=alias)
    if name in ("ValueCounter", "MissingValuePercentage"):
        return getattr(ours, name)(on=on, alias_name=alias)
    if name == "Std":
        return ours.Std(on=on, ddof=agg._ddof, ignore_nulls=nulls, alias_name=alias)
    if name == "Quantile":
        return ours.Quantile(on=on, q=agg._q, ignore_nulls=nulls, alias_name=alias)
    if name == "Unique" and str(getattr(agg, "_list_encoding_mode", None)) in ("None", "ListEncodingMode.FLATTEN"):
        flatten = agg._list_encoding_mode is not None
        return ours.Unique(on=on, ignore_nulls=nulls, alias_name=alias, encode_lists=flatten)
    if name == "ApproximateQuantile":
        return ours.ApproximateQuantile(on=on, quantiles=list(agg._quantiles),
                                        quantile_precision=agg._quantile_precision, alias_name=alias)
    if name == "ApproximateTopK":
        return ours.ApproximateTopK(on=on, k=agg.k, log_capacity=agg._log_capacity, alias_name=alias,
                                    encode_lists=agg._encode_lists)
    msg = f"{op}: Ray Data's {name} ({agg!r}) has no equivalent here"
    raise BridgeError(msg, "write it as a bridge.AggregateFn (init / accumulate_block / merge / finalize), or "
                           "use one of bridge's aggregations: Count, Sum, Min, Max, Mean, Std, Quantile, ...")


def check_aggs(op: str, aggs: tuple[AggregateFn, ...]) -> list[AggregateFn]:
    if not aggs:
        raise BridgeError(f"{op}: no aggregation given", "pass one or more, e.g. aggregate(Count(), Mean('x'))")
    aggs = tuple(from_ray_data(a, op) for a in aggs)
    bad = [a for a in aggs if not isinstance(a, AggregateFn)]
    if bad:
        msg = f"{op}: expected AggregateFn objects (Count(), Sum('x'), ...); got {bad!r}"
        raise BridgeError(msg, "import them from bridge: from bridge import Count, Sum, Mean")
    # Two aggregations of one name: the later ones become ``name_2``, ``name_3`` ... (Ray Data's rule).
    import copy

    out: list[AggregateFn] = []
    seen: dict[str, int] = {}
    taken = {a.name for a in aggs}
    for a in aggs:
        n = seen.get(a.name, 0) + 1
        seen[a.name] = n
        if n > 1:
            k = n
            while f"{a.name}_{k}" in taken:
                k += 1
            a = copy.copy(a)
            a.name = f"{a.name}_{k}"
            taken.add(a.name)
        out.append(a)
    return out


def _columns(on: str | list[str]) -> list[str]:
    return [on] if isinstance(on, str) else list(on)


def aggregated_columns(ds: Dataset, op: str, on: str | list[str] | None, keys: list[str]) -> list[str]:
    """``on`` as a list; ``None``: every column (but the keys) that ``op`` applies to, as Ray Data does."""
    if on is not None:
        return _columns(on)
    schema = ds.schema()
    columns = [c for c in default_columns(schema, op) if c not in keys]
    if not columns:
        from bridge.errors import BridgeValueError

        names = list(schema.names) if schema is not None else []
        msg = f"{op}(): no column to aggregate without on=; the Dataset has {names} (keys: {keys})"
        raise BridgeValueError(msg, f"name the columns: {op}(on=['x', 'y'])")
    return columns


class GroupedData:
    """Rows grouped by key columns; aggregate them or map each group.

    Results are sorted by the keys (nulls last); rows whose key is null form a group.
    ``groupby(None)`` puts every row in one group (the result then has no key column).
    Without ``on``, ``sum()`` / ``mean()`` / ... aggregate every column but the keys that
    they apply to (numeric ones; ``min`` / ``max`` also strings and times).

    Example:
        >>> import bridge
        >>> ds = bridge.from_items([{"k": "a", "x": 1}, {"k": "b", "x": 2}, {"k": "a", "x": 3}])
        >>> ds.groupby("k").sum("x").take_all()
        [{'k': 'a', 'sum(x)': 4}, {'k': 'b', 'sum(x)': 2}]
    """

    def __init__(self, dataset: Dataset, keys: list[str]) -> None:
        self._ds = dataset
        self._keys = keys

    def aggregate(self, *aggs: AggregateFn) -> Dataset:
        """One row per group: the keys, then one column per aggregation.

        Example:
            >>> import bridge
            >>> ds = bridge.from_items([{"k": "a", "x": 1.0}, {"k": "b", "x": 2.0}, {"k": "a", "x": 3.0}])
            >>> ds.groupby("k").aggregate(bridge.Count(), bridge.Max("x")).take_all()
            [{'k': 'a', 'count()': 2, 'max(x)': 3.0}, {'k': 'b', 'count()': 1, 'max(x)': 2.0}]
        """
        from bridge.ops.groupby import aggregate_fn

        aggs_list = check_aggs("groupby().aggregate", aggs)
        label = f"Aggregate({self._keys}: {', '.join(a.name for a in aggs_list)})"
        return self._ds._with(AllToAll([self._ds._plan], aggregate_fn(self._keys, aggs_list, label), label))

    def count(self) -> Dataset:
        """Rows per group, in column ``count()``.

        Example:
            >>> import bridge
            >>> ds = bridge.from_items([{"k": "a", "x": 1.0}, {"k": "b", "x": 2.0}, {"k": "a", "x": 3.0}])
            >>> ds.groupby("k").count().take_all()
            [{'k': 'a', 'count()': 2}, {'k': 'b', 'count()': 1}]
        """
        return self.aggregate(Count())

    def _on(self, op: str, on: str | list[str] | None) -> list[str]:
        return aggregated_columns(self._ds, op, on, self._keys)

    def sum(self, on: str | list[str] | None = None, ignore_nulls: bool = True) -> Dataset:
        """Per-group sum of ``on`` (column ``sum(on)``; ``None``: every numeric non-key column).

        Example:
            >>> import bridge
            >>> ds = bridge.from_items([{"k": "a", "x": 1.0}, {"k": "b", "x": 2.0}, {"k": "a", "x": 3.0}])
            >>> ds.groupby("k").sum("x").take_all()
            [{'k': 'a', 'sum(x)': 4.0}, {'k': 'b', 'sum(x)': 2.0}]
        """
        return self.aggregate(*[Sum(c, ignore_nulls) for c in self._on("sum", on)])

    def min(self, on: str | list[str] | None = None, ignore_nulls: bool = True) -> Dataset:
        """Per-group minimum of ``on`` (column ``min(on)``).

        Example:
            >>> import bridge
            >>> ds = bridge.from_items([{"k": "a", "x": 1.0}, {"k": "b", "x": 2.0}, {"k": "a", "x": 3.0}])
            >>> ds.groupby("k").min("x").take_all()
            [{'k': 'a', 'min(x)': 1.0}, {'k': 'b', 'min(x)': 2.0}]
        """
        return self.aggregate(*[Min(c, ignore_nulls) for c in self._on("min", on)])

    def max(self, on: str | list[str] | None = None, ignore_nulls: bool = True) -> Dataset:
        """Per-group maximum of ``on`` (column ``max(on)``).

        Example:
            >>> import bridge
            >>> ds = bridge.from_items([{"k": "a", "x": 1.0}, {"k": "b", "x": 2.0}, {"k": "a", "x": 3.0}])
            >>> ds.groupby("k").max("x").take_all()
            [{'k': 'a', 'max(x)': 3.0}, {'k': 'b', 'max(x)': 2.0}]
        """
        return self.aggregate(*[Max(c, ignore_nulls) for c in self._on("max", on)])

    def mean(self, on: str | list[str] | None = None, ignore_nulls: bool = True) -> Dataset:
        """Per-group mean of ``on`` (column ``mean(on)``; ``None``: every numeric non-key column).

        Example:
            >>> import bridge
            >>> ds = bridge.from_items([{"k": "a", "x": 1.0}, {"k": "b", "x": 2.0}, {"k": "a", "x": 3.0}])
            >>> ds.groupby("k").mean().take_all()
            [{'k': 'a', 'mean(x)': 2.0}, {'k': 'b', 'mean(x)': 2.0}]
        """
        return self.aggregate(*[Mean(c, ignore_nulls) for c in self._on("mean", on)])

    def std(self, on: str | list[str] | None = None, ddof: int = 1, ignore_nulls: bool = True) -> Dataset:
        """Per-group standard deviation of ``on`` (column ``std(on)``; NaN for a group of one row at ``ddof=1``,
        as in Ray Data and pandas; null for a group without a value).

        Example:
            >>> import bridge
            >>> ds = bridge.from_items([{"k": "a", "x": 1.0}, {"k": "b", "x": 2.0}, {"k": "a", "x": 3.0}])
            >>> ds.groupby("k").std("x").take_all()
            [{'k': 'a', 'std(x)': 1.4142135623730951}, {'k': 'b', 'std(x)': nan}]
        """
        return self.aggregate(*[Std(c, ddof, ignore_nulls) for c in self._on("std", on)])

    def map_groups(
        self,
        fn: Callable[..., Any] | type,
        *,
        batch_format: str | None = "default",
        fn_args: tuple[Any, ...] = (),
        fn_kwargs: dict[str, Any] | None = None,
        fn_constructor_args: tuple[Any, ...] = (),
        fn_constructor_kwargs: dict[str, Any] | None = None,
        concurrency: int | tuple[int, int] | None = None,
        compute: Any = None,
        num_cpus: float | None = None,
        num_gpus: float | None = None,
        zero_copy_batch: bool = True,
        **ray_remote_args: Any,
    ) -> Dataset:
        """Apply ``fn(batch) -> batch`` to all rows of each group at once.

        An exchange puts each group whole into one block (sorted by key); then
        ``fn`` runs once per group in map tasks -- or, for a callable class, in an
        actor pool sized by ``concurrency`` / ``compute`` (constructed with
        ``fn_constructor_args``), as in ``map_batches``.

        ``batch_format``: ``"default"`` hands a ``pandas.DataFrame`` per group, as Ray
        Data 2.60 does for ``map_groups`` (its docs say NumPy, its code promotes Arrow
        to pandas); ``"numpy"``, ``"pandas"`` and ``"pyarrow"`` as in ``map_batches``.

        Example:
            >>> import bridge
            >>> ds = bridge.from_items([{"k": 1, "x": 1.0}, {"k": 1, "x": 3.0}, {"k": 2, "x": 5.0}])
            >>> ds.groupby("k").map_groups(lambda g: {"k": g["k"][:1], "n": [len(g["x"])]},
            ...                            batch_format="numpy").take_all()
            [{'k': 1, 'n': 2}, {'k': 2, 'n': 1}]
        """
        from functools import partial

        from bridge import batch as batch_mod
        from bridge.compute import resolve_compute
        from bridge.execution.transform import UserFn
        from bridge.ops.groupby import group_partition_fn, map_groups_transform

        fmt = batch_mod.normalize_format("pandas" if batch_format in ("default", None) else batch_format)
        from bridge.dataset import check_callable

        check_callable("map_groups", fn, "group")
        name = getattr(fn, "__name__", type(fn).__name__)
        label = f"MapGroups({name})"
        concurrency = resolve_compute(label, compute, concurrency, isinstance(fn, type))
        if not zero_copy_batch and fmt == "numpy":
            from bridge.dataset import writable_batches

            fn = writable_batches(fn)
        user = UserFn(fn, fn_args, fn_kwargs or {}, fn_constructor_args, fn_constructor_kwargs or {})
        part_label = f"GroupPartition({self._keys})"
        grouped = self._ds._with(AllToAll([self._ds._plan], group_partition_fn(self._keys, part_label), part_label))
        return grouped._map_like(partial(map_groups_transform, self._keys, user, fmt, label), label, user,
                                 concurrency, num_cpus, num_gpus, ray_remote_args)

    def __repr__(self) -> str:
        return f"GroupedData(keys={self._keys}, dataset={self._ds!r})"
