"""Frames from to_pandas that the user edited, and pandas extension columns made in Ray workers.

to_pandas leaves the Arrow schema in ``df.attrs`` and pandas copies attrs through edits: a column
made naive with ``tz_localize(None)`` came back shifted by the old zone's offset (12:00 -> 14:00
Berlin), ``astype(float)`` and categories made strings were undone.  And a driver that had only
fetched blocks Ray workers made read pandas' Interval columns as dicts.
"""

from __future__ import annotations

import datetime as dt
import subprocess
import sys

import pandas as pd

import bridge


def _made_by_to_pandas() -> pd.DataFrame:
    src = pd.DataFrame({
        "t": pd.to_datetime(["2020-06-01 12:00"]).tz_localize("Europe/Berlin"),
        "i": pd.array([1], "Int64"),
        "c": pd.Categorical(["a"]),
        "d": [dt.date(2020, 1, 1)],
    })
    return bridge.from_pandas(src).to_pandas()


def test_an_unedited_frame_keeps_every_type_from_attrs():
    df = _made_by_to_pandas()
    schema = bridge.from_pandas(df).schema()
    assert str(schema.field("t").type) == "timestamp[ns, tz=Europe/Berlin]"
    assert str(schema.field("c").type).startswith("dictionary<values=string")
    assert str(schema.field("d").type) == "date32[day]"


def test_a_timestamp_made_naive_or_aware_since_to_pandas_keeps_its_wall_time():
    df = _made_by_to_pandas()
    df["t"] = df["t"].dt.tz_localize(None)  # the wall time, naive
    back = bridge.from_pandas(df).to_pandas()
    assert back["t"].iloc[0] == pd.Timestamp("2020-06-01 12:00") and back["t"].dt.tz is None
    assert str(back["c"].dtype) == "category" and str(back["i"].dtype) == "Int64"  # the rest as recorded
    naive = bridge.from_pandas(pd.DataFrame({"t": pd.to_datetime(["2020-06-01 12:00"])})).to_pandas()
    naive["t"] = naive["t"].dt.tz_localize("Asia/Tokyo")
    again = bridge.from_pandas(naive).to_pandas()
    assert again["t"].iloc[0] == pd.Timestamp("2020-06-01 12:00", tz="Asia/Tokyo")


def test_pandas_extension_types_are_registered_before_blocks_are_read():
    script = (
        "import sys, pandas, pyarrow as pa\n"
        "from bridge.arrow_values import register_pandas_extension_types\n"
        "meta = {b'ARROW:extension:name': b'pandas.interval',\n"
        "        b'ARROW:extension:metadata': b'{\"subtype\": \"int64\", \"closed\": \"right\"}'}\n"
        "storage = pa.struct([('left', pa.int64()), ('right', pa.int64())])\n"
        "raw = pa.schema([pa.field('iv', storage, metadata=meta)]).serialize()\n"
        "assert pa.ipc.read_schema(pa.py_buffer(raw)).field('iv').type == storage  # not known yet\n"
        "register_pandas_extension_types()\n"
        "got = pa.ipc.read_schema(pa.py_buffer(raw)).field('iv').type\n"
        "assert isinstance(got, pa.ExtensionType) and got.extension_name == 'pandas.interval', got\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                         env={**__import__("os").environ, "PYTHONPATH": "."})
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr
