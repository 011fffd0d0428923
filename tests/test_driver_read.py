"""A bare read_parquet iterated on a one-machine cluster reads in the iterating process.

The tests session's Ray is one local node, so the driver path is taken here; each
test compares it with the Ray-task path of the very same read
(``DataContext.read_in_driver = False``) and checks which one ran through the
process ids the read recorded.
"""

from __future__ import annotations

import os
import threading
import time

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

import bridge
from bridge.execution.streaming_executor import ExecutionStopped
from bridge.io.paths import FileReadError
from tests.io_helpers import CountingHandler, all_types_table


@pytest.fixture
def ray_tasks_only(monkeypatch):
    monkeypatch.setattr(bridge.DataContext.get_current(), "read_in_driver", False)


def _files(tmp_path, n_files=4, rows=3_000, row_group_size=700):
    d = tmp_path / "pq"
    d.mkdir()
    for i in range(n_files):
        ids = np.arange(i * rows, (i + 1) * rows)
        strings = pa.array([None if v % 7 == 0 else f"r{v}" for v in ids], pa.string())
        t = pa.table({"id": ids, "x": ids * 0.5, "s": strings,
                      "lst": pa.array([[int(v)] * (int(v) % 3) for v in ids], pa.list_(pa.int32()))})
        pq.write_table(t, d / f"f{i}.parquet", row_group_size=row_group_size)
    return str(d)


def _read_pids(ds) -> set[int | None]:
    """The processes the last execution's read ran in (each task's recorded pid)."""
    return {pid for op in ds._last_stats.ops for _, _, pid in op.spans}


def _batches(ds, **kw) -> list[pa.Table]:
    return list(ds.iter_batches(batch_format="pyarrow", **kw))


def test_same_batches_as_through_ray_tasks_for_every_type(tmp_path, ray_tasks_only):
    table = pa.concat_tables([all_types_table()] * 10).combine_chunks()
    pq.write_table(table, tmp_path / "a.parquet", row_group_size=11)
    pq.write_table(table.slice(7), tmp_path / "b.parquet", row_group_size=13)
    ds = bridge.read_parquet(str(tmp_path))
    through_ray = _batches(ds, batch_size=9)
    assert os.getpid() not in _read_pids(ds)
    bridge.DataContext.get_current().read_in_driver = True
    ds = bridge.read_parquet(str(tmp_path))
    local = _batches(ds, batch_size=9)
    assert _read_pids(ds) == {os.getpid()}
    assert "in_driver_threads" in ds.stats()
    assert [b.num_rows for b in local] == [b.num_rows for b in through_ray]
    for a, b in zip(local, through_ray):
        assert a.schema.equals(b.schema, check_metadata=True)
        assert a.equals(b)
    whole = pa.concat_tables(local)
    assert whole.num_rows == 60 + 53
    assert whole.slice(0, 60).equals(table)


def test_projection_and_limit_stay_in_the_driver_and_match(tmp_path):
    d = _files(tmp_path)
    ds = bridge.read_parquet(d, columns=["s", "id"]).limit(4_321)
    local = pa.concat_tables(_batches(ds, batch_size=1000))
    assert _read_pids(ds) == {os.getpid()}
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(bridge.DataContext.get_current(), "read_in_driver", False)
        ds = bridge.read_parquet(d, columns=["s", "id"]).limit(4_321)
        through_ray = pa.concat_tables(_batches(ds, batch_size=1000))
    assert local.column_names == ["s", "id"]
    assert local.num_rows == 4_321
    assert local.equals(through_ray)
    assert local["id"].to_pylist() == list(range(4_321))


def test_hive_partition_columns_match_the_ray_path(tmp_path, ray_tasks_only):
    table = pa.table({"year": [2023, 2023, 2024, 2025, 2025], "v": [1.5, 2.5, None, 4.5, 5.5],
                      "s": ["a", None, "c", "d", "e"]})
    pq.write_to_dataset(table, tmp_path / "h", partition_cols=["year"])
    through_ray = pa.concat_tables(_batches(bridge.read_parquet(str(tmp_path / "h"), partitioning="hive"),
                                            batch_size=2))
    bridge.DataContext.get_current().read_in_driver = True
    ds = bridge.read_parquet(str(tmp_path / "h"), partitioning="hive")
    local = pa.concat_tables(_batches(ds, batch_size=2))
    assert _read_pids(ds) == {os.getpid()}
    assert local.equals(through_ray)
    assert sorted(local["year"].to_pylist()) == [2023, 2023, 2024, 2025, 2025]


def _write_csv(path, rows):
    import pyarrow.csv as pcsv

    ids = np.array(rows)
    pcsv.write_csv(pa.table({"id": ids, "x": ids / 7, "s": pa.array([None if v % 5 == 0 else f"v{v}" for v in ids])}),
                   f"{path}.csv")


def _write_json(path, rows):
    import json

    with open(f"{path}.jsonl", "w") as f:
        for v in rows:
            f.write(json.dumps({"id": v, "x": v / 7, "s": None if v % 5 == 0 else f"v{v}"}) + "\n")


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_text_formats_read_in_the_driver_like_through_ray(tmp_path, ray_tasks_only, fmt):
    write, read = {"csv": (_write_csv, bridge.read_csv), "json": (_write_json, bridge.read_json)}[fmt]
    for i in range(3):
        write(tmp_path / f"p{i}", range(i * 500, (i + 1) * 500))
    schema = pa.schema([("id", pa.int32()), ("x", pa.float64()), ("s", pa.string())])
    through_ray = pa.concat_tables(_batches(read(str(tmp_path), schema=schema), batch_size=300))
    bridge.DataContext.get_current().read_in_driver = True
    ds = read(str(tmp_path), schema=schema)
    local = pa.concat_tables(_batches(ds, batch_size=300))
    assert _read_pids(ds) == {os.getpid()}
    assert local.schema.equals(through_ray.schema) and local.equals(through_ray)
    assert local["id"].type == pa.int32() and local["id"].to_pylist() == list(range(1_500))
    assert local["s"].null_count == 300


def test_a_transform_after_the_read_runs_in_ray_tasks(tmp_path):
    d = _files(tmp_path, n_files=2)
    ds = bridge.read_parquet(d).map_batches(lambda b: {"y": b["id"] * 2})
    ys = np.concatenate([b["y"] for b in ds.iter_batches(batch_size=500)])
    assert ys.tolist() == [2 * i for i in range(6_000)]
    assert "in_driver_threads" not in ds.stats()
    assert os.getpid() not in _read_pids(ds)


def test_torch_batches_and_rows_from_the_driver_read(tmp_path):
    torch = pytest.importorskip("torch")
    d = _files(tmp_path, n_files=2)
    ds = bridge.read_parquet(d, columns=["id", "x"])
    batches = list(ds.iter_torch_batches(batch_size=1024))
    assert _read_pids(ds) == {os.getpid()}
    ids = torch.cat([b["id"] for b in batches])
    assert ids.dtype == torch.int64 and ids.tolist() == list(range(6_000))
    assert torch.cat([b["x"] for b in batches]).tolist() == [i * 0.5 for i in range(6_000)]
    rows = list(ds.iter_rows())
    assert len(rows) == 6_000 and rows[4_567] == {"id": 4_567, "x": 4_567 * 0.5}


def test_resume_continues_where_the_state_says(tmp_path):
    d = _files(tmp_path)
    it = bridge.read_parquet(d).iter_batches(batch_size=1000)
    first = [next(it)["id"] for _ in range(5)]
    state = it.state_dict()
    it.close()
    rest = bridge.read_parquet(d).iter_batches(batch_size=1000)
    rest.load_state_dict(state)
    ids = np.concatenate(first + [b["id"] for b in rest])
    assert ids.tolist() == list(range(12_000))


def _counted_read(d: str, **kw):
    handler = CountingHandler()
    return handler, bridge.read_parquet(d, filesystem=pafs.PyFileSystem(handler), **kw)


def _wait_for_read_threads(timeout: float = 30) -> None:
    deadline = time.time() + timeout
    while any(t.name.startswith("raybridge-read") for t in threading.enumerate()) and time.time() < deadline:
        time.sleep(0.05)  # the reads under way when it stopped finish on their threads


def test_stopping_early_reads_no_further(tmp_path):
    from bridge._ray import cluster_cpus

    n_files = 4 * (cluster_cpus() + 2)  # never all in flight at once, whatever the CPU count
    d = _files(tmp_path, n_files=n_files, rows=20_000, row_group_size=20_000)
    handler, ds = _counted_read(d, override_num_blocks=n_files)
    assert sum(len(b["id"]) for b in ds.iter_batches(batch_size=100, prefetch_batches=0)) == n_files * 20_000
    everything = handler.bytes_read
    for prefetch in (0, 2):
        handler, ds = _counted_read(d, override_num_blocks=n_files)
        it = ds.iter_batches(batch_size=100, prefetch_batches=prefetch)
        next(it)
        it.close()
        _wait_for_read_threads()
        # The task handed out, at most one more per thread and one queued ahead.
        assert handler.bytes_read < everything / 2, prefetch


class _SlowFiles(CountingHandler):
    """Local files that take ``delay`` seconds to open: reads long enough to stop mid-way."""

    delay = 0.0

    def open_input_file(self, path):
        time.sleep(self.delay)
        return super().open_input_file(path)


def test_a_stop_request_ends_a_waiting_consumer_at_once(tmp_path):
    # What Ctrl-C does (bridge.iteration.interrupt): request_stop() while the consumer waits for a batch.
    d = _files(tmp_path, n_files=16, rows=2_000, row_group_size=2_000)
    handler = _SlowFiles()
    ds = bridge.read_parquet(d, filesystem=pafs.PyFileSystem(handler), override_num_blocks=16)
    opened_planning = len(handler.files_opened)
    handler.delay = 0.5  # the whole read: 16 files x 0.5 s over the threads, several seconds
    it = ds.iter_batches(batch_size=2_000, prefetch_batches=1)
    next(it)
    threading.Timer(0.1, it._stream.request_stop).start()
    t0 = time.time()
    with pytest.raises(ExecutionStopped):
        for _ in it:
            pass
    assert time.time() - t0 < 1.5
    _wait_for_read_threads()
    assert len(handler.files_opened) - opened_planning < 16


def test_the_in_flight_byte_budget_bounds_the_tasks_started(tmp_path, monkeypatch):
    d = _files(tmp_path, n_files=8, rows=2_000, row_group_size=2_000)

    def data_files_opened() -> int:
        """Files the read opened up to its first block handed out (planning's footer reads not counted)."""
        handler, ds = _counted_read(d, override_num_blocks=8)
        planning = len(handler.files_opened)
        it = ds.iter_batches(batch_size=100, prefetch_batches=0)
        next(it)
        it.close()
        _wait_for_read_threads()
        return len(handler.files_opened) - planning

    assert data_files_opened() >= 2  # one per thread at once, without a tight budget
    monkeypatch.setattr(bridge.DataContext.get_current(), "max_bytes_in_flight", 1)
    assert data_files_opened() == 1  # one task at least, and nothing beside it


def test_select_columns_and_limit_zero(tmp_path):
    d = _files(tmp_path, n_files=2)
    ds = bridge.read_parquet(d).select_columns(["x", "id"])
    got = pa.concat_tables(_batches(ds, batch_size=1000))
    assert _read_pids(ds) == {os.getpid()}
    assert got.column_names == ["x", "id"] and got["id"].to_pylist() == list(range(6_000))
    ds = bridge.read_parquet(d).limit(0)
    assert _batches(ds, batch_size=10) == []
    assert ds._last_stats.ops[0].num_tasks == 0


def test_tasks_in_flight_cap_sets_the_threads(tmp_path, monkeypatch):
    monkeypatch.setattr(bridge.DataContext.get_current(), "max_tasks_in_flight_per_op", 1)
    d = _files(tmp_path, n_files=3)
    ds = bridge.read_parquet(d)
    assert sum(len(b["id"]) for b in ds.iter_batches(batch_size=1000)) == 9_000
    assert ds._last_stats.ops[0].extra["in_driver_threads"] == 1


def test_only_a_driver_that_started_the_cluster_reads_itself():
    import ray

    from bridge._ray import cluster_is_this_machine

    assert cluster_is_this_machine()  # the tests' session: ray.init() here, one node
    in_a_task = ray.remote(cluster_is_this_machine)
    assert ray.get(in_a_task.remote()) is False


def test_a_corrupt_file_raises_the_same_error_as_through_ray(tmp_path, ray_tasks_only):
    d = _files(tmp_path, n_files=2)
    with open(os.path.join(d, "f1.parquet"), "r+b") as f:
        f.seek(200)
        f.write(b"\x00" * 2_000)
    with pytest.raises(FileReadError) as through_ray:
        _batches(bridge.read_parquet(d), batch_size=1000)
    bridge.DataContext.get_current().read_in_driver = True
    with pytest.raises(FileReadError) as local:
        _batches(bridge.read_parquet(d), batch_size=1000)
    assert "f1.parquet" in str(local.value)
    assert str(local.value) == str(through_ray.value)


def test_progress_bar_names_the_read(tmp_path, capsys, monkeypatch):
    d = _files(tmp_path, n_files=2)
    monkeypatch.setattr(bridge.DataContext.get_current(), "enable_progress_bars", True)
    n = sum(len(b["id"]) for b in bridge.read_parquet(d).iter_batches(batch_size=1000))
    assert n == 6_000
    err = capsys.readouterr().err
    assert "ReadParquet" in err and "finished" in err
