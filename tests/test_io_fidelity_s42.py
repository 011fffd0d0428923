"""Two fidelity fixes of the IO layer.

* ``read_json(schema=...)`` with a decimal column reads JSON number literals as the exact decimal of
  their text (not through float64), in JSON lines and in files holding one JSON array; a literal with
  more digits than the type holds is refused naming file, column, row and value.
* ``write_parquet(mode="overwrite")`` replaces the dataset, summary files included: a ``_metadata`` /
  ``_common_metadata`` written by another tool (``pq.write_metadata``, Dask, Spark) describes the old
  files and does not survive; ``mode="append"`` removes a ``_metadata`` (it lists the old files' row
  groups only, so readers that trust it would miss the appended rows).
"""

from __future__ import annotations

import decimal
import os

import pyarrow as pa
import pyarrow.dataset as pds
import pyarrow.parquet as pq
import pytest

import bridge
from bridge.io.paths import FileReadError

D = decimal.Decimal


# ------------------------------------------------------------------ read_json(schema=) of decimals


def _write(path, text: str) -> str:
    path.write_text(text)
    return str(path)


def test_read_json_decimal_from_number_literals_is_the_literal_exactly(tmp_path):
    path = _write(tmp_path / "prices.jsonl",
                  '{"price": 12.34, "wide": 0.1}\n'
                  '{"price": 0.1, "wide": 12.34}\n'
                  '{"price": "5.50", "wide": "0.30"}\n'  # strings holding decimals keep working
                  '{"price": null, "wide": 1e-20}\n'
                  '{"price": 7, "wide": -2}\n')
    schema = pa.schema([("price", pa.decimal128(10, 2)), ("wide", pa.decimal128(38, 20))])
    ds = bridge.read_json(path, schema=schema)
    assert ds.schema().field("price").type == pa.decimal128(10, 2)
    rows = ds.take_all()
    assert [r["price"] for r in rows] == [D("12.34"), D("0.10"), D("5.50"), None, D("7.00")]
    # Through float64, 0.1 would be 0.10000000000000000555 and 12.34 12.33999999999999985789.
    assert [r["wide"] for r in rows] == [D("0.1"), D("12.34"), D("0.3"), D("1e-20"), D(-2)]
    assert str(rows[0]["wide"]) == "0.10000000000000000000"


def test_read_json_decimal256_and_nested_decimals_from_number_literals(tmp_path):
    path = _write(tmp_path / "nested.jsonl",
                  '{"big": 123456789012345678901234567890123456789.5, "s": {"q": 1.25}, "l": [0.1, "0.2", null]}\n'
                  '{"big": "-0.5", "s": {"q": null}, "l": null}\n')
    schema = pa.schema([("big", pa.decimal256(45, 1)), ("s", pa.struct([("q", pa.decimal128(5, 2))])),
                        ("l", pa.list_(pa.decimal128(20, 18)))])
    rows = bridge.read_json(path, schema=schema).take_all()
    assert rows[0]["big"] == D("123456789012345678901234567890123456789.5")
    assert rows[0]["s"] == {"q": D("1.25")} and rows[0]["l"] == [D("0.1"), D("0.2"), None]
    assert rows[1] == {"big": D("-0.5"), "s": {"q": None}, "l": None}


@pytest.mark.parametrize("lines", [None, False])
def test_read_json_array_document_decimals_are_exact_not_through_float(tmp_path, lines):
    # A file holding one JSON array is parsed by Python's json: its floats went through float64 and
    # were cast to the decimal (12.345 silently became 12.35, 0.1 0.10000000000000000555).
    path = _write(tmp_path / "doc.json", '[{"p": 0.1, "n": 1}, {"p": 12.34, "n": 2}, {"p": "3.5"}, {"p": 4}]')
    schema = pa.schema([("p", pa.decimal128(38, 20))])
    rows = bridge.read_json(path, schema=schema, lines=lines).take_all()
    assert [r["p"] for r in rows] == [D("0.1"), D("12.34"), D("3.5"), D(4)]
    assert [r["n"] for r in rows] == [1, 2, None, None]  # the other columns as before


@pytest.mark.parametrize("text, layout", [
    ('{"price": 1.5}\n{"price": 12.345}\n', "lines"),
    ('[{"price": 1.5}, {"price": 12.345}]', "array"),
])
def test_read_json_decimal_with_more_digits_than_the_scale_is_refused(tmp_path, text, layout):
    path = _write(tmp_path / f"bad.{'jsonl' if layout == 'lines' else 'json'}", text)
    schema = pa.schema([("price", pa.decimal128(10, 2))])
    with pytest.raises(FileReadError) as info:
        bridge.read_json(path, schema=schema).take_all()
    msg = str(info.value)
    assert "bad." in msg and "'price'" in msg and "12.345" in msg and "row 2" in msg, msg
    assert "decimal128(10, 2)" in msg and "scale" in msg.lower(), msg
    assert "Hint:" in msg and "decimal128(11, 3)" in msg, msg  # the type that holds it


def test_read_json_decimal_too_many_integer_digits_is_refused_naming_the_field(tmp_path):
    path = _write(tmp_path / "wide.jsonl", '{"s": {"q": 1.5}}\n{"s": {"q": 1234.5}}\n')
    with pytest.raises(FileReadError) as info:
        bridge.read_json(path, schema=pa.schema([("s", pa.struct([("q", pa.decimal128(5, 2))]))])).take_all()
    msg = str(info.value)
    assert "wide.jsonl" in msg and "'s.q'" in msg and "1234.5" in msg and "row 2" in msg, msg
    assert "precision" in msg, msg


def test_read_json_decimal_trailing_zeros_beyond_the_precision_are_the_same_value(tmp_path):
    # 12.340 is 12.34, which decimal128(4, 2) holds (pyarrow's own decimal reading refused it: it counts
    # the literal's digits), and 1234.5 is refused (pyarrow gave 1234.50, six digits in a decimal(4, 2)).
    path = _write(tmp_path / "z.jsonl", '{"p": 12.340}\n{"p": "0.100"}\n{"p": -0.000}\n')
    rows = bridge.read_json(path, schema=pa.schema([("p", pa.decimal128(4, 2))])).take_all()
    assert [r["p"] for r in rows] == [D("12.34"), D("0.10"), D(0)]


def test_read_json_parse_options_explicit_decimal_is_checked_too(tmp_path):
    import pyarrow.json as pajson

    path = _write(tmp_path / "e.jsonl", '{"p": 1.5}\n{"p": 1234.5}\n')
    options = pajson.ParseOptions(explicit_schema=pa.schema([("p", pa.decimal128(5, 2))]))
    with pytest.raises(FileReadError, match=r"e\.jsonl.*'p', row 2: 1234\.5 .*precision"):
        bridge.read_json(path, parse_options=options).take_all()
    ok = _write(tmp_path / "ok.jsonl", '{"p": 123.45}\n')
    assert bridge.read_json(ok, parse_options=options).take_all() == [{"p": D("123.45")}]


def test_write_json_read_json_decimals_round_trip(tmp_path):
    table = pa.table({"d": pa.array([D("0.10"), None, D("-12.34")], pa.decimal128(6, 2))})
    bridge.from_arrow(table).write_json(str(tmp_path))
    back = bridge.read_json(str(tmp_path), schema=table.schema)
    assert back.to_arrow().equals(table)


# ------------------------------------------------------------------ write_parquet and summary files


def _foreign_dataset(directory) -> pa.Table:
    """A directory as pyarrow / Dask leave it: a data file, ``_metadata`` (its row groups) and
    ``_common_metadata`` (its schema)."""
    old = pa.table({"a": pa.array([1, 2, 3], pa.int32()), "s": ["x", "y", "z"]})
    collector: list = []
    pq.write_table(old, os.path.join(directory, "part-00000.parquet"), metadata_collector=collector)
    collector[0].set_file_path("part-00000.parquet")
    pq.write_metadata(old.schema, os.path.join(directory, "_common_metadata"))
    pq.write_metadata(old.schema, os.path.join(directory, "_metadata"), metadata_collector=collector)
    return old


def _summary_dataset(directory) -> pa.Table:
    """The dataset as a reader that trusts the ``_metadata`` summary file sees it."""
    return pds.parquet_dataset(os.path.join(directory, "_metadata")).to_table()


class _Names(bridge.FilenameProvider):
    def get_filename_for_task(self, write_uuid, task_index):
        return f"named-{task_index:03d}.parquet"


@pytest.mark.parametrize("how", ["prefix", "provider"])
def test_write_parquet_overwrite_removes_foreign_summary_files(tmp_path, how):
    _foreign_dataset(tmp_path)
    new = pa.table({"a": pa.array([10, 20], pa.int32()), "s": ["new", "rows"]})
    kwargs = {"filename_provider": _Names()} if how == "provider" else {}
    bridge.from_arrow(new).write_parquet(str(tmp_path), mode="overwrite", **kwargs)
    names = sorted(os.listdir(tmp_path))
    # The stale _metadata listed part-00000.parquet's old row groups (a reader trusting it read the old
    # offsets in the new file, or a file no longer there); it no longer survives an overwrite.
    assert "_metadata" not in names and "_common_metadata" not in names, names
    assert bridge.read_parquet(str(tmp_path)).to_arrow().equals(new)
    assert pq.read_table(str(tmp_path)).equals(new)


def test_write_parquet_overwrite_partitioned_keeps_only_its_own_common_metadata(tmp_path):
    _foreign_dataset(tmp_path)
    os.makedirs(tmp_path / "deep")
    pq.write_metadata(pa.schema([("k", pa.int8())]), str(tmp_path / "deep" / "_metadata"))
    new = pa.table({"k": ["007", "abc"], "v": [1.5, 2.5]})
    bridge.from_arrow(new).write_parquet(str(tmp_path), mode="overwrite", partition_cols=["k"])
    assert not os.path.exists(tmp_path / "_metadata") and not os.path.exists(tmp_path / "deep" / "_metadata")
    assert pq.read_schema(str(tmp_path / "_common_metadata")).field("k").type == pa.string()  # ours, new
    back = bridge.read_parquet(str(tmp_path)).to_arrow().select(["k", "v"]).sort_by("k")
    assert back.equals(new)


def test_write_parquet_non_parquet_overwrite_leaves_summary_files(tmp_path):
    _foreign_dataset(tmp_path)
    bridge.from_items([{"a": 1}]).write_json(str(tmp_path), mode="overwrite")
    assert os.path.exists(tmp_path / "_metadata") and os.path.exists(tmp_path / "part-00000.parquet")


def test_write_parquet_append_removes_stale_metadata_so_no_reader_misses_rows(tmp_path):
    old = _foreign_dataset(tmp_path)
    assert _summary_dataset(tmp_path).num_rows == 3
    new = pa.table({"a": pa.array([4, 5], pa.int32()), "s": ["u", "v"]})
    bridge.from_arrow(new).write_parquet(str(tmp_path), mode="append")
    # A _metadata left in place lists the 3 old rows only: readers that trust it (Dask, pyarrow's
    # parquet_dataset) silently miss the appended ones. It is removed; _common_metadata (the schema,
    # still true of every file) is kept.
    assert not os.path.exists(tmp_path / "_metadata")
    assert pq.read_schema(str(tmp_path / "_common_metadata")).equals(old.schema)
    back = bridge.read_parquet(str(tmp_path)).to_arrow()
    assert back.num_rows == 5 and sorted(back.column("a").to_pylist()) == [1, 2, 3, 4, 5]
    assert pq.read_table(str(tmp_path)).num_rows == 5


def test_write_parquet_append_without_summary_files_changes_nothing_else(tmp_path):
    bridge.from_items([{"a": 1}]).write_parquet(str(tmp_path))
    (tmp_path / "_SUCCESS").write_text("")
    bridge.from_items([{"a": 2}]).write_parquet(str(tmp_path), mode="append")
    assert os.path.exists(tmp_path / "_SUCCESS")
    assert sorted(r["a"] for r in bridge.read_parquet(str(tmp_path)).take_all()) == [1, 2]


def test_a_file_named_metadata_that_is_not_parquet_is_kept(tmp_path):
    """Only Parquet summary files are removed: someone's notes named _metadata are not one."""
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "_metadata").write_text("user notes, not parquet")
    bridge.from_items([{"z": 5}]).write_parquet(str(tmp_path), mode="append")
    bridge.from_items([{"z": 6}]).write_parquet(str(tmp_path))  # overwrite
    assert (notes / "_metadata").read_text() == "user notes, not parquet"
    assert [r["z"] for r in bridge.read_parquet(str(tmp_path)).take_all()] == [6]
