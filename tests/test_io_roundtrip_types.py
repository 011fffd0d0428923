"""Round trips through files keep values and types: big integers through JSON and CSV text, and
the types of Hive partition columns through write_parquet(partition_cols=...) + read_parquet."""

from __future__ import annotations

import datetime
import decimal
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
from bridge.io.paths import FileReadError

BIG = 2**63 + 5  # beyond int64: pyarrow's text readers infer double, which rounds it


# ------------------------------------------------------------------ integers through JSON and CSV


def test_write_json_read_json_keeps_uint64_beyond_int64_exactly(tmp_path):
    table = pa.table({"u": pa.array([BIG, 1, None, 2**64 - 1], pa.uint64())})
    bridge.from_arrow(table).write_json(str(tmp_path))
    text = (tmp_path / "part-00000.json").read_text()
    assert f'"u": {BIG}' in text and '"u": 18446744073709551615' in text  # exact literals, not 9.2e18
    back = bridge.read_json(str(tmp_path))
    assert back.schema().field("u").type == pa.uint64()
    assert back.take_all() == [{"u": BIG}, {"u": 1}, {"u": None}, {"u": 2**64 - 1}]


def test_int64_at_its_limits_and_beyond_2_53_reads_back_exactly(tmp_path):
    values = [2**53 + 1, -(2**63), 2**63 - 1, -(2**53) - 1]
    bridge.from_arrow(pa.table({"i": pa.array(values, pa.int64())})).write_json(str(tmp_path / "j"))
    bridge.from_arrow(pa.table({"i": pa.array(values, pa.int64())})).write_csv(str(tmp_path / "c"))
    for ds in (bridge.read_json(str(tmp_path / "j")), bridge.read_csv(str(tmp_path / "c"))):
        assert ds.schema().field("i").type == pa.int64()
        assert [r["i"] for r in ds.take_all()] == values


def test_read_json_refuses_an_integer_no_exact_type_holds_and_its_hint_reads_it(tmp_path):
    path = tmp_path / "f.json"
    path.write_text('{"n": -9223372036854775809, "s": "a"}\n{"n": 1, "s": "b"}\n')
    with pytest.raises(FileReadError, match=r"column 'n', row 1: the integer -9223372036854775809 cannot be read "
                                            r"exactly: the column reads as double") as info:
        bridge.read_json(str(path)).take_all()
    assert "Hint: read 'n' with an exact type" in str(info.value)
    exact = pajson.ParseOptions(explicit_schema=pa.schema([("n", pa.decimal128(38, 0))]))
    assert bridge.read_json(str(path), parse_options=exact).take_all() == [
        {"n": decimal.Decimal(-(2**63) - 1), "s": "a"}, {"n": decimal.Decimal(1), "s": "b"}]


def test_read_json_refuses_floats_that_would_round_an_integer_beside_them(tmp_path):
    (tmp_path / "f.json").write_text('{"x": 1.5}\n{"x": 9007199254740993}\n')
    with pytest.raises(FileReadError, match="9007199254740993 cannot be read exactly"):
        bridge.read_json(str(tmp_path)).take_all()
    (tmp_path / "f.json").write_text('{"x": [1, 18446744073709551615]}\n')
    with pytest.raises(FileReadError, match=r"18446744073709551615 cannot be read exactly.*list<item: double>"):
        bridge.read_json(str(tmp_path)).take_all()


@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_uint64_values_a_double_happens_to_hold_still_read_as_uint64(tmp_path, fmt):
    # 2**63 and 10**19 are doubles exactly: the column was uint64 all the same, and stays it.
    table = pa.table({"u": pa.array([1, 2**63, 10**19], pa.uint64())})
    getattr(bridge.from_arrow(table), f"write_{fmt}")(str(tmp_path))
    back = getattr(bridge, f"read_{fmt}")(str(tmp_path))
    assert back.schema().field("u").type == pa.uint64()
    assert [r["u"] for r in back.take_all()] == [1, 2**63, 10**19]


def test_one_document_with_an_int_beyond_int64_that_a_double_holds(tmp_path):
    (tmp_path / "f.json").write_text('[{"u": 1}, {"u": 9223372036854775808}]')
    ds = bridge.read_json(str(tmp_path), lines=False)
    assert ds.schema().field("u").type == pa.uint64() and [r["u"] for r in ds.take_all()] == [1, 2**63]
    (tmp_path / "f.json").write_text('[{"u": 1.5}, {"u": 9223372036854775808}]')  # a float beside it: exact doubles
    ds = bridge.read_json(str(tmp_path), lines=False)
    assert ds.schema().field("u").type == pa.float64() and [r["u"] for r in ds.take_all()] == [1.5, 2.0**63]


def test_large_floats_and_exact_integers_stay_doubles(tmp_path):
    # 2**53 and 1e20 are doubles exactly: nothing to refuse, the column stays double.
    (tmp_path / "f.json").write_text('{"x": 1.5}\n{"x": 9007199254740992}\n{"x": 1e20}\n')
    ds = bridge.read_json(str(tmp_path))
    assert ds.schema().field("x").type == pa.float64()
    assert [r["x"] for r in ds.take_all()] == [1.5, 2.0**53, 1e20]


def test_read_json_of_one_document_keeps_big_integers_exact(tmp_path):
    (tmp_path / "f.json").write_text(f'[{{"u": {BIG}}}, {{"u": 1}}]')
    ds = bridge.read_json(str(tmp_path), lines=False)
    assert ds.schema().field("u").type == pa.uint64() and [r["u"] for r in ds.take_all()] == [BIG, 1]
    (tmp_path / "f.json").write_text('[{"u": -9223372036854775809}]')
    with pytest.raises(FileReadError, match="-9223372036854775809 cannot be read exactly"):
        bridge.read_json(str(tmp_path), lines=False).take_all()


def test_the_json_fast_path_parses_no_text_in_python(tmp_path, monkeypatch):
    from bridge.io import json_datasource

    path = tmp_path / "f.json"
    path.write_text("".join(f'{{"x": {i * 0.5}, "i": {i}}}\n' for i in range(1000)))

    def forbidden(data):
        raise AssertionError("the JSON text was parsed in Python")

    monkeypatch.setattr(json_datasource, "_json_objects", forbidden)
    (table,) = json_datasource.JSONFormat().read(pafs.LocalFileSystem(), str(path), None)
    assert table.num_rows == 1000 and table.schema.field("x").type == pa.float64()
    # Floats of 2**53 and more (epoch nanoseconds as floats) written as floats: no integer literal
    # long enough to have been rounded, so no second look either.
    path.write_text("".join(f'{{"x": {1.7e18 + i * 1e9!r}, "y": 1e+20}}\n' for i in range(1000)))
    (table,) = json_datasource.JSONFormat().read(pafs.LocalFileSystem(), str(path), None)
    assert table.column("x").to_pylist()[:2] == [1.7e18, 1.7e18 + 1e9]


def test_write_csv_read_csv_keeps_uint64_exactly_and_refuses_what_it_cannot_hold(tmp_path):
    table = pa.table({"u": pa.array([BIG, None, 7], pa.uint64()), "s": ["a", "b", "c"]})
    bridge.from_arrow(table).write_csv(str(tmp_path / "c"))
    back = bridge.read_csv(str(tmp_path / "c"))
    assert back.schema().field("u").type == pa.uint64()
    assert back.take_all() == [{"u": BIG, "s": "a"}, {"u": None, "s": "b"}, {"u": 7, "s": "c"}]
    (tmp_path / "n").mkdir()
    (tmp_path / "n" / "f.csv").write_text("n\n-9223372036854775809\n1\n")
    with pytest.raises(FileReadError, match=r"column 'n', row 1: the integer -9223372036854775809"):
        bridge.read_csv(str(tmp_path / "n")).take_all()
    exact = bridge.read_csv(str(tmp_path / "n"), schema=pa.schema([("n", pa.decimal128(38, 0))]))
    assert [r["n"] for r in exact.take_all()] == [decimal.Decimal(-(2**63) - 1), decimal.Decimal(1)]


# ------------------------------------------------------------------ Hive partition columns' types


def _sorted(rows, key="v"):
    return sorted(rows, key=lambda r: r[key])


def test_partition_columns_read_back_as_the_types_written(tmp_path):
    days = np.array(["2020-01-01", "2021-06-30"], dtype="datetime64[D]")
    t = pa.table({"b": [True, False], "d": pa.array(days), "s": ["007", "8"], "i": [5, 6], "v": [1, 2]})
    bridge.from_arrow(t).write_parquet(str(tmp_path), partition_cols=["b", "d", "s", "i"])
    assert os.path.exists(tmp_path / "_common_metadata")
    ds = bridge.read_parquet(str(tmp_path))
    assert ds.schema() == pa.schema([("v", pa.int64()), ("b", pa.bool_()), ("d", pa.date32()),
                                     ("s", pa.string()), ("i", pa.int64())])
    assert _sorted(ds.take_all()) == _sorted(t.to_pylist())  # "007" stays "007"
    # Filters compare with the typed values; a subdirectory finds the layout's types above it.
    assert bridge.read_parquet(str(tmp_path), filter=pc.field("b") == True).take_all() == [  # noqa: E712
        {"v": 1, "b": True, "d": datetime.date(2020, 1, 1), "s": "007", "i": 5}]
    sub = bridge.read_parquet(str(tmp_path / "b=false"))
    assert sub.schema().field("b").type == pa.bool_() and sub.take_all()[0]["d"] == datetime.date(2021, 6, 30)


def test_every_type_a_partition_column_may_have_comes_back(tmp_path):
    paris = datetime.datetime(2020, 1, 1, 1, 2, 3, tzinfo=datetime.timezone.utc)
    t = pa.table({
        "v": [1, 2, 3],
        "ts": pa.array([paris, paris, None], pa.timestamp("us", "Europe/Paris")),
        "ns": pa.array([1_600_000_000_123_456_789, 0, 1], pa.timestamp("ns")),
        "dec": pa.array([decimal.Decimal("1.50"), decimal.Decimal("-2.00"), None], pa.decimal128(10, 2)),
        "du": pa.array([5000, 1, None], pa.duration("ms")),
        "dic": pa.array(["a", "b", "a"]).dictionary_encode(),
        "u8": pa.array([1, 2, 255], pa.uint8()),
        "tm": pa.array([datetime.time(1, 2, 3, 4), None, datetime.time(0)], pa.time64("us")),
    })
    bridge.from_arrow(t).write_parquet(str(tmp_path), partition_cols=t.column_names[1:])
    back = bridge.read_parquet(str(tmp_path))
    assert back.schema() == t.schema
    assert back.to_arrow().sort_by("v").to_pylist() == t.to_pylist()  # (each block has its own dictionary)
    # No row lost or repeated: nanoseconds decide the directory; filters compare with typed values.
    one_ns = bridge.read_parquet(str(tmp_path), filter=pc.field("ns") == pa.scalar(1, pa.timestamp("ns")))
    assert [r["v"] for r in one_ns.take_all()] == [3]
    assert bridge.read_parquet(str(tmp_path), filter=pc.field("dec") == decimal.Decimal("-2.00")).take_all()[0]["v"] == 2


def test_layouts_without_the_types_file_read_as_before_and_names_are_never_changed(tmp_path):
    # pyarrow's own writer records no types: ints as int32, the rest strings (as Ray Data reads them, or
    # pyarrow.dataset, except that "007" and "-0" stay strings: read as numbers they would change).
    t = pa.table({"k": ["007", "8"], "n": [1, 2], "b": ["true", "false"], "v": [1, 2]})
    pq.write_to_dataset(t, str(tmp_path / "a"), partition_cols=["k", "n", "b"])
    ds = bridge.read_parquet(str(tmp_path / "a"))
    assert ds.schema() == pa.schema([("v", pa.int64()), ("k", pa.string()), ("n", pa.int32()), ("b", pa.string())])
    assert _sorted(ds.take_all()) == [{"v": 1, "k": "007", "n": 1, "b": "true"}, {"v": 2, "k": "8", "n": 2, "b": "false"}]
    for name in ("k=007", "k=-0"):
        (tmp_path / "c" / name).mkdir(parents=True)
        (tmp_path / "c" / name / "f.csv").write_text("v\n1\n")
    assert sorted(r["k"] for r in bridge.read_csv(str(tmp_path / "c")).take_all()) == ["-0", "007"]


def test_types_given_to_the_read_come_first(tmp_path):
    from ray.data.datasource import Partitioning

    t = pa.table({"k": [1, 2], "v": [10, 20]})
    bridge.from_arrow(t).write_parquet(str(tmp_path), partition_cols=["k"])
    as_text = pds.HivePartitioning(pa.schema([("k", pa.string())]))
    assert bridge.read_parquet(str(tmp_path), partitioning=as_text).schema().field("k").type == pa.string()
    schema = pa.schema([("v", pa.int64()), ("k", pa.int16())])
    assert bridge.read_parquet(str(tmp_path), schema=schema).schema() == schema
    ray_style = Partitioning("hive", field_types={"k": str})
    assert _sorted(bridge.read_parquet(str(tmp_path), partitioning=ray_style).take_all()) == [
        {"v": 10, "k": "1"}, {"v": 20, "k": "2"}]
    # Ray Data's field_types type the text formats' partition columns too.
    (tmp_path / "c" / "k=3").mkdir(parents=True)
    (tmp_path / "c" / "k=3" / "f.csv").write_text("v\n1\n")
    typed = bridge.read_csv(str(tmp_path / "c"), partitioning=Partitioning("hive", field_types={"k": float}))
    assert typed.take_all() == [{"v": 1, "k": 3.0}]


def test_a_directory_name_that_does_not_read_as_its_recorded_type_raises(tmp_path):
    bridge.from_arrow(pa.table({"k": [1], "v": [1]})).write_parquet(str(tmp_path), partition_cols=["k"])
    (tmp_path / "k=abc").mkdir()
    pq.write_table(pa.table({"v": [2]}), str(tmp_path / "k=abc" / "other.parquet"))
    with pytest.raises(bridge.SchemaMismatchError, match=r"k=abc does not read as int64.*_common_metadata") as info:
        bridge.read_parquet(str(tmp_path))
    assert "Hint: read with partitioning=pyarrow.dataset.HivePartitioning" in str(info.value)


def test_append_keeps_the_recorded_types_and_refuses_others_before_writing(tmp_path):
    out = str(tmp_path)
    bridge.from_arrow(pa.table({"b": [True], "v": [1]})).write_parquet(out, partition_cols=["b"])
    bridge.from_arrow(pa.table({"b": [False], "v": [2]})).write_parquet(out, partition_cols=["b"], mode="append")
    assert _sorted(bridge.read_parquet(out).take_all()) == [{"v": 1, "b": True}, {"v": 2, "b": False}]
    before = sorted(os.listdir(out))
    with pytest.raises(bridge.SchemaMismatchError, match="b: bool there, string here"):
        bridge.from_arrow(pa.table({"b": ["x"], "v": [3]})).write_parquet(out, partition_cols=["b"], mode="append")
    assert sorted(os.listdir(out)) == before


def test_overwrite_without_partition_cols_removes_the_stale_types_file(tmp_path):
    out = str(tmp_path)
    bridge.from_arrow(pa.table({"b": [True], "v": [1]})).write_parquet(out, partition_cols=["b"])
    assert os.path.exists(tmp_path / "_common_metadata")
    bridge.from_arrow(pa.table({"v": [1]})).write_parquet(out)
    assert not os.path.exists(tmp_path / "_common_metadata")
    assert bridge.read_parquet(out).take_all() == [{"v": 1}]
