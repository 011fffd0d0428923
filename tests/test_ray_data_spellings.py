"""Ray Data code that runs unchanged: its aggregate objects, its expressions in filter, its split checks.

Each case failed before (``BridgeError: expected AggregateFn objects``, a ``TypeError`` from
inside the filter task) or answered where Ray Data refuses (``train_test_split(0)``), and is
compared here with what Ray Data 2.60 gives on the same data.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

import bridge

rd = pytest.importorskip("ray.data")
from ray.data import aggregate as A  # noqa: E402
from ray.data.expressions import col  # noqa: E402

TABLE = pa.table({"k": [1, 1, 2, 2, 2], "x": [1.0, None, 3.0, 4.0, 0.0], "l": [[1], [1, 2], [3], None, [2]]})


def _ray_aggs() -> list:
    return [A.Count(), A.Count("x", ignore_nulls=True), A.Sum("x"), A.Min("x"), A.Max("x"),
            A.Mean("x", alias_name="m"), A.Std("x", ddof=0), A.AbsMax("x"), A.Quantile("x", q=0.25),
            A.Unique("k"), A.Unique("l", encode_lists=True), A.CountDistinct("x"), A.AsList("x"),
            A.MissingValuePercentage("x"), A.ZeroPercentage("x"), A.ValueCounter("k"),
            A.ApproximateQuantile("x", quantiles=[0.5]), A.ApproximateTopK("k", k=1)]


def _normal(v):
    return sorted(v, key=repr) if isinstance(v, list) else v


def test_aggregate_takes_ray_datas_aggregations_and_gives_ray_datas_answer():
    ours = bridge.from_arrow(TABLE).aggregate(*_ray_aggs())
    theirs = rd.from_arrow(TABLE).aggregate(*_ray_aggs())
    assert ours.keys() == theirs.keys()
    for name in theirs:
        assert _normal(ours[name]) == _normal(theirs[name]), name


def test_groupby_aggregate_takes_ray_datas_aggregations():
    ours = bridge.from_arrow(TABLE).groupby("k").aggregate(A.Sum("x"), A.Count(), A.Mean("x")).take_all()
    theirs = rd.from_arrow(TABLE).groupby("k").aggregate(A.Sum("x"), A.Count(), A.Mean("x")).take_all()
    assert sorted(ours, key=lambda r: r["k"]) == sorted(theirs, key=lambda r: r["k"])


def test_a_ray_aggregation_without_an_equivalent_is_refused_by_name():
    custom = A.Unique("l", encode_lists=A.Unique.ListEncodingMode.HASH)
    with pytest.raises(bridge.BridgeError, match=r"(?s)Ray Data's Unique .* has no equivalent.*Hint: write it"):
        bridge.from_arrow(TABLE).aggregate(custom)


@pytest.mark.parametrize("expr", [
    col("id") > 6,
    (col("id") > 2) & (col("id") % 2 == 0),
    col("id").is_in([1, 3]),
    ~(col("id") < 8) | (col("id") == 0),
], ids=["gt", "and-mod", "is_in", "not-or"])
def test_filter_takes_a_ray_data_expression(expr):
    assert bridge.range(10).filter(expr=expr).take_all() == rd.range(10).filter(expr=expr).take_all()


def test_a_ray_filter_expression_drops_null_rows_and_names_a_missing_column():
    items = [{"x": None}, {"x": 2}, {"x": 0}]
    assert bridge.from_items(items).filter(expr=col("x") > 1).take_all() == [{"x": 2}]
    with pytest.raises(bridge.SchemaMismatchError, match="column 'nope'"):
        bridge.range(3).filter(expr=col("nope") > 1).take_all()


@pytest.mark.parametrize("n", [0, 10, 11, -1])
def test_train_test_split_with_a_count_that_empties_a_side_is_refused(n):
    with pytest.raises(ValueError, match=r"train_test_split\(test_size="):
        bridge.range(10).train_test_split(n)
    with pytest.raises(ValueError):  # Ray Data refuses them too
        rd.range(10).train_test_split(n)


def test_train_test_split_with_a_count_cuts_the_last_rows():
    train, test = bridge.range(10).train_test_split(3)
    assert [r["id"] for r in test.take_all()] == [7, 8, 9] and train.count() == 7


def test_sum_and_mean_without_on_leave_a_categorical_column_out():
    # default_columns took the dictionary column, and Sum refused it: ds.sum() raised on the table.
    t = pa.table({"c": pa.array([3, 1]).dictionary_encode(), "x": [1.0, 2.0], "k": [1, 1]})
    ds = bridge.from_arrow([t])
    assert ds.sum() == {"sum(x)": 3.0, "sum(k)": 2}
    assert ds.mean() == {"mean(x)": 1.5, "mean(k)": 1.0}
    assert ds.min() == {"min(c)": 1, "min(x)": 1.0, "min(k)": 1}  # min / max take it (its values)
    assert ds.groupby("k").mean().take_all() == [{"k": 1, "mean(x)": 1.5}]


def test_train_test_split_of_too_few_rows_says_so():
    with pytest.raises(ValueError, match=r"has 0 row\(s\), too few to split in two"):
        bridge.range(0).train_test_split(0)
