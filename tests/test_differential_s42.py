"""Findings of a differential hunt against Ray Data 2.60 (same inputs through both; tiny data).

* ``union``'s ``schema()`` was the first input's (``a: null`` for a null column followed by ints,
  ``a: int64`` for ints followed by floats) while ``to_arrow()`` / ``materialize().schema()`` gave
  the promoted type, as Ray Data's ``schema()`` does.
* ``map`` / ``flat_map`` returning ``{}`` for every row of a block, and ``map`` over a Dataset without
  columns (``select_columns([])``), lost those rows (``count()`` 0 for 2 rows).
* ``limit(0)`` of a source that reads its rows (``from_items``) had no schema (``columns()`` was
  ``[]``); Ray Data keeps the columns.
* A row map (``map`` / ``flat_map``) with no output row for a block gave an empty block of its
  INPUT's columns: a later ``select_columns`` / ``rename_columns`` / ``map_batches`` / ``groupby``
  failed on the map's columns, ``sort`` added the input's columns as nulls, and ``schema()`` of an
  empty result named the input's columns.
* ``union`` of inputs whose schemas are known only by running them reported the first input's;
  ``std`` of a single value was ``None`` (NaN in Ray Data, pandas, NumPy); ``filter(expr=)`` of a
  materialized Dataset holding such a no-columns block raised "column not found".
* ``unique`` of a list column was refused; Ray Data gives the lists (fixed in s43, see test_differential_s43_ops).
"""

from __future__ import annotations

import math

import pyarrow as pa

import bridge


def _types(schema: pa.Schema | None) -> list[tuple[str, pa.DataType]] | None:
    return None if schema is None else [(f.name, f.type) for f in schema]


# ------------------------------------------------------------------ union schema


def test_union_schema_is_the_promotion_of_the_inputs_schemas():
    nulls = bridge.from_arrow(pa.table({"a": pa.nulls(1)}))
    ints = bridge.from_arrow(pa.table({"a": pa.array([1], pa.int64())}))
    floats = bridge.from_arrow(pa.table({"a": pa.array([2.5])}))

    ds = nulls.union(ints)
    assert _types(ds.schema()) == [("a", pa.int64())]
    assert ds.schema() == ds.materialize().schema() == ds.to_arrow().schema
    assert ds.take_all() == [{"a": None}, {"a": 1}]

    ds = ints.union(floats)
    assert _types(ds.schema()) == [("a", pa.float64())]
    assert ds.schema() == ds.to_arrow().schema
    assert ds.take_all() == [{"a": 1}, {"a": 2.5}]


def test_union_schema_keeps_the_first_inputs_column_order():
    left = bridge.from_arrow(pa.table({"a": pa.array([1], pa.int32()), "b": ["x"]}))
    right = bridge.from_arrow(pa.table({"b": ["y"], "a": pa.array([2], pa.int64())}))
    ds = left.union(right)
    assert _types(ds.schema()) == [("a", pa.int64()), ("b", pa.string())]
    assert ds.take_all() == [{"a": 1, "b": "x"}, {"a": 2, "b": "y"}]


def test_union_schema_of_inputs_known_only_by_running():
    ds = bridge.from_items([{"a": None}]).union(bridge.from_items([{"a": 1}]))
    assert _types(ds.schema()) == [("a", pa.int64())]  # Ray Data: int64; to_arrow(): int64


# ------------------------------------------------------------------ rows without columns


def test_map_returning_empty_dicts_keeps_every_row():
    assert bridge.range(2).map(lambda r: {}).count() == 2
    assert bridge.range(2).map(lambda r: {}).take_all() == [{}, {}]
    # one block's rows all {}, the other's not: the first block's rows are kept, with nulls
    ds = bridge.range(4, override_num_blocks=2).map(lambda r: {} if r["id"] < 2 else {"a": r["id"]})
    assert ds.count() == 4
    assert ds.to_arrow().to_pydict() == {"a": [None, None, 2, 3]}


def test_flat_map_returning_empty_dicts_keeps_every_row():
    assert bridge.range(2).flat_map(lambda r: [{}, {}]).count() == 4


def test_map_over_a_dataset_without_columns_keeps_every_row():
    ds = bridge.range(5, override_num_blocks=2).select_columns([])
    assert ds.map(lambda r: r).count() == 5
    assert ds.map(lambda r: {"one": 1}).take_all() == [{"one": 1}] * 5
    assert ds.flat_map(lambda r: [r, r]).count() == 10


# ------------------------------------------------------------------ limit(0)


def test_limit_zero_keeps_the_columns():
    items = [{"a": 1, "b": "x"}, {"a": 2, "b": "y"}]
    expected = [("a", pa.int64()), ("b", pa.string())]
    assert _types(bridge.from_items(items).limit(0).schema()) == expected
    assert bridge.from_items(items).limit(0).columns() == ["a", "b"]
    assert _types(bridge.from_items(items).filter(lambda r: True).limit(0).schema()) == expected
    assert _types(bridge.from_items(items).repartition(2).limit(0).schema()) == expected
    assert bridge.from_items(items).limit(0).count() == 0
    assert bridge.from_items(items).limit(0).take_all() == []
    assert list(bridge.from_items(items).limit(0).to_pandas().columns) == ["a", "b"]


def test_limit_zero_after_a_row_map_calls_no_function():
    """limit(0) is pushed below the map: the function never runs (its columns are then unknown)."""
    def boom(row: dict) -> dict:
        raise ValueError("boom")

    ds = bridge.from_items([{"a": 1}, {"a": 2}]).map(boom).limit(0)
    assert ds.count() == 0
    assert ds.take_all() == []
    assert bridge.from_items([{"a": 1}]).map(lambda r: {"z": r["a"]}).limit(1).take_all() == [{"z": 1}]


# ------------------------------------------------------------------ a row map with no output rows


def test_flat_map_emptying_one_block_then_selecting_its_columns():
    ds = bridge.range(4, override_num_blocks=2).flat_map(lambda r: [{"z": r["id"]}] if r["id"] > 1 else [])
    assert ds.select_columns(["z"]).take_all() == [{"z": 2}, {"z": 3}]  # raised: column 'z' not found, block has ['id']


def test_map_after_a_filter_that_empties_one_block_then_sort():
    ds = bridge.range(4, override_num_blocks=2).filter(lambda r: r["id"] > 1).map(lambda r: {"z": r["id"]})
    assert ds.sort("z").take_all() == [{"z": 2}, {"z": 3}]  # gave an invented null column 'id' besides 'z'
    assert ds.rename_columns({"z": "q"}).take_all() == [{"q": 2}, {"q": 3}]
    assert ds.groupby("z").count().take_all() == [{"z": 2, "count()": 1}, {"z": 3, "count()": 1}]
    assert ds.map_batches(lambda b: {"w": b["z"] * 2}).take_all() == [{"w": 4}, {"w": 6}]  # KeyError: 'z'


def test_row_map_over_no_rows_does_not_claim_its_inputs_columns():
    ds = bridge.from_items([{"a": 1, "b": "x"}]).filter(lambda r: False).map(lambda r: {"z": 1})
    assert ds.columns() == []  # was ['a', 'b'], the input's (Ray Data's schema() is None: not known)
    assert ds.count() == 0
    assert ds.union(bridge.from_items([{"z": 5}])).take_all() == [{"z": 5}]


def test_flat_map_emptying_every_block_then_map_batches():
    ds = bridge.range(4, override_num_blocks=2).flat_map(lambda r: [])
    assert ds.map_batches(lambda b: {"q": b["z"]}).take_all() == []  # the function is not called without rows
    assert ds.select_columns(["z"]).count() == 0


# ------------------------------------------------------------------ open findings


def test_std_of_a_single_value_is_nan():
    assert math.isnan(bridge.from_items([{"x": 1.0}]).std("x"))
    rows = bridge.from_items([{"k": 1, "x": 1.0}, {"k": 2, "x": 1.0}, {"k": 2, "x": 3.0}]).groupby("k").std("x")
    first = rows.take_all()[0]
    assert first["k"] == 1 and math.isnan(first["std(x)"])


def test_unique_of_a_list_column():
    ds = bridge.from_items([{"x": [1]}, {"x": [1]}, {"x": [2]}, {"x": None}])
    assert sorted(ds.unique("x"), key=str) == [None, [1], [2]]


def test_filter_expr_after_a_map_that_emptied_a_block():
    ds = bridge.range(6, override_num_blocks=3).flat_map(lambda r: [{"z": r["id"]}] if r["id"] >= 4 else [])
    assert ds.filter(expr="z > 4").take_all() == [{"z": 5}]  # fused into the map's tasks: passes already
    assert ds.materialize().filter(expr="z > 4").take_all() == [{"z": 5}]
