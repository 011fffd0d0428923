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


def test_to_modin_dtypes_are_the_partitions_own_with_categories_in_order(mpd):
    """Modin computed the dtypes from the partitions when asked, and its reduction sorted a categorical's
    categories: an ordered [low, mid, high] became [high, low, mid]. They are the partitions' dtypes now."""
    pdf = pd.DataFrame({
        "level": pd.Categorical(["high", "low", "mid", "low"] * 3, categories=["low", "mid", "high"], ordered=True),
        "tag": pd.Categorical(list("zyxw") * 3, categories=list("zyxw")),
        "n": pd.array([1, None, 3] * 4, dtype="Int64"),
        "s": [f"v{i}" for i in range(12)],
    })
    mdf = bridge.from_pandas(pdf).repartition(3).to_modin()
    assert mdf._query_compiler._modin_frame._partitions.shape[0] == 3
    pd.testing.assert_series_equal(mdf.dtypes, pdf.dtypes)
    assert list(mdf.dtypes["level"].categories) == ["low", "mid", "high"] and mdf.dtypes["level"].ordered
    assert list(mdf.dtypes["tag"].categories) == list("zyxw")  # (unordered dtypes compare equal in any order)
    pd.testing.assert_frame_equal(mdf._to_pandas(), pdf)


def test_to_modin_of_blocks_of_two_types_leaves_the_dtypes_to_modin(mpd):
    """Blocks of int64 and float64 (a union): the first block's dtype is not every partition's, so Modin is
    not told it (it said int64, and astype(int64) left 2.5 as it was)."""
    import pyarrow as pa

    ds = bridge.from_blocks([pa.table({"x": [1, 2]})]).union(bridge.from_blocks([pa.table({"x": [2.5]})]))
    mdf = ds.to_modin()
    assert str(mdf.dtypes["x"]) == "float64" and mdf.select_dtypes("integer").columns.tolist() == []
    assert mdf.astype({"x": "int64"})["x"]._to_pandas().tolist() == [1, 2, 2]


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
    # Collected before anything asked for its dtypes, an empty frame's columns came back as object.
    filtered = bridge.from_pandas(pd.DataFrame({"i": [1, 2], "u": pd.Series([3, 4], dtype="uint8")}))
    collected = filtered.filter(lambda r: False).to_modin()._to_pandas()
    assert collected.dtypes.to_dict() == {"i": np.dtype("int64"), "u": np.dtype("uint8")}, collected.dtypes
    for frame in (mpd.DataFrame({"x": pd.Series([], dtype="float64")}), mpd.DataFrame({"x": [1.5, 2.5]}).iloc[:0]):
        back = bridge.from_modin(frame)
        assert back.count() == 0 and back.schema().names == ["x"], back.schema()


def test_many_partitions_keep_order(mpd):
    ds = bridge.range(2000, override_num_blocks=20)
    mdf = ds.to_modin()
    assert mdf["id"].tolist() == list(range(2000))
    again = bridge.from_modin(mdf)
    assert [r["id"] for r in again.take_all()] == list(range(2000))


def _same_as_through_pandas(mdf) -> bridge.Dataset:
    """from_modin(mdf), checked against from_pandas of the same frame collected by Modin itself."""
    ds = bridge.from_modin(mdf)
    expected = bridge.from_pandas(mdf._to_pandas()).to_arrow()
    got = ds.to_arrow()
    assert got.schema.equals(expected.schema, check_metadata=False), (got.schema, expected.schema)
    assert got.equals(expected)
    return ds


def test_from_modin_reads_the_partition_grid_without_unwrapping(mpd):
    from raybridge_adapters.modin_adapter import _partition_grid

    mdf = mpd.DataFrame(_typed_frame(40).reset_index())
    grid = _partition_grid(mdf)
    assert grid is not None, "Modin's partition internals moved: from_modin now takes the slower unwrap path"
    assert sum(len(index) for index, _, _ in grid) == 40
    _same_as_through_pandas(mdf)


def test_from_modin_applies_the_labels_modin_holds_back(mpd):
    pdf = _typed_frame(40)
    mdf = mpd.DataFrame(pdf)
    filtered = mdf[mdf["i"] % 3 == 0]  # a new index, partitions filtered in place
    ds = _same_as_through_pandas(filtered)
    assert ds.to_arrow().column("key").to_pylist() == list(pdf.index[pdf["i"] % 3 == 0])
    renamed = mpd.DataFrame(pdf.reset_index(drop=True)).rename(columns={"i": "j", "s": "t"})
    ds = _same_as_through_pandas(renamed)
    assert ds.schema().names == ["j", "cat", "nullable", "ts", "t"]
    shifted = mpd.DataFrame({"x": np.arange(30)}, index=pd.RangeIndex(100, 130, name=None))
    assert [r["x"] for r in _same_as_through_pandas(shifted).take_all()] == list(range(30))


def test_from_modin_joins_column_partitions_in_order(mpd):
    import modin.config as cfg

    before = cfg.MinColumnPartitionSize.get(), cfg.NPartitions.get()
    cfg.MinColumnPartitionSize.put(2)
    cfg.NPartitions.put(3)
    try:
        pdf = pd.DataFrame({f"c{k}": np.arange(50) * k for k in range(9)})
        pdf["s"] = [f"row{r}" for r in range(50)]
        mdf = mpd.DataFrame(pdf)
        shape = mdf._query_compiler._modin_frame._partitions.shape
        assert shape[1] > 1, shape  # several column partitions: the conversion task joins them
        ds = _same_as_through_pandas(mdf)
        assert ds.schema().names == list(pdf.columns)
        assert ds.num_blocks() == shape[0]
    finally:
        cfg.MinColumnPartitionSize.put(before[0])
        cfg.NPartitions.put(before[1])


def _partition_refs(mdf) -> list:
    return [row[0].list_of_blocks[0] for row in mdf._query_compiler._modin_frame._partitions]


def test_to_modin_partitions_are_read_back_as_pandas_and_freed_with_the_frame(mpd):
    """Each partition is stored as its block's Arrow buffers and read back as the frame pandas would
    give (numeric columns read-only, as Ray's stored frames are); the blocks outlive the Dataset while
    the Modin frame holds them, and go when it goes (a block referenced from inside the partitions
    was kept alive by Ray after Modin's tasks had read them)."""
    import time

    import ray

    n = 60_000  # 480 kB a column: the blocks are in the shared object store, not inlined
    pdf = pd.DataFrame({"i": np.arange(n), "f": np.linspace(0, 1, n), "s": [f"v{k % 7}" for k in range(n)]})
    ds = bridge.from_pandas(pdf, override_num_blocks=3)
    mdf = ds.to_modin()
    layout = ds.block_layout()
    parts = _partition_refs(mdf)
    assert len(parts) == len(layout.blocks) == 3
    for part, start, rows in zip(parts, layout.starts, [n for _, n in layout.blocks]):
        frame = ray.get(part)
        pd.testing.assert_frame_equal(frame, pdf.iloc[start:start + rows])
        assert not frame["i"].to_numpy().flags.writeable
    block_ids = {ref.hex().encode() for ref, _ in layout.blocks}
    del ds, layout, parts, part, frame
    gc.collect()
    pd.testing.assert_frame_equal(mdf._to_pandas(), pdf)
    assert int(mdf["i"].sum()) == int(pdf["i"].sum())
    assert mdf.groupby("s")["f"].count()._to_pandas().equals(pdf.groupby("s")["f"].count())
    del mdf
    core = ray._private.worker.global_worker.core_worker
    deadline = time.monotonic() + 10
    while block_ids & set(core.get_all_reference_counts()) and time.monotonic() < deadline:
        gc.collect()
        time.sleep(0.1)
    assert not block_ids & set(core.get_all_reference_counts()), "the blocks outlived the Modin frame"


def test_modin_operations_on_partitions_read_in_place(mpd):
    """Modin's own tasks read the partitions (read-only numeric columns) and write new ones."""
    pdf = _typed_frame(40).reset_index()
    pdf["f"] = np.linspace(-1, 1, 40)
    mdf = bridge.from_pandas(pdf, override_num_blocks=4).to_modin()
    expected = pdf.copy()
    mdf["i"] += 1
    expected["i"] += 1
    mdf["f"] = mdf["f"].where(mdf["f"] > 0)
    expected["f"] = expected["f"].where(expected["f"] > 0)
    mdf.fillna({"f": 0.0}, inplace=True)
    expected.fillna({"f": 0.0}, inplace=True)
    pd.testing.assert_frame_equal(mdf._to_pandas(), expected)
    pd.testing.assert_frame_equal(mdf.sort_values(["f", "i"], ascending=False)._to_pandas(),
                                  expected.sort_values(["f", "i"], ascending=False))
    pd.testing.assert_series_equal(mdf.groupby("s")["i"].sum()._to_pandas(), expected.groupby("s")["i"].sum())
    pd.testing.assert_frame_equal(bridge.from_modin(mdf).to_pandas(), expected)
