"""map_batches(batch_size=n) fused onto a read gets batches of n rows, as Ray Data's does.

The map runs inside the read's tasks; a read of many small tasks gave batches no larger
than one task (range(100, override_num_blocks=50) -> 50 batches of 2 for batch_size=10):
per-batch results (sums, normalisation, a model's batches) and row counts of a function
returning one row per batch changed.  The read's tasks are now joined up to the batch size
by their row counts, as Ray Data bundles them.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet  # noqa: F401 - pa.parquet
import pytest

import bridge
from bridge.execution.planner import bundled_reads
from bridge.io.datasource import ReadTask, meta


def _sizes(batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {"n": np.array([len(next(iter(batch.values())))]), "first": batch[next(iter(batch))][:1]}


def test_range_of_small_blocks_gives_batches_of_batch_size():
    out = bridge.range(100, override_num_blocks=50).map_batches(_sizes, batch_size=10).take_all()
    assert [r["n"] for r in out] == [10] * 10
    assert [r["first"] for r in out] == list(range(0, 100, 10))


def test_batch_sums_over_small_blocks_match_ray_datas():
    sums = bridge.range(8, override_num_blocks=4).map_batches(
        lambda b: {"s": np.array([b["id"].sum()])}, batch_size=4).take_all()
    assert [r["s"] for r in sums] == [6, 22]  # Ray Data 2.60 gives [6, 22]


def test_from_items_and_a_fused_filter_are_bundled_too():
    items = bridge.from_items([{"a": i} for i in range(20)], override_num_blocks=10)
    assert [r["n"] for r in items.map_batches(_sizes, batch_size=10).take_all()] == [10, 10]
    evens = bridge.range(100, override_num_blocks=50).filter(lambda r: r["id"] % 2 == 0)
    # Bundled by the read's rows (10 per bundle), then filtered: 5 each, as in Ray Data.
    assert [r["n"] for r in evens.map_batches(_sizes, batch_size=10).take_all()] == [5] * 10


def test_parquet_files_smaller_than_the_batch_are_joined(tmp_path):
    for i in range(6):
        pa.parquet.write_table(pa.table({"x": np.arange(i * 5, i * 5 + 5)}), str(tmp_path / f"{i}.parquet"))
    ds = bridge.read_parquet(str(tmp_path), override_num_blocks=6)
    out = ds.map_batches(_sizes, batch_size=10).take_all()
    assert sorted(r["n"] for r in out) == [10, 10, 10]
    assert sorted(r["first"] for r in out) == [0, 10, 20]


def test_blocks_at_least_the_batch_size_stay_one_task_each():
    ds = bridge.range(40, override_num_blocks=4).map_batches(_sizes, batch_size=10)
    assert [r["n"] for r in ds.take_all()] == [10] * 4
    assert ds.materialize().num_blocks() == 4


def test_without_batch_size_each_block_is_a_batch_as_before():
    out = bridge.range(20, override_num_blocks=10).map_batches(_sizes, batch_size=None).take_all()
    assert [r["n"] for r in out] == [2] * 10


@pytest.mark.parametrize(("rows", "n", "want"), [
    ((2, 2, 0, 5, 1, 1), 4, [4, 0, 5, 2]),  # an unknown count (0) stays alone, in its place
    ((3, 3, 3), 4, [6, 3]),
    ((10, 10), 4, [10, 10]),
    ((), 4, []),
])
def test_bundled_reads_joins_in_order_up_to_the_rows(rows, n, want):
    def task(i: int) -> ReadTask:
        return ReadTask(lambda: iter([pa.table({"i": [i]})]), meta(rows[i], 8 * rows[i], None, [f"f{i}"]))

    tasks = [task(i) for i in range(len(rows))]
    joined = bundled_reads(tasks, n)
    assert [t.metadata.num_rows for t in joined] == want
    assert [b.column("i")[0].as_py() for t in joined for b in t()] == list(range(len(rows)))
    assert [f for t in joined for f in (t.metadata.input_files or [])] == [f"f{i}" for i in range(len(rows))]
