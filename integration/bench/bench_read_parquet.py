"""read_parquet of 20 files, then count(), then iter_batches to the end.

Data: 20 Parquet files of int64 id + 10 float64 columns (random, so on-disk size ~ in-memory
size): ~2 GB at full scale, ~200 MB small.  Written once to a cache directory (same seed for
every contender) and reused.  Contenders: raybridge, Ray Data, and ``pyarrow.dataset`` in one
process (the floor: no Ray, no object store).  Each ``run`` opens the files afresh, counts the
rows, and iterates numpy batches of 8192 rows to the end.
"""

from __future__ import annotations

import os
import tempfile
import time

from integration.bench.registry import Benchmark

FILES = 20
COLUMNS = 10
BATCH = 8192
#: Rows per file: 88 bytes a row.
ROWS_PER_FILE = {"small": 120_000, "full": 1_200_000}


def dataset_dir(scale: str) -> str:
    """The cached directory of Parquet files for ``scale`` (written on first use)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = os.environ.get("RAYBRIDGE_BENCH_DATA", os.path.join(tempfile.gettempdir(), "raybridge_bench"))
    d = os.path.join(root, f"read_parquet_{scale}")
    done = os.path.join(d, "_COMPLETE")
    if os.path.exists(done):
        return d
    os.makedirs(d, exist_ok=True)
    rows = ROWS_PER_FILE[scale]
    rng = np.random.default_rng(0)
    for i in range(FILES):
        cols = {"id": np.arange(i * rows, (i + 1) * rows, dtype=np.int64)}
        cols.update({f"c{j}": rng.random(rows) for j in range(COLUMNS)})
        pq.write_table(pa.table(cols), os.path.join(d, f"part-{i:05d}.parquet"), row_group_size=rows // 4)
    open(done, "w").close()
    return d


def _expected(scale: str) -> int:
    return FILES * ROWS_PER_FILE[scale]


def _rb(scale):
    import bridge

    d = dataset_dir(scale)

    def run():
        t = time.perf_counter()
        ds = bridge.read_parquet(d)
        n = ds.count()
        seen = 0
        for batch in ds.iter_batches(batch_size=BATCH, batch_format="numpy"):
            seen += len(batch["id"])
        elapsed = time.perf_counter() - t
        assert n == seen == _expected(scale), (n, seen)
        return elapsed

    return run


def _rd(scale):
    import ray.data

    d = dataset_dir(scale)
    ray.data.DataContext.get_current().enable_progress_bars = False

    def run():
        t = time.perf_counter()
        ds = ray.data.read_parquet(d)
        n = ds.count()
        seen = 0
        for batch in ds.iter_batches(batch_size=BATCH, batch_format="numpy"):
            seen += len(batch["id"])
        elapsed = time.perf_counter() - t
        assert n == seen == _expected(scale), (n, seen)
        return elapsed

    return run


def _pyarrow(scale):
    import pyarrow.dataset as pds

    from bridge.batch import to_numpy_batch

    d = dataset_dir(scale)

    def run():
        t = time.perf_counter()
        dataset = pds.dataset(d, format="parquet")
        n = dataset.count_rows()
        seen = 0
        for rb in dataset.to_batches(batch_size=BATCH):
            import pyarrow as pa

            batch = to_numpy_batch(pa.Table.from_batches([rb]))
            seen += len(batch["id"])
        elapsed = time.perf_counter() - t
        assert n == seen == _expected(scale), (n, seen)
        return elapsed

    return run


BENCHMARK = Benchmark(
    name="read_parquet",
    title="read_parquet(20 files) -> count() -> iter_batches(8192, numpy) to the end",
    unit="s",
    contenders={"raybridge": _rb, "ray_data": _rd, "pyarrow_dataset": _pyarrow},
    params={s: f"{FILES} files x {r:,} rows x (int64 + {COLUMNS} float64) = ~{FILES * r * 88 / 1e9:.1f} GB"
            for s, r in ROWS_PER_FILE.items()},
    goals={"ray_data": 1.2},
    ray_init={"object_store_memory": 2 * 1024**3},
)
