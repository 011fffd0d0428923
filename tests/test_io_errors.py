"""Bad input: each error names the file (and the line where known) and carries a Hint."""

from __future__ import annotations

import warnings

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

import bridge
from bridge.io.csv_datasource import BadLinesSkippedWarning, CSVFormat
from bridge.io.paths import FileReadError, PathNotFoundError


def test_missing_path_names_it(tmp_path):
    missing = str(tmp_path / "nope.parquet")
    with pytest.raises(PathNotFoundError, match="nope.parquet") as info:
        bridge.read_parquet(missing)
    assert isinstance(info.value, FileNotFoundError) and "Hint:" in str(info.value)
    with pytest.raises(PathNotFoundError, match="no files"):
        bridge.read_csv(str(tmp_path / "*.csv"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(PathNotFoundError, match="no files"):
        bridge.read_json(str(tmp_path / "empty"))


def test_corrupt_parquet_footer_names_file(tmp_path):
    good = tmp_path / "a.parquet"
    pq.write_table(pa.table({"x": [1, 2]}), good)
    bad = tmp_path / "b.parquet"
    bad.write_bytes(good.read_bytes()[:-10])  # footer cut off
    with pytest.raises(FileReadError, match="b.parquet") as info:
        bridge.read_parquet(str(tmp_path)).count()
    assert "Hint:" in str(info.value)


def test_unreadable_file_names_it(tmp_path):
    (tmp_path / "x.csv.gz").write_bytes(b"this is not gzip data at all")
    with pytest.raises(FileReadError, match=r"x\.csv\.gz") as info:
        bridge.read_csv(str(tmp_path)).to_arrow()
    assert "CSV" in str(info.value)
    (tmp_path / "j.json").write_text('{"a": 1}\n{"a": \n')
    with pytest.raises(FileReadError, match=r"j\.json"):
        bridge.read_json(str(tmp_path / "j.json")).to_arrow()
    (tmp_path / "i.png").write_bytes(b"not a png")
    pytest.importorskip("PIL")
    with pytest.raises(FileReadError, match=r"i\.png"):
        bridge.read_images(str(tmp_path / "i.png")).to_arrow()


def test_csv_wrong_column_count_names_file_and_line(tmp_path):
    (tmp_path / "bad.csv").write_text("a,b\n1,2\n3,4\n5,6,7\n8,9\n")
    with pytest.raises(FileReadError, match=r"bad\.csv.*line 4: expected 2 columns, got 3") as info:
        bridge.read_csv(str(tmp_path / "bad.csv")).to_arrow()
    assert "on_bad_lines" in str(info.value)
    ds = bridge.read_csv(str(tmp_path / "bad.csv"), on_bad_lines="skip")
    assert ds.to_arrow().column("a").to_pylist() == [1, 3, 8]


def test_csv_skip_reports_count(tmp_path):
    (tmp_path / "bad.csv").write_text("a,b\n1,2\n5,6,7\n8\n9,9\n")
    fmt = CSVFormat(on_bad_lines="skip")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        table = next(iter(fmt.read(pafs.LocalFileSystem(), str(tmp_path / "bad.csv"), None)))
    assert table.num_rows == 2
    msgs = [str(w.message) for w in caught if issubclass(w.category, BadLinesSkippedWarning)]
    assert len(msgs) == 1 and "skipped 2 bad line(s)" in msgs[0] and "bad.csv" in msgs[0]
    with pytest.raises(bridge.BridgeError, match="on_bad_lines"):
        bridge.read_csv(str(tmp_path), on_bad_lines="ignore")


def test_bad_arguments(tmp_path):
    pq.write_table(pa.table({"x": [1]}), tmp_path / "a.parquet")
    with pytest.raises(bridge.BridgeError, match="filter"):
        bridge.read_parquet(str(tmp_path), filter="x > 1")
    with pytest.raises(bridge.BridgeError, match="path must be a string"):
        bridge.read_parquet(123)
    with pytest.raises(bridge.BridgeError, match="size"):
        bridge.read_images(str(tmp_path), size=(0, 3))


def test_csv_files_inferring_different_types_say_to_pass_a_schema(tmp_path):
    (tmp_path / "a.csv").write_text("a,b\n1,x\n2,y\n")
    (tmp_path / "b.csv").write_text("a,b\n007,z\nabc,w\n")  # column a infers as int64 in one file, string in the other
    from bridge.errors import SchemaMismatchError

    with pytest.raises(SchemaMismatchError, match="a: int64") as info:
        bridge.read_csv(str(tmp_path), override_num_blocks=1).take_all()
    assert "schema=" in str(info.value).split("Hint:")[1]
    typed = bridge.read_csv(str(tmp_path), schema=pa.schema([("a", pa.string()), ("b", pa.string())]))
    assert sorted(r["a"] for r in typed.take_all()) == ["007", "1", "2", "abc"]  # as written, nothing parsed away


def test_json_value_of_another_kind_names_column_and_line(tmp_path):
    # pyarrow says "Column(/a) changed from number to string in row N", N counted within one of its blocks,
    # under a hint about JSON lines the file already is.
    lines = [f'{{"a": {i}, "b": "x"}}' for i in range(150_000)] + ['{"a": "oops", "b": "y"}']
    path = tmp_path / "rows.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(FileReadError, match=r"column 'a' of .*rows.jsonl' holds a string on line 150001 "
                                            r"where the rows before hold a number") as info:
        bridge.read_json(str(path)).materialize()
    assert "make every 'a' value a number or every one a string" in info.value.hint
    with pytest.raises(FileReadError, match=r"holds a string on line 150001 where schema= reads it as int64"):
        bridge.read_json(str(path), schema=pa.schema([("a", pa.int64()), ("b", pa.string())])).materialize()
    nested = tmp_path / "nested.jsonl"
    nested.write_text('{"s": {"k": 1}}\n{"s": null}\n{"s": {"k": [1]}}\n')
    with pytest.raises(FileReadError, match=r"column 's.k' of .* holds an array on line 3 where the rows before "
                                            r"hold a number"):
        bridge.read_json(str(nested)).materialize()
