"""Writers and readers of text files that changed or refused values a user expects to keep.

Each case failed before: a zoned timestamp whose UTC offset has seconds (local mean time, Amsterdam
before 1937) came back shifted from CSV and unreadable from JSON; a duration, time or map inside a
list or struct could not be written as JSON (and the error blamed the disk); ``write_csv``'s
documented ``write_options=`` failed to start; ``write_numpy`` dropped a time zone and gave a wrong
reason for text; a README beside Parquet files broke ``read_parquet`` of the directory; a ``.tsv``
file was split on commas.
"""

from __future__ import annotations

import datetime as dt
import glob
import os

import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest

import bridge
from bridge.errors import UnsupportedTypeError

UTC = dt.timezone.utc
INSTANTS = [dt.datetime(1850, 6, 1, 12, tzinfo=UTC), dt.datetime(1937, 1, 1, tzinfo=UTC), None,
            dt.datetime(2024, 1, 1, tzinfo=UTC)]


@pytest.mark.parametrize("tz", ["Europe/Amsterdam", "America/New_York", "Asia/Kolkata"])
@pytest.mark.parametrize("unit", ["s", "us", "ns"])
@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_zoned_timestamps_with_offsets_in_seconds_round_trip(tmp_path, tz, unit, fmt):
    t = pa.table({"ts": pa.array(INSTANTS, pa.timestamp(unit, tz))})
    getattr(bridge.from_arrow(t), f"write_{fmt}")(str(tmp_path / "d"))
    back = getattr(bridge, f"read_{fmt}")(str(tmp_path / "d"), schema=t.schema).to_arrow()
    assert back.equals(t)


def test_a_zone_of_whole_minute_offsets_is_still_written_in_local_time(tmp_path):
    t = pa.table({"ts": pa.array([dt.datetime(2024, 1, 1, tzinfo=UTC)], pa.timestamp("us", "Europe/Amsterdam"))})
    bridge.from_arrow(t).write_csv(str(tmp_path / "d"))
    (text,) = [open(p).read() for p in glob.glob(str(tmp_path / "d" / "*.csv"))]
    assert "2024-01-01 01:00:00.000000+0100" in text


def test_durations_times_and_maps_nested_in_lists_and_structs_round_trip_through_json(tmp_path):
    t = pa.table({
        "durs": pa.array([[1, None], None, []], pa.list_(pa.duration("s"))),
        "st": pa.array([{"d": 5, "t": 3}, None, {"d": None, "t": 86_399_999_999_999}],
                       pa.struct([("d", pa.duration("ms")), ("t", pa.time64("ns"))])),
        "m": pa.array([[("a", 5)], None, []], pa.map_(pa.string(), pa.duration("us"))),
        "lm": pa.array([[[("a", 1)]], None, [None]], pa.list_(pa.map_(pa.string(), pa.int32()))),
    })
    bridge.from_arrow(t).write_json(str(tmp_path / "d"))
    assert bridge.read_json(str(tmp_path / "d"), schema=t.schema).to_arrow().equals(t)


def test_write_csv_takes_pyarrow_write_options(tmp_path):
    opts = pcsv.WriteOptions(delimiter=";", include_header=False)
    bridge.range(3).write_csv(str(tmp_path / "a"), write_options=opts)
    (text,) = [open(p).read() for p in glob.glob(str(tmp_path / "a" / "*.csv"))]
    assert text.splitlines() == ["0", "1", "2"]
    bridge.from_items([{"a": 1, "b": "x"}]).write_csv(str(tmp_path / "b"), write_options=pcsv.WriteOptions(delimiter=";"))
    back = bridge.read_csv(str(tmp_path / "b"), parse_options=pcsv.ParseOptions(delimiter=";")).take_all()
    assert back == [{"a": 1, "b": "x"}]


@pytest.mark.parametrize(("column", "match"), [
    (pa.array([1], pa.timestamp("us", "Asia/Tokyo")), r"holds no time zone.*Hint: cast it to timestamp\('us'\)"),
    (pa.array(["x", "yy"]), r"holds text, bytes or decimals"),
    (pa.array([1, None]), r"has 1 null row"),
    (pa.array([[1], [1, 2]]), r"has lists of different lengths"),
], ids=["zoned", "text", "nulls", "ragged"])
def test_write_numpy_says_why_a_column_cannot_be_written(tmp_path, column, match):
    with pytest.raises(UnsupportedTypeError, match=f"(?s){match}"):
        bridge.from_arrow(pa.table({"a": column})).write_numpy(str(tmp_path / "d"), column="a")


def test_read_parquet_of_a_directory_skips_a_readme_but_reads_oddly_named_parquet(tmp_path):
    d = str(tmp_path / "d")
    bridge.range(5).write_parquet(d)
    with open(os.path.join(d, "README.md"), "w") as f:
        f.write("# what these files are\n")
    pq.write_table(pa.table({"id": [100]}), os.path.join(d, "extra.snappy"))  # Parquet under another name
    pq.write_table(pa.table({"id": [200]}), os.path.join(d, "000000_0"))  # Hive's names have no extension
    assert sorted(r["id"] for r in bridge.read_parquet(d).take_all()) == [0, 1, 2, 3, 4, 100, 200]
    with pytest.raises(bridge.BridgeError, match="README.md"):  # named explicitly: read, and refused
        bridge.read_parquet(os.path.join(d, "README.md")).take_all()


def test_a_tsv_file_is_read_with_tabs(tmp_path):
    path = tmp_path / "t.tsv"
    path.write_text("a\tb\n1\tx,y\n2\tz\n")
    assert bridge.read_csv(str(tmp_path)).take_all() == [{"a": 1, "b": "x,y"}, {"a": 2, "b": "z"}]


def test_a_tsv_gz_file_is_read_with_tabs_too(tmp_path):
    import gzip

    with gzip.open(tmp_path / "t.tsv.gz", "wt") as f:
        f.write("a\tb\n1\t2\n")
    assert bridge.read_csv(str(tmp_path)).take_all() == [{"a": 1, "b": 2}]


def test_a_dictionary_of_nanosecond_times_keeps_its_digits_in_json(tmp_path):
    t = pa.table({"t": pa.array([1, 86_399_999_999_999, 1], pa.time64("ns")).dictionary_encode()})
    bridge.from_arrow(t).write_json(str(tmp_path / "d"))
    back = bridge.read_json(str(tmp_path / "d"), schema=pa.schema([("t", pa.time64("ns"))])).to_arrow()
    assert back.column("t").to_pylist() == t.column("t").cast(pa.time64("ns")).to_pylist()
    assert back.column("t").cast(pa.int64()).to_pylist() == [1, 86_399_999_999_999, 1]


def test_a_directory_of_no_parquet_says_what_it_left_out(tmp_path):
    for i in range(3):
        (tmp_path / f"f{i}.json").write_text('{"x": 1}\n')
    with pytest.raises(bridge.BridgeError, match=r"(?s)3 file\(s\) there are not of the format.*file_extensions"):
        bridge.read_parquet(str(tmp_path))


def test_json_nan_and_infinities_round_trip_or_are_refused_with_allow_nan_false(tmp_path):
    ds = bridge.from_items([{"a": 1.0}, {"a": float("nan")}, {"a": float("inf")}, {"a": float("-inf")}])
    ds.write_json(str(tmp_path / "lenient"))
    back = [r["a"] for r in bridge.read_json(str(tmp_path / "lenient")).take_all()]
    assert back[0] == 1.0 and back[1] != back[1] and back[2:] == [float("inf"), float("-inf")]
    with pytest.raises(UnsupportedTypeError, match=r"column 'a' \(double\) holds NaN or an infinity") as info:
        ds.write_json(str(tmp_path / "strict"), allow_nan=False)
    assert "fillna" in info.value.hint and "cast it" not in info.value.hint
