"""Writes: deterministic names, save modes, atomicity (no partial file a later read would see)."""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.fs as pafs
import pytest

import bridge
from bridge.io.file_datasink import atomic_write
from bridge.io.paths import FileWriteError


def test_deterministic_names_and_overwrite(tmp_path):
    out = str(tmp_path / "o")
    first = bridge.range(30, override_num_blocks=3).write_csv(out)
    again = bridge.range(30, override_num_blocks=3).write_csv(out)
    assert first == again == [f"{out}/part-0000{i}.csv" for i in range(3)]
    # A smaller rewrite leaves no stale part of the earlier one behind.
    bridge.range(5, override_num_blocks=1).write_csv(out)
    assert sorted(os.listdir(out)) == ["part-00000.csv"]
    assert bridge.read_csv(out).count() == 5


def test_modes(tmp_path):
    out = str(tmp_path / "m")
    bridge.range(4, override_num_blocks=2).write_parquet(out)
    with pytest.raises(FileWriteError, match="already holds"):
        bridge.range(4).write_parquet(out, mode="error")
    appended = bridge.range(4).write_parquet(out, mode="append")  # new names: part-00000 is kept
    assert len(appended) == 1 and os.path.basename(appended[0]).startswith("part-")
    bridge.range(4).write_parquet(out, mode="append", filename_prefix="more")
    assert bridge.read_parquet(out).count() == 12
    assert bridge.range(100).write_parquet(out, mode="ignore") == []
    with pytest.raises(bridge.BridgeError, match="mode"):
        bridge.range(1).write_parquet(out, mode="replace")
    (tmp_path / "f").write_text("x")
    with pytest.raises(FileWriteError, match="is a file"):
        bridge.range(1).write_parquet(str(tmp_path / "f"))


def test_empty_blocks_skipped_but_schema_kept(tmp_path):
    ds = bridge.range(10, override_num_blocks=2).filter(expr=__import__("pyarrow.compute").compute.field("id") < 0)
    paths = ds.write_parquet(str(tmp_path / "e"))
    assert len(paths) == 1
    back = bridge.read_parquet(str(tmp_path / "e"))
    assert back.count() == 0 and back.columns() == ["id"]


def test_atomic_write_leaves_nothing_on_failure(tmp_path):
    fs = pafs.LocalFileSystem()
    final = str(tmp_path / "part-00000.csv")

    def fail_midway(stream):
        stream.write(b"a,b\n1,2\n")
        raise RuntimeError("disk gone")

    with pytest.raises(RuntimeError, match="disk gone"):
        atomic_write(fs, final, fail_midway)
    assert os.listdir(tmp_path) == []  # neither the final name nor the temporary one
    bridge.range(3).write_csv(str(tmp_path))
    assert bridge.read_csv(str(tmp_path)).count() == 3


def test_failed_write_task_leaves_no_partial_file(tmp_path):
    out = str(tmp_path / "w")
    ds = bridge.from_items([{"v": [1, 2]}, {"v": [3]}])  # a list column CSV cannot hold
    with pytest.raises(bridge.UnsupportedTypeError, match="column 'v'"):
        ds.write_csv(out)
    assert os.listdir(out) == []


@pytest.mark.parametrize("fmt", ["parquet", "csv", "json"])
def test_a_failed_overwrite_keeps_the_earlier_output(tmp_path, fmt):
    """The default mode removed the earlier files before any task ran: a typo in the next step's function
    left the directory empty. The earlier files go only once every new one is written."""
    out = str(tmp_path / "w")
    write = lambda ds: getattr(ds, f"write_{fmt}")(out)  # noqa: E731
    read = getattr(bridge, f"read_{fmt}")
    write(bridge.range(10, override_num_blocks=2))
    before = sorted(os.listdir(out))

    def broken(b):
        return {"id": b["no_such_column"]}

    with pytest.raises(bridge.UserCodeError, match="no_such_column"):
        write(bridge.range(10, override_num_blocks=4).map_batches(broken))
    assert sorted(os.listdir(out)) == before  # no staged file left either
    assert sorted(r["id"] for r in read(out).take_all()) == list(range(10))
    write(bridge.range(3))  # a successful overwrite still replaces all of it
    assert sorted(os.listdir(out)) == [f"part-00000.{fmt}"]
    assert sorted(r["id"] for r in read(out).take_all()) == [0, 1, 2]


def test_an_overwrite_through_a_filesystem_that_spells_paths_its_own_way_keeps_its_new_files(tmp_path):
    """A SubTreeFileSystem lists 'out/part-00000.parquet' where the write said '/out/...': the staged commit
    took the new files for earlier output and deleted them (a review of the change found it)."""
    fs = pafs.SubTreeFileSystem(str(tmp_path), pafs.LocalFileSystem())
    for rows in (5, 3):
        paths = bridge.range(rows, override_num_blocks=2 if rows == 5 else 1).write_parquet("/out", filesystem=fs)
        assert bridge.read_parquet("/out", filesystem=fs).count() == rows, paths
    assert sorted(os.listdir(tmp_path / "out")) == ["part-00000.parquet"]
    bridge.from_items([{"k": 1, "v": 2}]).write_parquet("/part", filesystem=fs, partition_cols=["k"])
    assert bridge.read_parquet("/part", filesystem=fs).take_all() == [{"v": 2, "k": 1}]
    # The earlier files of other names go; a partitioned layout's too.
    bridge.from_items([{"k": 2, "v": 3}]).write_parquet("/part", filesystem=fs, partition_cols=["k"])
    assert bridge.read_parquet("/part", filesystem=fs).take_all() == [{"v": 3, "k": 2}]


def test_a_failed_partitioned_overwrite_keeps_the_earlier_directories(tmp_path):
    out = str(tmp_path / "p")
    ds = bridge.from_items([{"k": i % 2, "v": i} for i in range(6)])
    ds.write_parquet(out, partition_cols=["k"])
    def broken(b):
        raise ValueError("a bad batch")

    with pytest.raises(bridge.UserCodeError, match="a bad batch"):
        ds.map_batches(broken).write_parquet(out, partition_cols=["k"])
    back = bridge.read_parquet(out).take_all()
    assert sorted((r["k"], r["v"]) for r in back) == sorted((i % 2, i) for i in range(6))


def test_hidden_temporary_files_are_not_read(tmp_path):
    bridge.range(3).write_json(str(tmp_path))
    (tmp_path / ".part-00001.json.abc.tmp").write_text('{"id": 99}\n{"id": ')
    assert sorted(r["id"] for r in bridge.read_json(str(tmp_path)).take_all()) == [0, 1, 2]


# ------------------------------------------------------------------ partitioned Parquet


def test_write_parquet_partition_cols_writes_hive_directories_read_back_exactly(tmp_path):
    import pyarrow.compute as pc

    rows = [{"year": 2023 + i % 2, "city": ["NY", "SF/LA", None][i % 3], "x": i} for i in range(12)]
    ds = bridge.from_items(rows, override_num_blocks=3)
    paths = ds.write_parquet(str(tmp_path), partition_cols=["year", "city"])
    rel = sorted({p[len(str(tmp_path)) + 1:].rsplit("/", 1)[0] for p in paths})
    assert rel == sorted(f"year={y}/city={c}" for y in (2023, 2024)
                         for c in ("NY", "SF%2FLA", "__HIVE_DEFAULT_PARTITION__"))
    assert len(paths) == 3 * 4  # each block of 4 rows holds 4 distinct (year, city) pairs: one file each
    back = bridge.read_parquet(str(tmp_path)).to_arrow()
    assert back.num_rows == 12
    assert sorted(back.to_pylist(), key=lambda r: r["x"]) == [{"x": r["x"], "year": r["year"], "city": r["city"]}
                                                                for r in rows]
    assert pa.types.is_integer(back.schema.field("year").type)
    # A filter on the partition column prunes whole directories.
    assert bridge.read_parquet(str(tmp_path), filter=pc.field("year") == 2024).count() == 6
    # Overwrite replaces the earlier partitioned files, in their subdirectories too.
    ds.limit(2).write_parquet(str(tmp_path), partition_cols=["year", "city"])
    assert bridge.read_parquet(str(tmp_path)).count() == 2


@pytest.mark.parametrize("cols, match", [(["nope"], "not found"), (["f"], "cannot name a directory"),
                                         (["k", "f"], "cannot name a directory"), (["k", "v"], None)])
def test_write_parquet_partition_cols_refuses_what_cannot_name_a_directory(tmp_path, cols, match):
    ds = bridge.from_items([{"k": 1, "f": 0.5}])
    if match is None:
        ds = bridge.from_items([{"k": 1, "v": "a"}])
        with pytest.raises(bridge.errors.BridgeError, match="names every column"):
            ds.write_parquet(str(tmp_path), partition_cols=cols)
        return
    with pytest.raises(bridge.errors.BridgeError, match=match):
        ds.write_parquet(str(tmp_path), partition_cols=cols)


def test_min_rows_per_file_bundles_contiguous_blocks_and_never_splits_one(tmp_path):
    import pyarrow.parquet as pq

    paths = bridge.range(100, override_num_blocks=10).write_parquet(str(tmp_path / "a"), min_rows_per_file=25)
    counts = [pq.read_metadata(p).num_rows for p in paths]
    assert counts == [30, 30, 30, 10] and sum(counts) == 100  # 10-row blocks bundled until >= 25
    assert sorted(bridge.read_parquet(str(tmp_path / "a")).to_pandas()["id"]) == list(range(100))
    # A block larger than the minimum stays one file.
    assert len(bridge.range(100, override_num_blocks=2).write_csv(str(tmp_path / "b"), min_rows_per_file=10)) == 2


def test_min_rows_per_file_holds_right_after_a_read(tmp_path):
    bridge.range(60, override_num_blocks=6).write_parquet(str(tmp_path / "src"))
    src = bridge.read_parquet(str(tmp_path / "src"), override_num_blocks=6)
    paths = src.write_json(str(tmp_path / "out"), min_rows_per_file=30)  # fused into the read: 6 files
    assert len(paths) == 2
    assert bridge.read_json(str(tmp_path / "out")).count() == 60


def test_write_options_the_writer_does_not_take_fail_before_writing(tmp_path):
    with pytest.raises(TypeError, match=r"write_json: unexpected option\(s\) \['min_rows'\].*json.dumps"):
        bridge.range(3).write_json(str(tmp_path / "j"), min_rows=2)
    with pytest.raises(TypeError, match=r"write_csv: unexpected option\(s\) \['delimiter'\]"):
        bridge.range(3).write_csv(str(tmp_path / "c"), delimiter=";")
    assert not (tmp_path / "j").exists() or not list((tmp_path / "j").iterdir())
    with pytest.raises(ValueError, match=r"min_rows_per_file=0"):
        bridge.range(3).write_parquet(str(tmp_path / "p"), min_rows_per_file=0)


def test_parquet_options_and_ray_data_arguments_are_checked_at_the_call(tmp_path):
    """write_table takes **kwargs, so no option was checked: Ray Data's try_create_dir failed in the
    task as "__cinit__() got an unexpected keyword argument" with a hint about a writable directory."""
    out = tmp_path / "p"
    bridge.range(3).write_parquet(str(out))
    for kw, hint in [({"try_create_dir": True}, "directory is always created"),
                     ({"arrow_parquet_args": {"compression": "zstd"}}, "as keywords of write_parquet"),
                     ({"num_rows_per_file": 2}, "min_rows_per_file="), ({"compresion": "zstd"}, "spelling")]:
        with pytest.raises(TypeError, match=f"(?s)unexpected option.*{list(kw)[0]}.*Hint: .*{hint}"):
            bridge.range(3).write_parquet(str(out), **kw)
    with pytest.raises(ValueError, match="(?s)compression='zstdd'.*no such codec.*'zstd'"):
        bridge.range(3).write_parquet(str(out), compression="zstdd")
    assert sorted(p.name for p in out.iterdir()) == ["part-00000.parquet"]  # nothing was touched
    # The writer's own options (write_table's, ParquetWriter's, the Cython writer's) still pass.
    bridge.range(3).write_parquet(str(out), compression="zstd", row_group_size=2, use_dictionary=False,
                                  data_page_size=4096, writer_engine_version="V2", memory_pool=None)
    assert bridge.read_parquet(str(out)).take_all() == [{"id": 0}, {"id": 1}, {"id": 2}]


def test_overwrite_replaces_every_earlier_data_file_of_the_format_and_keeps_other_files(tmp_path):
    """Only files of this write's prefix were removed: a directory first written by Spark (or with
    another filename_prefix, or partitioned) read back the new rows and the stale ones too."""
    import pyarrow.parquet as pq

    out = tmp_path / "o"
    (out / "k=1").mkdir(parents=True)
    stale = pa.table({"id": pa.array([100, 101], pa.int64())})
    pq.write_table(stale, out / "part-00000-6c1f-c000.snappy.parquet")  # Spark's naming
    pq.write_table(stale, out / "k=1" / "part-00000.parquet")
    bridge.range(2).write_parquet(str(out), filename_prefix="other")
    (out / "README.md").write_text("notes")
    (out / "_SUCCESS").write_text("")
    bridge.range(3).write_parquet(str(out))
    assert sorted(r["id"] for r in bridge.read_parquet(str(out), file_extensions=["parquet"]).take_all()) == [0, 1, 2]
    assert sorted(p.name for p in out.iterdir()) == ["README.md", "_SUCCESS", "k=1", "part-00000.parquet"]
    csv_dir = tmp_path / "c"
    csv_dir.mkdir()
    (csv_dir / "old.csv").write_text("id\n7\n")
    bridge.range(2).write_csv(str(csv_dir))
    assert sorted(r["id"] for r in bridge.read_csv(str(csv_dir)).take_all()) == [0, 1]
