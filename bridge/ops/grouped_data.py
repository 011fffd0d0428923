"""GroupedData: what ``Dataset.groupby(key)`` returns."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from bridge.errors import BridgeError
from bridge.ops.aggregate import AggregateFn, Count, Max, Mean, Min, Std, Sum
from bridge.plan.logical import AllToAll

if TYPE_CHECKING:
    from bridge.dataset import Dataset


def check_aggs(op: str, aggs: tuple[AggregateFn, ...]) -> list[AggregateFn]:
    if not aggs:
        raise BridgeError(f"{op}: no aggregation given", "pass one or more, e.g. aggregate(Count(), Mean('x'))")
    bad = [a for a in aggs if not isinstance(a, AggregateFn)]
    if bad:
        msg = f"{op}: expected AggregateFn objects (Count(), Sum('x'), ...); got {bad!r}"
        raise BridgeError(msg, "import them from bridge: from bridge import Count, Sum, Mean")
    names = [a.name for a in aggs]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        msg = f"{op}: several aggregations produce the column name(s) {dupes}"
        raise BridgeError(msg, "give each one a distinct alias_name=")
    return list(aggs)


def _columns(on: str | list[str]) -> list[str]:
    return [on] if isinstance(on, str) else list(on)


class GroupedData:
    """Rows grouped by key columns; aggregate them or map each group.

    Results are sorted by the keys (nulls last); rows whose key is null form a group.

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
        """One row per group: the keys, then one column per aggregation."""
        from bridge.ops.groupby import aggregate_fn

        aggs_list = check_aggs("groupby().aggregate", aggs)
        label = f"Aggregate({self._keys}: {', '.join(a.name for a in aggs_list)})"
        return self._ds._with(AllToAll([self._ds._plan], aggregate_fn(self._keys, aggs_list, label), label))

    def count(self) -> Dataset:
        """Rows per group, in column ``count()``."""
        return self.aggregate(Count())

    def sum(self, on: str | list[str], ignore_nulls: bool = True) -> Dataset:
        """Per-group sum of ``on`` (column ``sum(on)``)."""
        return self.aggregate(*[Sum(c, ignore_nulls) for c in _columns(on)])

    def min(self, on: str | list[str], ignore_nulls: bool = True) -> Dataset:
        """Per-group minimum of ``on`` (column ``min(on)``)."""
        return self.aggregate(*[Min(c, ignore_nulls) for c in _columns(on)])

    def max(self, on: str | list[str], ignore_nulls: bool = True) -> Dataset:
        """Per-group maximum of ``on`` (column ``max(on)``)."""
        return self.aggregate(*[Max(c, ignore_nulls) for c in _columns(on)])

    def mean(self, on: str | list[str], ignore_nulls: bool = True) -> Dataset:
        """Per-group mean of ``on`` (column ``mean(on)``)."""
        return self.aggregate(*[Mean(c, ignore_nulls) for c in _columns(on)])

    def std(self, on: str | list[str], ddof: int = 1, ignore_nulls: bool = True) -> Dataset:
        """Per-group standard deviation of ``on`` (column ``std(on)``)."""
        return self.aggregate(*[Std(c, ddof, ignore_nulls) for c in _columns(on)])

    def map_groups(
        self,
        fn: Callable[..., Any],
        *,
        batch_format: str = "numpy",
        fn_args: tuple[Any, ...] = (),
        fn_kwargs: dict[str, Any] | None = None,
    ) -> Dataset:
        """Apply ``fn(batch) -> batch`` to all rows of each group at once.

        Each group lands whole in one task (groups sorted by key); ``batch_format``
        is ``"numpy"``, ``"pandas"`` or ``"pyarrow"``, as in ``map_batches``.

        Example:
            >>> import bridge
            >>> ds = bridge.from_items([{"k": 1, "x": 1.0}, {"k": 1, "x": 3.0}, {"k": 2, "x": 5.0}])
            >>> ds.groupby("k").map_groups(lambda g: {"k": g["k"][:1], "n": [len(g["x"])]}).take_all()
            [{'k': 1, 'n': 2}, {'k': 2, 'n': 1}]
        """
        from bridge import batch as batch_mod
        from bridge.execution.transform import UserFn
        from bridge.ops.groupby import map_groups_fn

        fmt = batch_mod.normalize_format(batch_format)
        name = getattr(fn, "__name__", type(fn).__name__)
        label = f"MapGroups({name})"
        user = UserFn(fn, fn_args, fn_kwargs or {})
        return self._ds._with(AllToAll([self._ds._plan], map_groups_fn(self._keys, user, fmt, label), label))

    def __repr__(self) -> str:
        return f"GroupedData(keys={self._keys}, dataset={self._ds!r})"
