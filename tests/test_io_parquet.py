"""read_parquet / write_parquet: round trips, splitting, projection and filter pushdown."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pds
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

import bridge
from bridge.plan.optimizer import optimize
from tests.io_helpers import CountingHandler, all_types_table


def _write_files(tmp_path, n_files=3, rows=1000, row_group_size=250):
    d = tmp_path / "pq"
    d.mkdir()
    for i in range(n_files):
        ids = np.arange(i * rows, (i + 1) * rows)
        t = pa.table({"id": ids, "x": ids * 0.5, "s": [f"r{v}" for v in ids]})
        pq.write_table(t, d / f"f{i}.parquet", row_group_size=row_group_size)
    return d


def test_round_trip_every_type(tmp_path):
    table = all_types_table()
    paths = bridge.from_arrow(table).write_parquet(str(tmp_path / "out"))
    assert paths == [str(tmp_path / "out" / "part-00000.parquet")]
    back = bridge.read_parquet(str(tmp_path / "out")).to_arrow()
    assert back.schema.equals(table.schema, check_metadata=False)
    assert back.equals(table)


def test_multi_block_round_trip_keeps_order_and_names(tmp_path):
    ds = bridge.range(1000, override_num_blocks=4)
    paths = ds.write_parquet(str(tmp_path / "o"))
    assert [p.rsplit("/", 1)[1] for p in paths] == [f"part-0000{i}.parquet" for i in range(4)]
    back = bridge.read_parquet(str(tmp_path / "o"))
    assert back.count() == 1000
    assert back.to_arrow().column("id").to_pylist() == list(range(1000))


def test_count_comes_from_footers_and_split_by_row_group(tmp_path):
    d = _write_files(tmp_path, n_files=2, rows=1000, row_group_size=100)
    ds = bridge.read_parquet(str(d))
    source = ds._plan.datasource
    assert source.exact_num_rows and source.estimate_num_rows() == 2000
    assert ds.count() == 2000
    # 20 row groups, forced into 8 tasks: a file is split across tasks.
    tasks = bridge.read_parquet(str(d), override_num_blocks=8)._plan.datasource.get_read_tasks(0)
    assert len(tasks) == 8
    assert sum(t.metadata.num_rows for t in tasks) == 2000
    rows = [b.num_rows for b in bridge.read_parquet(str(d), override_num_blocks=8)._blocks()]
    assert len(rows) == 8 and sum(rows) == 2000


def test_projection_pushdown_reads_fewer_bytes(tmp_path):
    d = _write_files(tmp_path, n_files=1, rows=200_000, row_group_size=50_000)
    ds = bridge.read_parquet(str(d)).select_columns(["id"])
    read = optimize(ds._plan).input  # select_columns handed to the source
    assert read.datasource.columns == ["id"]
    assert ds.schema().names == ["id"]

    def bytes_read(columns):
        handler = CountingHandler()
        src = bridge.read_parquet(str(d), columns=columns, filesystem=pafs.PyFileSystem(handler))._plan.datasource
        for task in src.get_read_tasks(0):
            list(task())
        return handler.bytes_read

    only_id, everything = bytes_read(["id"]), bytes_read(None)
    assert only_id < everything / 2


def test_filter_pushdown_prunes_row_groups(tmp_path):
    d = _write_files(tmp_path, n_files=3, rows=1000, row_group_size=250)  # 12 row groups, sorted ids
    ds = bridge.read_parquet(str(d), filter=pc.field("id") >= 2900)
    source = ds._plan.datasource
    assert len(source.units) == 1  # statistics leave one row group of 12
    assert not source.exact_num_rows
    assert ds.to_arrow().column("id").to_pylist() == list(range(2900, 3000))
    nothing = bridge.read_parquet(str(d), filter=pc.field("id") > 10**9)
    assert nothing.count() == 0 and nothing.columns() == ["id", "x", "s"]
    dnf = bridge.read_parquet(str(d), filter=[("id", "<", 3)], columns=["id"])
    assert dnf.take_all() == [{"id": 0}, {"id": 1}, {"id": 2}]

    handler = CountingHandler()
    pruned = bridge.read_parquet(str(d), filter=pc.field("id") >= 2900, filesystem=pafs.PyFileSystem(handler))
    for task in pruned._plan.datasource.get_read_tasks(0):
        list(task())
    assert set(handler.files_opened[-1:]) == {str(d / "f2.parquet")}


def test_hive_partitions_become_columns_and_prune_files(tmp_path):
    table = pa.table({"year": [2023, 2023, 2024, 2024], "v": [1, 2, 3, 4]})
    pds.write_dataset(table, tmp_path / "h", format="parquet", partitioning=["year"], partitioning_flavor="hive")
    ds = bridge.read_parquet(str(tmp_path / "h"))
    out = ds.to_arrow().sort_by("v")
    assert out.column("year").to_pylist() == [2023, 2023, 2024, 2024]
    only = bridge.read_parquet(str(tmp_path / "h"), filter=pc.field("year") == 2024)
    assert len({u.path for u in only._plan.datasource.units}) == 1
    assert sorted(r["v"] for r in only.take_all()) == [3, 4]
    flat = bridge.read_parquet(str(tmp_path / "h"), partitioning=None)
    assert flat.columns() == ["v"]


def test_limit_reads_only_leading_row_groups(tmp_path):
    d = _write_files(tmp_path, n_files=3, rows=1000, row_group_size=250)
    ds = bridge.read_parquet(str(d)).limit(10)
    read = optimize(ds._plan).input
    assert len(read.datasource.units) == 1
    assert [r["id"] for r in ds.take_all()] == list(range(10))


def test_glob_list_and_missing_column(tmp_path):
    d = _write_files(tmp_path, n_files=3, rows=10, row_group_size=10)
    assert bridge.read_parquet(str(d / "f[01].parquet")).count() == 20
    assert bridge.read_parquet([str(d / "f0.parquet"), str(d / "f2.parquet")]).count() == 20
    with pytest.raises(bridge.BridgeError, match=r"column\(s\) \['nope'\] not found"):
        bridge.read_parquet(str(d), columns=["nope"])


def test_fsspec_filesystem_accepted(tmp_path):
    fsspec = pytest.importorskip("fsspec")
    d = _write_files(tmp_path, n_files=2, rows=10, row_group_size=10)
    ds = bridge.read_parquet(str(d), filesystem=fsspec.filesystem("file"))
    assert ds.to_arrow().column("id").to_pylist() == list(range(20))
