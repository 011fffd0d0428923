"""Fidelity (issue items 2 and 8): schemas unified across Parquet files, clear errors, Ray Data write modes."""

from __future__ import annotations

import datetime
import os

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pds
import pyarrow.fs as pafs
import pyarrow.json as pajson
import pyarrow.parquet as pq
import pytest

import bridge
from bridge.errors import BridgeError, SchemaMismatchError, UnsupportedTypeError
from bridge.io.parquet_schema import SchemaConflictError, unify_file_schemas
from bridge.io.paths import FileReadError, FileWriteError
from tests.io_helpers import CountingHandler

# ---------------------------------------------------------------- read_parquet: one schema for every file


def test_column_added_by_a_later_file_is_kept_and_int32_widens(tmp_path):
    pq.write_table(pa.table({"a": pa.array([1, 2], pa.int32())}), tmp_path / "f0.parquet")
    pq.write_table(pa.table({"a": pa.array([2**40], pa.int64()), "b": ["x"]}), tmp_path / "f1.parquet")
    ds = bridge.read_parquet(str(tmp_path))
    assert ds.schema() == pa.schema([("a", pa.int64()), ("b", pa.string())])
    assert ds.take_all() == [{"a": 1, "b": None}, {"a": 2, "b": None}, {"a": 2**40, "b": "x"}]
    assert ds.count() == 3


def test_string_column_in_later_file_is_a_conflict_not_an_int(tmp_path):
    pq.write_table(pa.table({"code": pa.array([1, 2], pa.int64())}), tmp_path / "f0.parquet")
    pq.write_table(pa.table({"code": ["007"]}), tmp_path / "f1.parquet")
    with pytest.raises(SchemaConflictError) as info:
        bridge.read_parquet(str(tmp_path))
    text = str(info.value)
    assert "'code'" in text and "int64" in text and "string" in text
    assert "f0.parquet" in text and "f1.parquet" in text and "Hint: pass schema=" in text
    assert isinstance(info.value, ValueError) and isinstance(info.value, SchemaMismatchError)
    # The way out the hint gives: an explicit schema reads both files as strings, nothing lost.
    ds = bridge.read_parquet(str(tmp_path), schema=pa.schema([("code", pa.string())]))
    assert sorted(r["code"] for r in ds.take_all()) == ["007", "1", "2"]


def test_naive_and_zoned_timestamps_conflict(tmp_path):
    t = datetime.datetime(2024, 1, 1, 12)
    pq.write_table(pa.table({"t": pa.array([t], pa.timestamp("us", tz="Europe/Paris"))}), tmp_path / "f0.parquet")
    pq.write_table(pa.table({"t": pa.array([t], pa.timestamp("us"))}), tmp_path / "f1.parquet")
    with pytest.raises(SchemaConflictError, match=r"'t' is timestamp\[us, tz=Europe/Paris\].*timestamp\[us\]"):
        bridge.read_parquet(str(tmp_path))


def test_timestamp_units_promote_and_values_survive(tmp_path):
    t = datetime.datetime(2024, 1, 1, 12, 0, 0, 123000)
    pq.write_table(pa.table({"t": pa.array([t], pa.timestamp("ms"))}), tmp_path / "f0.parquet")
    pq.write_table(pa.table({"t": pa.array([t], pa.timestamp("us"))}), tmp_path / "f1.parquet")
    ds = bridge.read_parquet(str(tmp_path))
    assert ds.schema().field("t").type == pa.timestamp("us")
    assert [r["t"] for r in ds.take_all()] == [t, t]


@pytest.mark.parametrize(("a", "b", "ok"), [
    (pa.int32(), pa.int64(), pa.int64()),
    (pa.uint32(), pa.int64(), pa.int64()),
    (pa.float32(), pa.float64(), pa.float64()),
    (pa.int32(), pa.float64(), pa.float64()),
    (pa.string(), pa.large_string(), pa.large_string()),
    (pa.decimal128(10, 2), pa.decimal128(12, 3), pa.decimal128(12, 3)),
    (pa.list_(pa.int32()), pa.list_(pa.int64()), pa.list_(pa.int64())),
    (pa.int64(), pa.float64(), None),
    (pa.int64(), pa.uint64(), None),
    (pa.string(), pa.binary(), None),
    (pa.timestamp("us", tz="UTC"), pa.timestamp("us", tz="Asia/Tokyo"), None),
    (pa.bool_(), pa.int64(), None),
])
def test_only_lossless_promotions(a, b, ok):
    schemas = [pa.schema([("x", a)]), pa.schema([("x", b)])]
    if ok is None:
        with pytest.raises(SchemaConflictError, match="'x'"):
            unify_file_schemas(["p0", "p1"], schemas)
    else:
        assert unify_file_schemas(["p0", "p1"], schemas).field("x").type == ok


def test_unification_reads_each_footer_once(tmp_path):
    for i in range(6):
        cols = {"id": pa.array([i], pa.int32() if i % 2 else pa.int64())}
        if i == 5:
            cols["extra"] = pa.array([1.5])
        pq.write_table(pa.table(cols), tmp_path / f"f{i}.parquet")
    handler = CountingHandler()
    ds = bridge.read_parquet(str(tmp_path), filesystem=pafs.PyFileSystem(handler))
    # Discovery opens the first file; the schema pass opens each file once; planning reuses the footers.
    assert len(handler.files_opened) <= 6 + 1
    assert ds.schema() == pa.schema([("id", pa.int64()), ("extra", pa.float64())])
    assert sorted(r["id"] for r in ds.take_all()) == list(range(6))


def test_hive_partition_column_kept_with_unified_schema(tmp_path):
    for year, typ in ((2023, pa.int32()), (2024, pa.int64())):
        d = tmp_path / f"year={year}"
        d.mkdir()
        pq.write_table(pa.table({"v": pa.array([year], typ)}), d / "p.parquet")
    ds = bridge.read_parquet(str(tmp_path), filter=pc.field("year") == 2024)
    assert ds.take_all() == [{"v": 2024, "year": 2024}]


def test_value_that_does_not_fit_the_given_schema_names_file_column_types(tmp_path):
    pq.write_table(pa.table({"a": ["abc"]}), tmp_path / "f0.parquet")
    with pytest.raises(SchemaMismatchError) as info:
        bridge.read_parquet(str(tmp_path), schema=pa.schema([("a", pa.int64())])).take_all()
    text = str(info.value)
    assert "'a' is string" in text and "int64" in text and "f0.parquet" in text
    assert "delete or re-write" not in text and "Hint:" in text


# ---------------------------------------------------------------- clear errors


def test_write_csv_of_binary_names_column_and_type(tmp_path):
    ds = bridge.from_items([{"id": 1, "payload": b"\xff\x00"}])
    with pytest.raises(UnsupportedTypeError) as info:
        ds.write_csv(str(tmp_path / "o"))
    text = str(info.value)
    assert "'payload'" in text and "binary" in text and "write_parquet" in text and "base64" in text
    assert "writable" not in text
    # Even bytes that happen to be UTF-8 are refused: they would come back as strings.
    with pytest.raises(UnsupportedTypeError, match="'payload'"):
        bridge.from_items([{"payload": b"abc"}]).write_csv(str(tmp_path / "o2"))


def test_filter_expression_on_missing_column(tmp_path):
    ds = bridge.from_items([{"a": 1, "b": 2}])
    with pytest.raises(SchemaMismatchError) as info:
        ds.filter(expr=pc.field("nope") > 1).take_all()
    text = str(info.value)
    assert "'nope'" in text and "['a', 'b']" in text and "Hint:" in text
    assert isinstance(info.value, ValueError)
    assert ds.filter(expr=pc.field("a") >= 1).take_all() == [{"a": 1, "b": 2}]


def test_rename_two_columns_to_one_name():
    ds = bridge.from_items([{"a": 1, "b": 2, "c": 3}])
    with pytest.raises(SchemaMismatchError, match=r"\['a', 'b'\] would all be named 'z'"):
        ds.rename_columns({"a": "z", "b": "z"})
    with pytest.raises(SchemaMismatchError, match="two columns named 'c'") as info:
        ds.rename_columns({"a": "c"}).take_all()
    assert isinstance(info.value, ValueError)
    assert ds.rename_columns({"a": "x", "b": "a"}).take_all() == [{"x": 1, "a": 2, "c": 3}]


def test_duplicate_column_names_in_input():
    table = pa.Table.from_arrays([pa.array([1]), pa.array([2])], names=["a", "a"])
    with pytest.raises(SchemaMismatchError, match="2 columns named 'a'"):
        bridge.from_arrow(table)


def test_duplicate_csv_header_names_the_file(tmp_path):
    (tmp_path / "d.csv").write_text("a,a\n1,2\n")
    with pytest.raises(FileReadError, match=r"d\.csv.*2 columns named 'a'"):
        bridge.read_csv(str(tmp_path)).take_all()


def test_empty_dataset_round_trips_through_json(tmp_path):
    out = str(tmp_path / "j")
    empty = bridge.range(10, override_num_blocks=2).filter(expr=pc.field("id") < 0)
    assert len(empty.write_json(out)) == 1
    back = bridge.read_json(out)
    assert back.count() == 0 and back.take_all() == []
    # With the schema, when the reader is told it.
    opts = pajson.ParseOptions(explicit_schema=pa.schema([("id", pa.int64())]))
    typed = bridge.read_json(out, parse_options=opts)
    assert typed.count() == 0 and typed.schema() == pa.schema([("id", pa.int64())])


def test_to_tf_nulls_raise_the_same_error_as_torch():
    tf = pytest.importorskip("tensorflow")
    ds = bridge.from_arrow(pa.table({"x": [1.0, None, 3.0], "y": [0, 1, 0]}))
    with pytest.raises(UnsupportedTypeError, match="column 'x'.*1 null") as info:
        ds.to_tf("x", "y", batch_size=2)
    assert "fill_nulls" in str(info.value) and not isinstance(info.value, tf.errors.OpError)
    (x, _), (x2, _) = list(ds.to_tf("x", "y", batch_size=2, fill_nulls={"x": -1.0}))
    assert x.numpy().tolist() + x2.numpy().tolist() == [1.0, -1.0, 3.0]


# ---------------------------------------------------------------- write modes (Ray Data's semantics)


def test_ignore_writes_into_directory_without_data(tmp_path):
    out = tmp_path / "o"
    out.mkdir()
    assert len(bridge.range(3).write_parquet(str(out), mode="ignore")) == 1
    assert bridge.read_parquet(str(out)).count() == 3
    # Hidden leftovers (a crashed write's temporary file, _SUCCESS) are not data either.
    hidden = tmp_path / "h"
    hidden.mkdir()
    (hidden / "_SUCCESS").write_text("")
    (hidden / ".part-00000.parquet.abc.tmp").write_bytes(b"junk")
    assert len(bridge.range(3).write_parquet(str(hidden), mode="ignore")) == 1
    assert bridge.read_parquet(str(hidden)).count() == 3
    # Data present (even only in a partition subdirectory): ignore skips, error refuses.
    nested = tmp_path / "n" / "year=2024"
    nested.mkdir(parents=True)
    pq.write_table(pa.table({"id": [7]}), nested / "p.parquet")
    assert bridge.range(3).write_parquet(str(tmp_path / "n"), mode="ignore") == []
    with pytest.raises(FileWriteError, match="already holds 1 file"):
        bridge.range(3).write_parquet(str(tmp_path / "n"), mode="error")


def test_append_twice_adds_files_and_never_replaces(tmp_path):
    out = str(tmp_path / "a")
    first = bridge.range(4, override_num_blocks=2).write_parquet(out)
    second = bridge.from_items([{"id": i} for i in range(4, 8)], override_num_blocks=2).write_parquet(
        out, mode="append")
    third = bridge.from_items([{"id": i} for i in range(8, 10)]).write_parquet(out, mode="append")
    assert len(set(first + second + third)) == len(first) + len(second) + len(third) == 5
    assert sorted(os.listdir(out)) == sorted(os.path.basename(p) for p in first + second + third)
    # Sorted names follow write order, so a read gives the rows in the order they were appended.
    assert [r["id"] for r in bridge.read_parquet(out).take_all()] == list(range(10))
    # overwrite replaces the earlier output, appended files included.
    bridge.range(2).write_parquet(out)
    assert sorted(os.listdir(out)) == ["part-00000.parquet"]
    assert pds.dataset(out).count_rows() == 2


# ---------------------------------------------------------------- typed text reads: read_csv / read_json(schema=)


def test_read_csv_with_schema_keeps_nan_apart_from_null_and_strings_that_look_like_numbers(tmp_path):
    t = pa.table({"code": ["007", None, ""], "f": pa.array([float("nan"), None, 1.5], pa.float32()),
                  "u": pa.array([255, None, 0], pa.uint8())})
    ds = bridge.from_arrow(t)
    ds.write_csv(str(tmp_path))
    untyped = bridge.read_csv(str(tmp_path)).to_arrow()  # what an untyped read infers (docstring)
    assert untyped.schema.field("u").type == pa.int64() and untyped.column("f").null_count == 1  # NaN stays NaN
    back = bridge.read_csv(str(tmp_path), schema=ds.schema()).to_arrow()
    assert back.schema == t.schema
    assert back.column("code").to_pylist() == ["007", None, ""]
    f = back.column("f").to_pylist()
    assert f[0] != f[0] and f[1] is None and f[2] == 1.5
    assert back.column("u").to_pylist() == [255, None, 0]


def test_read_csv_with_schema_keeps_the_null_rows_of_a_one_column_file(tmp_path):
    # One column: a null row is an empty line (pyarrow's reader skips it as padding; both reads keep it).
    t = pa.table({"x": pa.array([1, None, None, 2], pa.int16())})
    ds = bridge.from_arrow(t)
    ds.write_csv(str(tmp_path))
    assert bridge.read_csv(str(tmp_path), schema=ds.schema()).to_arrow().equals(t)


def test_read_csv_with_schema_names_the_file_and_column_of_a_value_that_does_not_fit(tmp_path):
    (tmp_path / "a.csv").write_text("x,y\n1,300\n")
    with pytest.raises(FileReadError, match=r"a\.csv.*'y'.*uint8") as info:
        bridge.read_csv(str(tmp_path), schema=pa.schema([("x", pa.int64()), ("y", pa.uint8())])).to_arrow()
    assert "Hint:" in str(info.value)
    with pytest.raises(FileReadError, match=r"a\.csv.*no column 'z'"):
        bridge.read_csv(str(tmp_path), schema=pa.schema([("z", pa.int64())])).to_arrow()
    # Columns the schema does not name keep their inferred types, after the named ones.
    out = bridge.read_csv(str(tmp_path), schema=pa.schema([("y", pa.int16())])).to_arrow()
    assert out.schema == pa.schema([("y", pa.int16()), ("x", pa.int64())])


def test_read_json_with_schema_restores_times_durations_maps_binary_and_tensors(tmp_path):
    t = pa.table({
        "t": pa.array([1, 86_399_999_999_999, None], pa.time64("ns")),
        "d": pa.array([7, -1, None], pa.duration("ns")),
        "m": pa.array([[("a", 1)], [], None], pa.map_(pa.string(), pa.int64())),
        "b": pa.array([b"\x00\xff", b"", None]),
        "ts": pa.array([1, 2, None], pa.timestamp("ms", "Asia/Tokyo")),
    })
    ds = bridge.from_arrow(t).add_column("img", lambda b: bridge.tensor.fixed_tensor_array(
        np.arange(len(b) * 4, dtype=np.uint8).reshape(-1, 2, 2)))
    ds.write_json(str(tmp_path))
    back = bridge.read_json(str(tmp_path), schema=ds.schema()).to_arrow()
    want = ds.to_arrow()
    assert back.schema == want.schema
    for name in t.column_names:
        assert back.column(name).to_pylist() == want.column(name).to_pylist(), name
    assert back.column("t").cast(pa.int64()).to_pylist() == [1, 86_399_999_999_999, None]  # every nanosecond
    np.testing.assert_array_equal(bridge.tensor.tensor_to_numpy(back.column("img")),
                                  bridge.tensor.tensor_to_numpy(want.column("img")))


def test_read_text_formats_refuse_a_schema_that_is_not_one(tmp_path):
    with pytest.raises(BridgeError, match=r"read_csv\(schema=...\) needs a pyarrow.Schema; got dict"):
        bridge.read_csv(str(tmp_path), schema={"x": "int64"})


def test_read_json_lines_argument(tmp_path):
    (tmp_path / "doc.json").write_text('[\n  {"a": 1},\n  {"a": 2}\n]\n')
    (tmp_path / "one.json").write_text('{\n  "a": 3,\n  "b": [1, 2]\n}\n')
    (tmp_path / "rows.jsonl").write_text('{"a": 4}\n{"a": 5}\n')
    assert bridge.read_json(str(tmp_path / "doc.json"), lines=False).take_all() == [{"a": 1}, {"a": 2}]
    assert bridge.read_json(str(tmp_path / "one.json"), lines=False).take_all() == [{"a": 3, "b": [1, 2]}]
    assert bridge.read_json(str(tmp_path / "rows.jsonl"), lines=True).take_all() == [{"a": 4}, {"a": 5}]
    assert bridge.read_json(str(tmp_path / "rows.jsonl")).count() == 2  # unset: told apart by the first byte
    with pytest.raises(FileReadError, match=r"lines=True.*doc\.json.*JSON array") as info:
        bridge.read_json(str(tmp_path / "doc.json"), lines=True).materialize()
    assert "Hint: pass lines=False" in str(info.value)
    with pytest.raises(FileReadError, match=r"lines=False.*rows\.jsonl.*not one JSON document"):
        bridge.read_json(str(tmp_path / "rows.jsonl"), lines=False).materialize()
    with pytest.raises(TypeError, match=r"lines=\.\.\.\) must be True, False or None; got 'yes'"):
        bridge.read_json(str(tmp_path), lines="yes")


def test_read_json_with_schema_refuses_a_tensor_row_of_another_shape(tmp_path):
    (tmp_path / "t.json").write_text('{"img": [[1, 2], [3, 4]]}\n{"img": [[1, 2, 3], [4, 5, 6]]}\n')
    schema = pa.schema([("img", pa.fixed_shape_tensor(pa.uint8(), [2, 2]))])
    with pytest.raises(FileReadError, match=r"t\.json.*'img'.*not of shape \(2, 2\)"):
        bridge.read_json(str(tmp_path), schema=schema).materialize()
