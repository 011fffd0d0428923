"""Modin-on-Ray <-> Dataset: index, dtypes, partitions, lifetime."""

from __future__ import annotations

import gc

import numpy as np
import pandas as pd
import pytest

import bridge

pytest.importorskip("modin")


@pytest.fixture(scope="module")
def mpd():
    import modin.config as cfg

    cfg.Engine.put("ray")  # uses the Ray the test session already started
    import modin.pandas as mpd

    return mpd


def _typed_frame(n=10):
    return pd.DataFrame(
        {
            "i": np.arange(n),
            "cat": pd.Categorical(list("ab" * (n // 2))),
            "nullable": pd.array([1, None] * (n // 2), dtype="Int64"),
            "ts": pd.date_range("2024-03-30", periods=n, freq="h", tz="Europe/Paris"),
            "s": [f"v{k}" for k in range(n)],
        },
        index=pd.Index(np.arange(n) * 3, name="key"),
    )


def test_index_and_dtypes_survive_the_round_trip(mpd):
    pdf = _typed_frame()
    ds = bridge.from_modin(mpd.DataFrame(pdf))
    schema = ds.schema()
    assert str(schema.field("ts").type) == "timestamp[ns, tz=Europe/Paris]"
    assert "key" in schema.names
    back = ds.to_modin()
    pd.testing.assert_frame_equal(back._to_pandas(), pdf)


def test_default_index_and_known_row_lengths(mpd):
    ds = bridge.range(90, override_num_blocks=3)
    mdf = ds.to_modin()
    frame = mdf._query_compiler._modin_frame
    assert frame._row_lengths_cache == [30, 30, 30]  # given to Modin, not computed by it
    assert mdf.index.equals(pd.RangeIndex(90))
    assert int(mdf["id"].sum()) == sum(range(90))


def test_dataset_stays_valid_after_the_modin_frame_is_deleted(mpd):
    mdf = mpd.DataFrame({"x": np.arange(1000)})
    ds = bridge.from_modin(mdf)
    del mdf
    gc.collect()
    assert ds.count() == 1000 and ds.to_arrow().column("x").to_pylist()[-1] == 999


def test_series_and_empty_frames(mpd):
    ds = bridge.from_modin(mpd.Series([1, 2, 3], name="v"))
    assert [r["v"] for r in ds.take_all()] == [1, 2, 3]
    empty = bridge.from_pandas(pd.DataFrame({"x": pd.Series([], dtype="float64")})).to_modin()
    assert list(empty.columns) == ["x"] and len(empty) == 0


def test_many_partitions_keep_order(mpd):
    ds = bridge.range(2000, override_num_blocks=20)
    mdf = ds.to_modin()
    assert mdf["id"].tolist() == list(range(2000))
    again = bridge.from_modin(mdf)
    assert [r["id"] for r in again.take_all()] == list(range(2000))
