"""Reads and writes that lost or shifted values, or refused for the wrong reason (session 53, from a hunt)."""

from __future__ import annotations

import datetime

import numpy as np
import pyarrow as pa
import pytest

import bridge
from bridge.errors import UnsupportedTypeError
from bridge.io.paths import FileReadError


@pytest.mark.parametrize("fmt, text", [("csv", "path,v\nmine,1\n"), ("json", '{"path": "mine", "v": 1}\n')])
def test_include_paths_refuses_a_file_that_has_a_path_column(tmp_path, fmt, text):
    """The table got two columns named path; the file's values were hidden behind the added one ('mine' gone),
    and select_columns(["path"]) failed with Arrow's KeyError. read_parquet refused already."""
    (tmp_path / f"b.{fmt}").write_text(text)
    read = getattr(bridge, f"read_{fmt}")
    with pytest.raises(FileReadError, match=r"(?s)file .*b\.\w+' already has a column named 'path', which "
                                            r"include_paths=True adds.*Hint: rename that column"):
        read(str(tmp_path), include_paths=True).take_all()
    assert read(str(tmp_path)).take_all() == [{"path": "mine", "v": 1}]


def test_read_json_with_a_schema_keeps_zone_offsets_apart(tmp_path):
    """pyarrow.json applied a "+09:00" offset to a column the schema gives no zone and dropped it (a naive
    midnight became 15:00 the day before), and read text without an offset into a zoned column as UTC;
    read_csv refuses both, and so does read_json now."""
    (tmp_path / "a.json").write_text('{"t": "2020-01-01T00:00:00+09:00"}\n')
    with pytest.raises(FileReadError, match=r"column 't': cannot read string as timestamp\[us\].*expected no zone"):
        bridge.read_json(str(tmp_path), schema=pa.schema([("t", pa.timestamp("us"))])).take_all()
    zoned = bridge.read_json(str(tmp_path), schema=pa.schema([("t", pa.timestamp("us", "UTC"))])).take_all()
    assert zoned[0]["t"] == datetime.datetime(2019, 12, 31, 15, tzinfo=datetime.timezone.utc)
    (tmp_path / "a.json").write_text('{"t": "2020-01-01T00:00:00"}\n')
    with pytest.raises(FileReadError, match=r"timestamp\[us, tz=UTC\].*expected a zone offset"):
        bridge.read_json(str(tmp_path), schema=pa.schema([("t", pa.timestamp("us", "UTC"))])).take_all()
    naive = bridge.read_json(str(tmp_path), schema=pa.schema([("t", pa.timestamp("ms"))])).take_all()
    assert naive == [{"t": datetime.datetime(2020, 1, 1)}]
    (tmp_path / "a.json").write_text('{"t": 1577836800}\n')  # a number: the message names the schema's type
    with pytest.raises(FileReadError, match=r"column 't' .* holds a number on line 1 where schema= reads it as "
                                            r"timestamp\[s\]"):
        bridge.read_json(str(tmp_path), schema=pa.schema([("t", pa.timestamp("s"))])).take_all()


def test_write_json_then_read_json_keeps_every_timestamp_unit_and_zone(tmp_path):
    when = [datetime.datetime(1, 1, 1), datetime.datetime(1969, 12, 31, 23, 59, 59), None,
            datetime.datetime(9999, 12, 30, 23, 59, 59, 123000)]
    columns = {f"{unit}_{zone}": pa.array(when, pa.timestamp("us")).cast(pa.timestamp(unit)).cast(
        pa.timestamp(unit, None if zone == "naive" else zone)) for unit in ("ms", "us") for zone in
        ("naive", "UTC", "Asia/Tokyo")}
    columns["ns_zone"] = pa.array([0, -1, 2**62, None], pa.timestamp("ns", "America/New_York"))
    columns["s_naive"] = pa.array([-62135596800, 0, None, 1], pa.timestamp("s"))
    table = pa.table(columns)
    bridge.from_arrow(table).write_json(str(tmp_path))
    assert bridge.read_json(str(tmp_path), schema=table.schema).to_arrow().equals(table)


def test_write_numpy_of_fixed_size_lists_and_times(tmp_path):
    """Fixed-size lists (nested too) were refused as "rows of different shapes": every row has one shape."""
    nested = pa.array([[[1, 2], [3, 4]], [[5, 6], [7, 8]], [[9, 10], [11, 12]]],
                      pa.list_(pa.list_(pa.int8(), 2), 2)).slice(1)
    ds = bridge.from_arrow(pa.table({"f": nested}))
    ds.write_numpy(str(tmp_path / "n"), column="f")
    back = np.concatenate([np.load(p) for p in sorted((tmp_path / "n").iterdir())])
    assert back.dtype == np.int8 and back.tolist() == [[[5, 6], [7, 8]], [[9, 10], [11, 12]]]
    same = bridge.from_arrow(pa.table({"l": pa.array([[1, 2], [3, 4]])}))  # lists of one length: dense too
    same.write_numpy(str(tmp_path / "l"), column="l")
    assert np.concatenate([np.load(p) for p in sorted((tmp_path / "l").iterdir())]).tolist() == [[1, 2], [3, 4]]
    for values, why in ((pa.array([[1, None], [3, 4]], pa.list_(pa.int64(), 2)), r"1 null value\(s\) inside its lists"),
                        (pa.array([["a", "b"]], pa.list_(pa.string(), 2)), r"holds lists of string"),
                        (pa.array([[1, 2], [3]]), r"has lists of different lengths")):
        with pytest.raises(UnsupportedTypeError, match=why):
            bridge.from_arrow(pa.table({"v": values})).write_numpy(str(tmp_path / "v"), column="v")
    times = bridge.from_arrow(pa.table({"t": pa.array([1, 2], pa.time32("s"))}))
    with pytest.raises(UnsupportedTypeError, match=r"(?s)column 't' \(time32\[s\]\) holds times of day.*Hint: write "
                                                   r"the count since midnight"):
        times.write_numpy(str(tmp_path / "t"), column="t")
