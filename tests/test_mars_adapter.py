"""Xorbits (Mars) <-> Dataset."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import bridge

pytest.importorskip("xorbits")


@pytest.fixture(scope="module")
def xpd():
    from tests.constructors_engines import ensure_xorbits

    ensure_xorbits()
    import xorbits.pandas as xpd

    return xpd


def test_round_trip_keeps_values_index_and_order(xpd):
    pdf = pd.DataFrame({"x": np.arange(25), "s": [f"s{i}" for i in range(25)]},
                       index=pd.Index(np.arange(25) + 100, name="key"))
    ds = bridge.from_mars(xpd.DataFrame(pdf, chunk_size=7), batch_size=10)
    assert ds.num_blocks() == 3 and ds.count() == 25
    back = ds.to_mars().to_pandas()
    pd.testing.assert_frame_equal(back, pdf)


def test_default_index_is_contiguous_after_to_mars(xpd):
    ds = bridge.range(30, override_num_blocks=3)
    back = ds.to_mars().to_pandas()
    assert back.index.tolist() == list(range(30)) and back["id"].tolist() == list(range(30))


def test_bad_batch_size_is_refused(xpd):
    with pytest.raises(bridge.BridgeError, match="Hint:"):
        bridge.from_mars(xpd.DataFrame({"x": [1]}), batch_size=0)


def test_round_trip_restores_the_types_pandas_cannot_name(xpd):
    # Xorbits drops DataFrame.attrs: to_mars remembers the schema for the frame it returns.
    import pyarrow as pa

    t = pa.table({"s": pa.array(["a", None], pa.large_string()),
                  "c": pa.array(["x", "y"]).dictionary_encode(),
                  "d": pa.array([None, None], pa.date32())})
    assert bridge.from_mars(bridge.from_arrow(t).to_mars()).to_arrow().equals(t)
    empty = t.slice(0, 0)
    assert bridge.from_mars(bridge.from_arrow(empty).to_mars()).to_arrow().schema == t.schema


def test_a_frame_changed_in_place_is_read_by_its_own_dtypes(xpd):
    import pyarrow as pa

    x = bridge.from_arrow(pa.table({"s": pa.array(["a", "b"], pa.large_string())})).to_mars()
    x["s"] = 1  # the remembered schema no longer describes the frame
    assert bridge.from_mars(x).to_arrow().schema == pa.schema([("s", pa.int64())])


def test_a_range_index_that_is_not_the_default_keeps_its_labels(xpd):
    # Each batch holds a RangeIndex piece: alone it looked like a default index and was dropped.
    p = pd.DataFrame({"a": np.arange(6)}, index=pd.RangeIndex(5, 11))
    ds = bridge.from_mars(xpd.DataFrame(p, chunk_size=2), batch_size=3)
    assert ds.to_pandas().index.tolist() == list(range(5, 11))
    assert bridge.from_pandas(p).to_pandas().index.tolist() == list(range(5, 11))  # the same as from_pandas
    default = bridge.from_mars(xpd.DataFrame(pd.DataFrame({"a": np.arange(6)}), chunk_size=2), batch_size=3)
    assert default.schema().names == ["a"]


def test_several_blocks_with_zoned_times_and_lists_reach_xorbits(xpd):
    """Xorbits' concat of the block frames raised on a zoned datetime column (TypeError at once) and on
    an Arrow list column (NotImplementedError when computed): to_mars of such a Dataset failed."""
    import datetime

    import pyarrow as pa

    table = pa.table({"id": [1, 2, 3, 4],
                      "ts": pa.array([datetime.datetime(2020, 1, d) for d in range(1, 5)], pa.timestamp("us", "UTC")),
                      "l": [[1], [2], [], None]})
    for columns in (["id", "ts"], ["id", "l"]):
        ds = bridge.from_arrow(table.select(columns)).repartition(2)
        assert ds.num_blocks() == 2
        frame = ds.to_mars()
        assert frame.to_pandas()["id"].tolist() == [1, 2, 3, 4]
        back = bridge.from_mars(frame).to_arrow()
        assert back.equals(table.select(columns)) and back.schema.equals(table.select(columns).schema), back


def test_blocks_with_different_categories_make_one_categorical_in_xorbits(xpd):
    """Each block's own dictionary made its chunk's categories, and Xorbits' concat of chunks that disagree
    gave plain values (int64 / object here; the fidelity matrix's Categorical of ints with a null row came
    back float64, 2**53 + 1 changed). Every chunk gets every block's categories, as ``to_pandas`` has them."""
    big = 2**53 + 1
    ds = bridge.from_pandas([pd.DataFrame({"n": pd.Categorical([big, 0]), "s": pd.Categorical(["b", "a"])}),
                             pd.DataFrame({"n": pd.Categorical([-(2**62), None]), "s": pd.Categorical(["c", None])})])
    assert ds.num_blocks() == 2
    xdf = ds.to_mars()
    want = ds.to_pandas()
    assert [isinstance(xdf.dtypes[c], pd.CategoricalDtype) for c in ("n", "s")] == [True, True], xdf.dtypes
    pd.testing.assert_frame_equal(xdf.to_pandas(), want)
    assert want["n"].cat.categories.tolist() == [0, big, -(2**62)]
    assert bridge.from_mars(xdf).to_arrow().column("n").to_pylist() == [big, 0, -(2**62), None]
