"""read_parquet gives a dictionary of numbers back as the dictionary it was written as.

pyarrow (and Ray Data, which reads through it) returns a Parquet column written from a dictionary of
numbers -- a pandas ``Categorical`` of ints -- as its values; the Arrow schema the writer keeps in the
file says what it was.  These tests fail on the code before (the column came back as ``int64``).
"""

from __future__ import annotations

import datetime
import decimal
import warnings
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import bridge
from bridge.errors import ConversionWarning, SchemaMismatchError


def _dict(values: list[Any], value_type: pa.DataType, index_type: pa.DataType = pa.int32(),
          ordered: bool = False) -> pa.DictionaryArray:
    encoded = pa.array(values, value_type).dictionary_encode()
    return pa.DictionaryArray.from_arrays(encoded.indices.cast(index_type), encoded.dictionary, ordered=ordered)


CASES = {
    "int64": (pa.int64(), [2**53 + 1, 0, None, 2**53 + 1, -(2**62)]),
    "uint8": (pa.uint8(), [255, 0, None, 255, 7]),
    "float64": (pa.float64(), [1.5, float("-inf"), None, 1.5, -0.0]),
    "date32": (pa.date32(), [datetime.date(2024, 1, 1), None, datetime.date(1, 1, 1), datetime.date(2024, 1, 1)]),
    "decimal": (pa.decimal128(20, 4), [decimal.Decimal("1.2345"), None, decimal.Decimal("-99999.0001")]),
    "timestamp_utc": (pa.timestamp("us", "UTC"), [datetime.datetime(2024, 5, 1, tzinfo=datetime.timezone.utc), None]),
}


@pytest.mark.parametrize("index_type", [pa.int8(), pa.int16(), pa.int32(), pa.int64()], ids=str)
@pytest.mark.parametrize("case", sorted(CASES))
def test_dictionary_of_numbers_comes_back_as_written(tmp_path: Any, case: str, index_type: pa.DataType) -> None:
    value_type, values = CASES[case]
    col = _dict(values, value_type, index_type)
    bridge.from_arrow(pa.table({"c": col, "n": list(range(len(values)))})).write_parquet(str(tmp_path))
    assert pq.read_table(str(tmp_path)).schema.field("c").type == value_type  # what pyarrow gives: the values
    ds = bridge.read_parquet(str(tmp_path))
    assert ds.schema().field("c").type == col.type
    out = ds.to_arrow()
    assert out.schema.field("c").type == col.type
    assert out.column("c").to_pylist() == col.to_pylist()


def test_pandas_categorical_of_ints_round_trips(tmp_path: Any) -> None:
    df = pd.DataFrame({"c": pd.Categorical([3, 1, 3, None, 1]), "x": [1.0, 2.0, 3.0, 4.0, 5.0]})
    bridge.from_pandas(df).write_parquet(str(tmp_path))
    back = bridge.read_parquet(str(tmp_path)).to_pandas()
    assert isinstance(back["c"].dtype, pd.CategoricalDtype)
    assert back["c"].astype(object).where(back["c"].notna(), None).tolist() == [3, 1, 3, None, 1]
    assert back["c"].cat.categories.dtype == "int64"


def test_projection_filter_and_row_count(tmp_path: Any) -> None:
    t = pa.table({"c": _dict([5, 6, 5, None, 7] * 4, pa.int64()), "x": list(range(20))})
    bridge.from_arrow(t).write_parquet(str(tmp_path))
    only = bridge.read_parquet(str(tmp_path), columns=["c"])
    assert only.schema().field("c").type == t.schema.field("c").type
    assert only.to_arrow().column("c").to_pylist() == t.column("c").to_pylist()
    picked = bridge.read_parquet(str(tmp_path), filter=pc.field("c") == 5).to_arrow()
    assert picked.schema.field("c").type == t.schema.field("c").type
    assert picked.column("x").to_pylist() == [0, 2, 5, 7, 10, 12, 15, 17]
    assert bridge.read_parquet(str(tmp_path)).count() == 20


def test_many_files_restore_only_where_every_file_was_written_so(tmp_path: Any) -> None:
    both, mixed = tmp_path / "both", tmp_path / "mixed"
    both.mkdir()
    mixed.mkdir()
    a = pa.table({"c": _dict([1, 2, 1], pa.int64(), pa.int8())})
    b = pa.table({"c": _dict([300, 1, None], pa.int64(), pa.int8())})
    pq.write_table(a, both / "a.parquet")
    pq.write_table(b, both / "b.parquet")
    out = bridge.read_parquet(str(both)).to_arrow()
    assert out.schema.field("c").type == pa.dictionary(pa.int8(), pa.int64())
    assert sorted(out.column("c").to_pylist(), key=str) == sorted([1, 2, 1, 300, 1, None], key=str)
    # One file holds plain int64 (500 distinct values, more than int8 indices hold): the values, as written there.
    pq.write_table(a, mixed / "a.parquet")
    pq.write_table(pa.table({"c": pa.array(range(500), pa.int64())}), mixed / "b.parquet")
    out = bridge.read_parquet(str(mixed)).to_arrow()
    assert out.schema.field("c").type == pa.int64()
    assert sorted(out.column("c").to_pylist()) == sorted([1, 2, 1, *range(500)])


def test_ordered_dictionary_of_numbers_is_its_values_with_a_warning(tmp_path: Any) -> None:
    col = _dict([30, 10, None, 30], pa.int64(), pa.int8(), ordered=True)
    bridge.from_arrow(pa.table({"rank": col})).write_parquet(str(tmp_path))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ds = bridge.read_parquet(str(tmp_path))
    messages = [str(w.message) for w in caught if issubclass(w.category, ConversionWarning)]
    assert len(messages) == 1 and "'rank'" in messages[0] and "order" in messages[0], messages
    out = ds.to_arrow()
    assert out.schema.field("rank").type == pa.int64()
    assert out.column("rank").to_pylist() == [30, 10, None, 30]


def test_schema_argument_may_name_a_dictionary_of_numbers(tmp_path: Any) -> None:
    pq.write_table(pa.table({"c": pa.array([4, 4, None, 9], pa.int64())}), tmp_path / "plain.parquet")
    want = pa.dictionary(pa.int16(), pa.int64())
    out = bridge.read_parquet(str(tmp_path), schema=pa.schema([("c", want)])).to_arrow()
    assert out.schema.field("c").type == want
    assert out.column("c").to_pylist() == [4, 4, None, 9]


def test_indices_too_narrow_for_the_values_raise_naming_the_column(tmp_path: Any) -> None:
    pq.write_table(pa.table({"c": pa.array(range(300), pa.int64())}), tmp_path / "wide.parquet")
    ds = bridge.read_parquet(str(tmp_path), schema=pa.schema([("c", pa.dictionary(pa.int8(), pa.int64()))]))
    with pytest.raises(SchemaMismatchError, match=r"(?s)'c'.*wide\.parquet.*Hint: pass schema= with 'c' as int64"):
        ds.to_arrow()


def test_dictionary_of_strings_unchanged(tmp_path: Any) -> None:
    col = _dict(["b", "a", None, "b"], pa.string(), pa.int8())
    bridge.from_arrow(pa.table({"s": col})).write_parquet(str(tmp_path))
    out = bridge.read_parquet(str(tmp_path)).to_arrow()
    assert out.schema.field("s").type == col.type
    assert out.column("s").to_pylist() == col.to_pylist()


# ----------------------------------------------------------------- after review


def test_a_filter_on_a_dictionary_column_not_read(tmp_path: Any) -> None:
    df = pd.DataFrame({"c": pd.Categorical([5, 6, 5, None, 7] * 4), "x": range(20)})
    df.to_parquet(tmp_path / "a.parquet")
    want = [1, 6, 11, 16]
    assert bridge.read_parquet(str(tmp_path), columns=["x"], filter=[("c", "=", 6)]).to_arrow().column("x").to_pylist() == want
    picked = bridge.read_parquet(str(tmp_path), filter=pc.field("c") == 6).select_columns(["x"]).to_arrow()
    assert picked.column_names == ["x"] and picked.column("x").to_pylist() == want


def test_a_filter_on_a_dictionary_column_skips_row_groups(tmp_path: Any) -> None:
    from bridge.io.parquet_datasource import ParquetDatasource

    pq.write_table(pa.table({"c": pa.array(range(40), pa.int64()).dictionary_encode(), "x": range(40)}),
                   tmp_path / "a.parquet", row_group_size=10)
    assert len(ParquetDatasource(str(tmp_path)).units) == 4
    assert len(ParquetDatasource(str(tmp_path), filter=pc.field("c") >= 35).units) == 1
    assert len(ParquetDatasource(str(tmp_path), filter=pc.field("c") == 3).units) == 1
    out = bridge.read_parquet(str(tmp_path), filter=pc.field("c") >= 35).to_arrow()
    assert out.schema.field("c").type == pa.dictionary(pa.int32(), pa.int64())
    assert out.column("c").to_pylist() == [35, 36, 37, 38, 39]


def test_the_dictionary_is_sorted_as_pandas_sorts_categories(tmp_path: Any) -> None:
    pd.DataFrame({"c": pd.Categorical([3, 1, 3, 2])}).to_parquet(tmp_path / "a.parquet")
    back = bridge.read_parquet(str(tmp_path)).to_pandas()
    assert back["c"].cat.categories.tolist() == [1, 2, 3]
    assert back.sort_values("c")["c"].tolist() == [1, 2, 3, 3]
    chunk = bridge.read_parquet(str(tmp_path)).to_arrow().column("c").chunk(0)
    assert chunk.dictionary.to_pylist() == [1, 2, 3]


def test_signed_zeros_and_nans_stay_apart(tmp_path: Any) -> None:
    values = [0.0, -0.0, float("nan"), None, 1.5, -0.0, float("-inf")]
    bridge.from_arrow(pa.table({"f": pa.array(values).dictionary_encode()})).write_parquet(str(tmp_path))
    got = bridge.read_parquet(str(tmp_path)).to_arrow().column("f")
    assert pa.types.is_dictionary(got.type)
    decoded = pc.cast(got, pa.float64()).to_pylist()
    assert [str(v) for v in decoded] == [str(v) for v in values]  # (str: -0.0 and nan compare as written)


@pytest.mark.parametrize(("value_type", "values"), [
    (pa.timestamp("s"), [datetime.datetime(2024, 1, 1, 0, 0, 1), None, datetime.datetime(1999, 12, 31)]),
    (pa.date64(), [datetime.date(2024, 1, 1), None, datetime.date(1, 1, 1)]),
    (pa.duration("ms"), [datetime.timedelta(milliseconds=5), None, datetime.timedelta(days=-3)]),
], ids=["timestamp_s", "date64", "duration_ms"])
def test_dictionaries_of_what_parquet_stores_as_another_type(tmp_path: Any, value_type: pa.DataType,
                                                             values: list[Any]) -> None:
    col = _dict(values, value_type, pa.int16())
    bridge.from_arrow(pa.table({"c": col})).write_parquet(str(tmp_path))
    out = bridge.read_parquet(str(tmp_path)).to_arrow()
    assert out.schema.field("c").type == col.type
    assert out.column("c").to_pylist() == col.to_pylist()


def test_the_ordered_warning_only_for_a_column_read(tmp_path: Any) -> None:
    t = pa.table({"rank": _dict([30, 10, 30], pa.int64(), pa.int8(), ordered=True), "x": [1, 2, 3]})
    bridge.from_arrow(t).write_parquet(str(tmp_path))
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConversionWarning)
        assert bridge.read_parquet(str(tmp_path), columns=["x"]).to_arrow().column("x").to_pylist() == [1, 2, 3]
