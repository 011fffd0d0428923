"""Write/read round trips compared with Ray Data 2.60 and pyarrow (session 43).

Findings, each fixed here:

* A Dataset without rows written with ``write_parquet(partition_cols=...)`` wrote no file at all
  (no ``k=v`` directory can be named), so ``read_parquet`` of the directory raised "no files
  found".  Ray Data writes nothing either.  Now one file of no rows holding the full schema
  (partition columns included) is written at the top, with the layout's ``_common_metadata``:
  raybridge, Ray Data and pyarrow read the schema back with 0 rows, and a later append of rows
  reads back as usual.
* ``write_csv`` of a Dataset without columns wrote a 0-byte file that ``read_csv`` (and pyarrow)
  refuse ("Empty CSV file"); with rows but no columns the rows were silently lost.  Now no file
  is written for no rows and no columns (Ray Data writes nothing), and rows without columns are
  refused with an :class:`UnsupportedTypeError` and a hint.
* ``date64`` and ``time32[s]`` columns came back from Parquet as ``date32`` and ``time32[ms]``
  (Parquet has one date type and no seconds unit; Ray Data and pyarrow read them so too).  The
  Arrow schema pyarrow keeps in the file names the written type, and the stored days / whole
  seconds convert exactly: they now read back as written, as ``timestamp[s]`` already did.

And pinned (what a Dataset whose every block is empty writes; Ray Data 2.60 writes nothing, and
its read of the directory finds no file): Parquet a file of no rows with the schema, CSV the
header (names; a header says no types), JSON lines an empty file (``read_json(schema=...)``
restores the columns), ``.npy`` a 0-row array of the dtype and row shape.
"""

from __future__ import annotations

import datetime
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import bridge
from bridge.errors import UnsupportedTypeError

SCHEMA = pa.schema([("k", pa.int64()), ("d", pa.date32()), ("v", pa.string())])


def _empty_datasets() -> dict[str, bridge.Dataset]:
    rows = pa.table({"k": [1, 2], "d": [datetime.date(2024, 1, 1)] * 2, "v": ["a", "b"]}, schema=SCHEMA)
    return {
        "from_arrow": bridge.from_arrow(SCHEMA.empty_table()),
        "filter": bridge.from_arrow([rows, rows]).filter(lambda r: False),
        "map_batches": bridge.from_arrow([rows, rows]).map_batches(lambda b: {k: v[:0] for k, v in b.items()},
                                                                   batch_format="numpy"),
    }


# ------------------------------------------------------------------ write_parquet(partition_cols=) of no rows


@pytest.mark.parametrize("how", ["from_arrow", "filter"])
def test_partitioned_write_of_no_rows_keeps_the_schema_for_every_reader(tmp_path, how):
    out = str(tmp_path / "p")
    paths = _empty_datasets()[how].write_parquet(out, partition_cols=["k", "d"])
    assert paths == [f"{out}/part-00000.parquet"]
    assert sorted(os.listdir(out)) == ["_common_metadata", "part-00000.parquet"]
    back = bridge.read_parquet(out)
    assert back.schema() == SCHEMA and back.count() == 0 and back.take_all() == []
    table = pq.read_table(out)
    assert table.schema == SCHEMA and table.num_rows == 0


def test_rows_appended_after_a_partitioned_write_of_no_rows_read_back_typed(tmp_path):
    out = str(tmp_path / "p")
    _empty_datasets()["from_arrow"].write_parquet(out, partition_cols=["k", "d"])
    rows = pa.table({"k": [7], "d": [datetime.date(2024, 2, 29)], "v": ["x"]}, schema=SCHEMA)
    bridge.from_arrow(rows).write_parquet(out, partition_cols=["k", "d"], mode="append")
    back = bridge.read_parquet(out)
    assert {f.name: f.type for f in back.schema()} == {"k": pa.int64(), "d": pa.date32(), "v": pa.string()}
    assert back.take_all() == [{"v": "x", "k": 7, "d": datetime.date(2024, 2, 29)}]
    # Appending no rows to a directory holding data adds nothing.
    assert _empty_datasets()["filter"].write_parquet(out, partition_cols=["k", "d"], mode="append") == []
    assert bridge.read_parquet(out).count() == 1


# ------------------------------------------------------------------ write_csv without columns


def test_write_csv_without_columns_writes_no_file_a_reader_refuses(tmp_path):
    out = tmp_path / "c"
    assert bridge.from_items([]).write_csv(str(out)) == []
    assert os.listdir(out) == []


def test_write_csv_of_rows_without_columns_is_refused_not_lost(tmp_path):
    ds = bridge.from_items([{}, {}])
    assert ds.count() == 2
    with pytest.raises(UnsupportedTypeError, match=r"write_csv: write task 0 got 2 row\(s\) without columns") as info:
        ds.write_csv(str(tmp_path / "c"))
    assert "Hint: add a column first" in str(info.value)
    assert not any(p.is_file() for p in (tmp_path / "c").rglob("*"))


# ------------------------------------------------------------------ what a Dataset of empty blocks writes


@pytest.mark.parametrize("how", ["from_arrow", "filter", "map_batches"])
def test_every_format_writes_one_file_of_no_rows_that_reads_back(tmp_path, how):
    ds = _empty_datasets()[how]
    parquet = ds.write_parquet(str(tmp_path / "pq"))
    assert len(parquet) == 1
    back = bridge.read_parquet(str(tmp_path / "pq"))
    assert back.schema() == SCHEMA and back.count() == 0

    ds.write_csv(str(tmp_path / "csv"))
    assert (tmp_path / "csv" / "part-00000.csv").read_text() == '"k","d","v"\n'
    back = bridge.read_csv(str(tmp_path / "csv"))
    assert back.schema().names == ["k", "d", "v"] and back.count() == 0  # the names; no types in a header
    typed = bridge.read_csv(str(tmp_path / "csv"), schema=SCHEMA)
    assert typed.schema() == SCHEMA and typed.count() == 0

    ds.write_json(str(tmp_path / "json"))
    assert (tmp_path / "json" / "part-00000.json").read_bytes() == b""
    assert bridge.read_json(str(tmp_path / "json")).count() == 0
    typed = bridge.read_json(str(tmp_path / "json"), schema=SCHEMA)
    assert typed.schema() == SCHEMA and typed.count() == 0

    ds.write_numpy(str(tmp_path / "npy"), column="k")
    arr = np.load(tmp_path / "npy" / "part-00000.npy")
    assert arr.dtype == np.int64 and arr.shape == (0,)
    back = bridge.read_numpy(str(tmp_path / "npy"))
    assert back.schema().field("data").type == pa.int64() and back.count() == 0


def test_write_numpy_of_no_rows_keeps_the_tensor_row_shape(tmp_path):
    ds = bridge.range_tensor(4, shape=(2, 3)).filter(lambda r: False)
    ds.write_numpy(str(tmp_path / "npy"), column="data")
    arr = np.load(tmp_path / "npy" / "part-00000.npy")
    assert arr.shape == (0, 2, 3) and arr.dtype == np.int64
    back = bridge.read_numpy(str(tmp_path / "npy"))
    assert back.schema().field("data").type == pa.fixed_shape_tensor(pa.int64(), [2, 3]) and back.count() == 0


# ------------------------------------------------------------------ Parquet: date64 and time32[s]


def test_date64_and_time32_seconds_read_back_from_parquet_as_written(tmp_path):
    table = pa.table({
        "d": pa.array([datetime.date(2020, 2, 29), None, datetime.date(1970, 1, 1)], pa.date64()),
        "t": pa.array([datetime.time(23, 59, 59), None, datetime.time(0)], pa.time32("s")),
        "ts": pa.array([1, None, -1], pa.timestamp("s", tz="UTC")),
        "keep": pa.array([datetime.time(1, 2, 3, 4000), None, datetime.time(0)], pa.time32("ms")),
    })
    bridge.from_arrow([table.slice(0, 2), table.slice(2)]).write_parquet(str(tmp_path))
    assert pq.read_table(tmp_path).schema.field("d").type == pa.date32()  # pyarrow's (and Ray Data's) read
    back = bridge.read_parquet(str(tmp_path))
    assert back.schema() == table.schema
    assert back.to_arrow().equals(table)
    assert back.take_all()[0] == {"d": datetime.date(2020, 2, 29), "t": datetime.time(23, 59, 59),
                                  "ts": datetime.datetime(1970, 1, 1, 0, 0, 1, tzinfo=datetime.timezone.utc),
                                  "keep": datetime.time(1, 2, 3, 4000)}
    only = bridge.read_parquet(str(tmp_path), columns=["t"])
    assert only.schema() == pa.schema([("t", pa.time32("s"))])
    assert [r["t"] for r in only.take_all()] == [datetime.time(23, 59, 59), None, datetime.time(0)]


def test_date64_and_seconds_nested_in_lists_structs_and_maps_read_back_as_written(tmp_path):
    day = datetime.date(2020, 2, 29)
    table = pa.table({
        "l": pa.array([[day, None], None, []], pa.list_(pa.date64())),
        "s": pa.array([{"d": day, "t": datetime.time(1, 2, 3)}, None, {"d": None, "t": None}],
                      pa.struct([("d", pa.date64()), ("t", pa.time32("s"))])),
        "m": pa.array([[(day, 1)], None, []], pa.map_(pa.date64(), pa.int64())),
        "ll": pa.array([[[1, -1]], None, [[]]], pa.list_(pa.list_(pa.timestamp("s", tz="UTC")))),
        "plain": pa.array([[1], None, [2]], pa.list_(pa.int64())),
    })
    bridge.from_arrow(table).write_parquet(str(tmp_path))
    # pyarrow (and Ray Data) read the nested ones as date32 / time32[ms] / timestamp[ms]
    assert pq.read_table(tmp_path).schema.field("l").type.value_type == pa.date32()
    back = bridge.read_parquet(str(tmp_path))
    assert back.schema() == table.schema
    assert back.to_arrow().equals(table)
    assert back.take_all()[0]["s"] == {"d": day, "t": datetime.time(1, 2, 3)}
    only = bridge.read_parquet(str(tmp_path), columns=["ll"])
    assert only.schema().field("ll").type == table.schema.field("ll").type


def test_date32_and_time32_ms_written_as_such_are_not_changed(tmp_path):
    table = pa.table({"d": pa.array([datetime.date(2024, 1, 1)], pa.date32()),
                      "t": pa.array([datetime.time(0, 0, 1, 500000)], pa.time32("ms"))})
    bridge.from_arrow(table).write_parquet(str(tmp_path))
    back = bridge.read_parquet(str(tmp_path))
    assert back.schema() == table.schema
    assert back.take_all() == [{"d": datetime.date(2024, 1, 1), "t": datetime.time(0, 0, 1, 500000)}]
