"""Findings of a differential hunt against Ray Data 2.60 on Dataset operations (same tiny inputs through both).

* ``unique`` / ``Unique`` of a list column was refused (``UnsupportedTypeError``); Ray Data gives the
  distinct lists.  Lists, structs and maps are now told apart by their Python values (every NaN one
  value, as Ray Data), the rest still by Arrow's ``distinct``; per group too, and across blocks.
* ``Unique`` of a tensor column raised Arrow's raw ``ArrowNotImplementedError`` from a reduce task; it
  is now refused up front with an ``UnsupportedTypeError`` (Ray Data raises Arrow's error too).
* ``Quantile`` of a column holding NaN gave NaN; Ray Data (Arrow's ``quantile``, as pandas) skips NaN:
  ``[1.0, nan, 3.0]`` -> 2.0, and a group of only NaNs -> null.
* ``train_test_split(..., stratify="col")`` was a ``TypeError`` (no such argument); Ray Data takes the
  last ``int(n * test_size)`` rows of every group of ``col`` as the test set.
* ``CountDistinct``, ``AsList`` and ``Unique(encode_lists=True)`` (Ray Data's aggregations) were missing.

Kept ours where Ray Data 2.60 is wrong or raises (no test change needed): Sum / Mean / Std of a float
column holding NaN are NaN (Ray Data: ``None``, and a ``null``-typed result column); ``repartition(0)``
is refused (Ray Data gives an empty Dataset, losing every row); ``rename_columns({"a": "b"})`` onto an
existing ``b`` is refused (Ray Data drops a column); ``drop_columns`` of every column keeps the rows
(Ray Data: ``count()`` 0); numpy batches of ``map_groups`` keep nulls as None (Ray Data: NaN).
"""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pytest

import bridge
from bridge.errors import UnsupportedTypeError


def _types(schema: pa.Schema | None) -> list[tuple[str, pa.DataType]] | None:
    return None if schema is None else [(f.name, f.type) for f in schema]


# ------------------------------------------------------------------ Unique of lists, structs, maps


def test_unique_of_a_list_column_gives_the_distinct_lists_in_first_seen_order():
    ds = bridge.from_items([{"x": [2]}, {"x": [1]}, {"x": [2]}, {"x": None}, {"x": []}, {"x": []}])
    assert ds.unique("x") == [[2], [1], None, []]
    assert ds.unique("x", ignore_nulls=True) == [[2], [1], []]
    out = ds.aggregate(bridge.Unique("x"), bridge.Count("x"))
    assert out == {"unique(x)": [[2], [1], None, []], "count(x)": 6}


def test_unique_of_lists_with_nan_is_one_value_and_keeps_the_type():
    ds = bridge.from_items([{"x": [1.0, float("nan")]}, {"x": [1.0, float("nan")]}])
    (only,) = ds.unique("x")
    assert only[0] == 1.0 and math.isnan(only[1])
    grouped = bridge.from_items([{"k": 1, "x": [1.0]}]).groupby("k").aggregate(bridge.Unique("x"))
    assert _types(grouped.schema()) == [("k", pa.int64()), ("unique(x)", pa.list_(pa.list_(pa.float64())))]


def test_unique_of_nested_lists_structs_and_maps():
    assert bridge.from_items([{"x": [[1], [2]]}, {"x": [[1], [2]]}, {"x": []}]).unique("x") == [[[1], [2]], []]
    assert bridge.from_items([{"x": {"a": 1}}, {"x": {"a": 1}}, {"x": {"a": 2}}]).unique("x") == [{"a": 1}, {"a": 2}]
    maps = pa.array([[("a", 1)], [("a", 1)], [("b", 2)]], pa.map_(pa.string(), pa.int64()))
    assert bridge.from_arrow(pa.table({"x": maps})).unique("x") == [[("a", 1)], [("b", 2)]]


def test_unique_of_a_list_column_per_group_across_blocks():
    rows = [{"k": 1, "x": [1]}, {"k": 2, "x": [2]}, {"k": 1, "x": [1]}, {"k": 2, "x": None}, {"k": 1, "x": [3]}]
    ds = bridge.from_items(rows, override_num_blocks=3)
    out = ds.groupby("k").aggregate(bridge.Unique("x"), bridge.Unique("k")).take_all()
    assert [r["k"] for r in out] == [1, 2]
    assert sorted(out[0]["unique(x)"]) == [[1], [3]] and out[0]["unique(k)"] == [1]
    assert sorted(out[1]["unique(x)"], key=str) == [None, [2]] and out[1]["unique(k)"] == [2]


def test_unique_of_a_null_block_then_a_list_block():
    ds = bridge.from_items([{"x": None}]).union(bridge.from_items([{"x": [3]}, {"x": [3]}]))
    assert sorted(ds.unique("x"), key=str) == [None, [3]]


def test_unique_of_a_tensor_column_is_refused_up_front():
    ds = bridge.from_numpy(np.ones((3, 2, 2)))
    with pytest.raises(UnsupportedTypeError, match=r"(?s)unique\(data\).*Hint: ") as err:
        ds.unique("data")
    assert "not tensors" in str(err.value)


def test_unique_of_scalars_still_takes_arrows_path():
    ds = bridge.from_items([{"x": 2.0}, {"x": -0.0}, {"x": float("nan")}, {"x": float("nan")}, {"x": 2.0}])
    out = ds.unique("x")
    assert len(out) == 3 and sorted(v for v in out if not math.isnan(v)) == [-0.0, 2.0]


# ------------------------------------------------------------------ Quantile and NaN


def test_quantile_skips_nan_as_ray_data_does():
    ds = bridge.from_items([{"x": 1.0}, {"x": float("nan")}, {"x": 3.0}])
    assert ds.aggregate(bridge.Quantile("x")) == {"quantile(x)": 2.0}
    assert ds.aggregate(bridge.Quantile("x", ignore_nulls=False)) == {"quantile(x)": 2.0}
    only_nan = bridge.from_items([{"x": float("nan")}, {"x": float("nan")}])
    assert only_nan.aggregate(bridge.Quantile("x")) == {"quantile(x)": None}
    # a null still makes ignore_nulls=False null
    with_null = bridge.from_items([{"x": 1.0}, {"x": float("nan")}, {"x": None}])
    assert with_null.aggregate(bridge.Quantile("x", ignore_nulls=False)) == {"quantile(x)": None}


def test_grouped_quantile_skips_nan():
    rows = [{"k": 1, "x": 1.0}, {"k": 1, "x": float("nan")}, {"k": 2, "x": float("nan")}, {"k": 1, "x": 4.0}]
    out = bridge.from_items(rows).groupby("k").aggregate(bridge.Quantile("x"))
    assert out.take_all() == [{"k": 1, "quantile(x)": 2.5}, {"k": 2, "quantile(x)": None}]
    assert _types(out.schema()) == [("k", pa.int64()), ("quantile(x)", pa.float64())]


# ------------------------------------------------------------------ train_test_split(stratify=)


def test_train_test_split_stratified_takes_each_groups_last_rows():
    ds = bridge.from_items([{"id": i, "k": i % 3} for i in range(10)])
    train, test = ds.train_test_split(0.5, stratify="k")
    assert sorted(r["id"] for r in train.take_all()) == [0, 1, 2, 3, 4, 5]
    assert sorted(r["id"] for r in test.take_all()) == [6, 7, 8, 9]
    assert _types(train.schema()) == _types(test.schema()) == [("id", pa.int64()), ("k", pa.int64())]
    assert isinstance(train, bridge.MaterializedDataset) and isinstance(test, bridge.MaterializedDataset)


def test_train_test_split_stratified_row_count_and_null_class():
    ds = bridge.from_items([{"id": i, "k": i % 3} for i in range(10)])
    train, test = ds.train_test_split(4, stratify="k")  # 4 / 10 of each class, rounded down
    assert sorted(r["id"] for r in test.take_all()) == [7, 8, 9]
    assert train.count() == 7
    nulls = bridge.from_items([{"id": i, "k": None if i % 3 == 0 else i % 2} for i in range(10)])
    train, test = nulls.train_test_split(0.3, stratify="k")
    assert test.take_all() == [{"id": 9, "k": None}]
    assert sorted(r["id"] for r in train.take_all()) == [0, 1, 2, 3, 4, 5, 6, 7, 8]


def test_train_test_split_stratified_refuses_shuffle():
    ds = bridge.from_items([{"id": i, "k": i % 3} for i in range(10)])
    with pytest.raises(bridge.BridgeValueError, match="(?s)shuffle=True and stratify.*Hint: "):
        ds.train_test_split(0.5, stratify="k", shuffle=True)
    with pytest.raises(bridge.BridgeError, match="Hint: "):
        ds.train_test_split(1.0, stratify="k")


# ------------------------------------------------------------------ CountDistinct, AsList, encode_lists


def test_count_distinct():
    rows = [{"k": 1, "s": "a"}, {"k": 1, "s": None}, {"k": 1, "s": "a"}, {"k": 2, "s": "c"},
            {"k": 2, "s": None}, {"k": 2, "s": None}]
    ds = bridge.from_items(rows, override_num_blocks=2)
    assert ds.aggregate(bridge.CountDistinct("s")) == {"count_distinct(s)": 2}
    assert ds.aggregate(bridge.CountDistinct("s", ignore_nulls=False)) == {"count_distinct(s)": 3}
    out = ds.groupby("k").aggregate(bridge.CountDistinct("s"))
    assert out.take_all() == [{"k": 1, "count_distinct(s)": 1}, {"k": 2, "count_distinct(s)": 1}]
    assert _types(out.schema()) == [("k", pa.int64()), ("count_distinct(s)", pa.int64())]
    nan = bridge.from_items([{"x": float("nan")}, {"x": float("nan")}, {"x": 1.0}])
    assert nan.aggregate(bridge.CountDistinct("x")) == {"count_distinct(x)": 2}
    lists = bridge.from_items([{"l": [1]}, {"l": [1]}, {"l": [2]}])
    assert lists.aggregate(bridge.CountDistinct("l")) == {"count_distinct(l)": 2}


def test_as_list():
    ds = bridge.from_items([{"x": 1}, {"x": None}, {"x": 3}])
    assert ds.aggregate(bridge.AsList("x")) == {"list(x)": [1, None, 3]}
    assert ds.aggregate(bridge.AsList("x", ignore_nulls=True)) == {"list(x)": [1, 3]}
    rows = [{"k": 1, "l": [1, 2]}, {"k": 2, "l": None}, {"k": 1, "l": [3]}]
    out = bridge.from_items(rows, override_num_blocks=3).groupby("k").aggregate(bridge.AsList("l"))
    assert out.take_all() == [{"k": 1, "list(l)": [[1, 2], [3]]}, {"k": 2, "list(l)": [None]}]
    assert _types(out.schema()) == [("k", pa.int64()), ("list(l)", pa.list_(pa.list_(pa.int64())))]


def test_unique_encode_lists_gives_the_distinct_elements():
    ds = bridge.from_items([{"l": [1, 2]}, {"l": None}, {"l": [2, 3]}, {"l": [1, None]}])
    assert sorted(ds.aggregate(bridge.Unique("l", encode_lists=True))["unique(l)"], key=str) == [1, 2, 3, None]
    assert sorted(ds.aggregate(bridge.Unique("l", encode_lists=True, ignore_nulls=True))["unique(l)"]) == [1, 2, 3]
    with pytest.raises(bridge.BridgeValueError, match="(?s)encode_lists.*Hint: "):
        bridge.Unique("l", encode_lists="HASH")  # type: ignore[arg-type]


def test_unique_of_a_union_column_is_refused_not_merged():
    """A union's int 1 and bool True are equal as Python values: Unique kept one of them (found in review)."""
    union = pa.UnionArray.from_sparse(pa.array([0, 1], pa.int8()), [pa.array([1, 0]), pa.array([False, True])])
    with pytest.raises(UnsupportedTypeError):
        bridge.from_arrow(pa.table({"u": union})).unique("u")
