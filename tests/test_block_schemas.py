"""One Dataset, one type per column: parts that bring the same columns with different types.

Before, ``from_arrow([int32 table, int64 table])`` kept both types: ``schema()`` said
int32 (the first block's) while the second block held 2**40, batches came out int32 or
int64 by the block they were cut from, and Dask's meta disagreed with its partitions;
Dask partitions of Python decimals gave decimal(3, 2) in one block and decimal(21, 20)
in the next.  Now the constructors cast the odd blocks (safely) to the promotion of
them all, ``schema()`` of a materialized Dataset is that promotion (as Ray Data's is),
and types no one type holds are refused with the column named.  ``materialize()`` of a
function's output holds each column in one type where the block's type widens exactly.
"""

from __future__ import annotations

import decimal

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import bridge
from bridge.errors import SchemaMismatchError

D = decimal.Decimal


def _int32_then_int64() -> list[pa.Table]:
    return [pa.table({"x": pa.array([1, 2], pa.int32())}), pa.table({"x": pa.array([2**40], pa.int64())})]


@pytest.mark.parametrize("override", [None, 1])
def test_int32_and_int64_parts_become_one_int64_column(override):
    ds = bridge.from_arrow(_int32_then_int64(), override_num_blocks=override)
    assert ds.schema().field("x").type == pa.int64()
    assert [b["x"].dtype for b in ds.iter_batches(batch_size=1)] == [np.dtype("int64")] * 3
    assert [r["x"] for r in ds.take_all()] == [1, 2, 2**40]
    parts = ds.to_dask()
    assert parts.dtypes["x"] == np.dtype("int64")
    assert {p.compute().dtypes["x"] for p in parts.partitions} == {np.dtype("int64")}


def test_decimal_scales_per_part_promote_to_one_decimal_holding_every_value():
    parts = [pa.table({"d": pa.array([D("1.10"), None], pa.decimal128(3, 2))}),
             pa.table({"d": pa.array([D("-3.333"), D("1e-20")], pa.decimal128(21, 20))})]
    ds = bridge.from_arrow(parts)
    assert ds.schema().field("d").type == pa.decimal128(21, 20)
    assert {ray_type for ray_type in (b.schema.field("d").type for b in
                                      ds.iter_batches(batch_size=2, batch_format="pyarrow"))} == {
        pa.decimal128(21, 20)}
    assert [r["d"] for r in ds.take_all()] == [D("1.10"), None, D("-3.333"), D("1e-20")]


def test_dask_partitions_of_python_decimals_share_one_type():
    dd = pytest.importorskip("dask.dataframe")
    pdf = pd.DataFrame({"d": [D("1.10"), None, D("-3.333"), D("1e-20")], "k": [1, 2, 3, 4]})
    ds = bridge.from_dask(dd.from_pandas(pdf, npartitions=2))
    types = {b.schema.field("d").type for b in ds.iter_batches(batch_size=2, batch_format="pyarrow")}
    assert types == {ds.schema().field("d").type}
    assert ds.to_pandas()["d"].tolist() == pdf["d"].tolist()


def test_pandas_frames_of_two_int_widths_come_back_as_one_dtype():
    frames = [pd.DataFrame({"x": np.array([1], np.int32)}), pd.DataFrame({"x": np.array([2**40], np.int64)})]
    out = bridge.from_pandas(frames).to_pandas()
    assert out["x"].dtype == np.dtype("int64")
    assert out["x"].tolist() == [1, 2**40]


def test_an_empty_part_of_another_type_takes_the_type_of_the_parts_with_rows():
    ds = bridge.from_arrow([pa.table({"x": pa.array([], pa.string())}), pa.table({"x": [1, 2]})])
    assert ds.schema().field("x").type == pa.int64()
    assert [r["x"] for r in ds.take_all()] == [1, 2]


@pytest.mark.parametrize("override", [None, 1])
def test_types_no_one_type_holds_are_refused_naming_the_column(override):
    parts = [pa.table({"x": [1, 2]}), pa.table({"x": ["a"]})]
    with pytest.raises(SchemaMismatchError, match="'x' is int64 in one block and string"):
        bridge.from_arrow(parts, override_num_blocks=override)
    rounding = [pa.table({"x": pa.array([D("0.1")], pa.decimal128(2, 1))}), pa.table({"x": [0.5]})]
    with pytest.raises(SchemaMismatchError, match="round the decimals"):
        bridge.from_arrow(rounding, override_num_blocks=override)


@pytest.mark.parametrize("override", [None, 1])
def test_a_value_the_promoted_type_cannot_hold_is_refused_not_rounded(override):
    # int64 + float64 promote to float64; 2**60 + 1 is not a float64.
    parts = [pa.table({"x": pa.array([2**60 + 1])}), pa.table({"x": [0.5]})]
    with pytest.raises(SchemaMismatchError, match="cannot hold"):
        bridge.from_arrow(parts, override_num_blocks=override)


def test_parts_with_different_columns_stay_as_they_are_and_schema_names_all_columns():
    ds = bridge.from_arrow([pa.table({"x": [1]}), pa.table({"y": ["a"]})])
    assert ds.schema().names == ["x", "y"]
    assert ds.take_all() == [{"x": 1}, {"y": "a"}]


@pytest.mark.parametrize("order", [(0, 1, 2), (2, 0, 1), (1, 2, 0)])
def test_a_decimal_with_a_float_is_refused_whichever_part_comes_first(order):
    # int64 + float64 and int64 + decimal each promote; all three would promote to float64, rounding
    # the decimal: each pair of a column's types is checked, not each against the first.
    parts = [pa.table({"a": [1]}), pa.table({"a": [0.5]}),
             pa.table({"a": pa.array([D("0.12345678901234567890")], pa.decimal128(38, 20))})]
    with pytest.raises(SchemaMismatchError, match="round the decimals"):
        bridge.from_arrow([parts[i] for i in order])


def test_a_clash_in_a_column_the_first_part_lacks_is_named():
    parts = [pa.table({"a": [1]}), pa.table({"b": [1]}), pa.table({"b": ["x"]})]
    with pytest.raises(SchemaMismatchError, match="'b' is int64 in one block and string"):
        bridge.from_arrow(parts)


def test_repr_of_blocks_no_one_type_holds_does_not_raise_and_schema_names_the_column():
    ds = bridge.range(4, override_num_blocks=2).map_batches(
        lambda b: {"x": b["id"] if b["id"][0] == 0 else b["id"].astype(str)}).materialize()
    assert "no one type holds" in repr(ds)
    with pytest.raises(SchemaMismatchError, match="'x' is int64 in one block and string"):
        ds.schema()


# ---------------------------------------------------------------- materialize(): a function's per-block types
def _per_block(batch: dict) -> dict:
    """int32 / a column of None / int64 in the first block; int64 / strings / float64 in the second."""
    first = batch["id"][0] == 0
    ids = batch["id"]
    return {"i": ids.astype(np.int32 if first else np.int64),
            "s": np.array([None] * len(ids), dtype=object) if first else ids.astype(str),
            "x": ids * 2**40 if first else ids.astype(np.float64) / 2}


def test_materialize_holds_exact_widenings_in_one_type():
    ds = bridge.range(4, override_num_blocks=2).map_batches(_per_block).materialize()
    blocks = list(ds.iter_batches(batch_size=None, batch_format="pyarrow"))
    assert [b.schema.field("i").type for b in blocks] == [pa.int64(), pa.int64()]
    assert [b.schema.field("s").type for b in blocks] == [pa.string(), pa.string()]
    # int64 -> float64 is no exact widening (2**41 * k beyond 2**53 would round): left as it came
    assert [b.schema.field("x").type for b in blocks] == [pa.int64(), pa.float64()]
    assert ds.take_all() == [{"i": 0, "s": None, "x": 0}, {"i": 1, "s": None, "x": 2**40},
                             {"i": 2, "s": "2", "x": 1.0}, {"i": 3, "s": "3", "x": 1.5}]
    assert ds.schema().field("i").type == pa.int64()


def test_materialize_unifies_the_other_columns_beside_one_no_type_holds():
    def f(batch: dict) -> dict:
        first = batch["id"][0] == 0
        return {"k": batch["id"] if first else batch["id"].astype(str),
                "v": batch["id"].astype(np.float32 if first else np.float64)}

    ds = bridge.range(4, override_num_blocks=2).map_batches(f).materialize()
    blocks = list(ds.iter_batches(batch_size=None, batch_format="pyarrow"))
    assert [b.schema.field("v").type for b in blocks] == [pa.float64(), pa.float64()]
    assert [b.schema.field("k").type for b in blocks] == [pa.int64(), pa.string()]
    assert [r["k"] for r in ds.take_all()] == [0, 1, "2", "3"]


def test_materialize_keeps_field_metadata():
    def f(table: pa.Table) -> pa.Table:
        first = table["id"][0].as_py() == 0
        col = pa.array(table["id"].to_pylist(), pa.int16() if first else pa.int32())
        return pa.table({"n": col}).cast(pa.schema([pa.field("n", col.type, metadata={"unit": "m"})]))

    ds = bridge.range(4, override_num_blocks=2).map_batches(f, batch_format="pyarrow").materialize()
    blocks = list(ds.iter_batches(batch_size=None, batch_format="pyarrow"))
    assert [b.schema.field("n").type for b in blocks] == [pa.int32(), pa.int32()]
    assert [b.schema.field("n").metadata for b in blocks] == [{b"unit": b"m"}] * 2
