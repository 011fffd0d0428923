"""A wide table (200 float32 columns) through map_batches and iter_batches: the cost of reading blocks.

Every contender gets the very same blocks in the object store (4,096 rows x 200 columns, 3.3 MB
each), adds one column in a pyarrow ``map_batches`` over whole blocks and iterates the result in
pyarrow batches to the end: each block is read once by its map task and once by the iterator, so
what differs is mostly how a block is pickled into and read out of Ray's object store.
"""

from __future__ import annotations

import time

import numpy as np

from integration.bench.registry import Benchmark

#: scale -> number of blocks of BLOCK_ROWS rows
BLOCKS = {"small": 10, "full": 100}
BLOCK_ROWS = 4096
COLUMNS = 200


def _block_refs(scale: str) -> tuple[list, int]:
    import pyarrow as pa
    import ray

    rng = np.random.default_rng(0)
    refs = []
    for _ in range(BLOCKS[scale]):
        block = pa.table({f"c{i}": rng.random(BLOCK_ROWS, dtype=np.float32) for i in range(COLUMNS)})
        refs.append(ray.put(block))
    return refs, BLOCKS[scale] * BLOCK_ROWS


def _add_sum(batch):
    import pyarrow.compute as pc

    return batch.append_column("s", pc.add(batch["c0"], batch["c1"]))


def _contender(make_dataset):
    def setup(scale: str):
        refs, total = _block_refs(scale)

        def run() -> float:
            t = time.perf_counter()
            rows = 0
            ds = make_dataset(refs).map_batches(_add_sum, batch_format="pyarrow", batch_size=None)
            for b in ds.iter_batches(batch_size=BLOCK_ROWS, batch_format="pyarrow"):
                rows += b.num_rows
                assert b.num_columns == COLUMNS + 1
            assert rows == total, rows
            return rows / (time.perf_counter() - t)

        return run

    return setup


def _raybridge(refs):
    import bridge

    return bridge.from_arrow_refs(refs)


def _ray_data(refs):
    import ray.data

    return ray.data.from_arrow_refs(refs)


BENCHMARK = Benchmark(
    name="wide_table",
    title="200 float32 columns: map_batches(pyarrow) -> iter_batches to the end",
    unit="rows/s",
    contenders={"raybridge": _contender(_raybridge), "ray_data": _contender(_ray_data)},
    params={s: f"{n * BLOCK_ROWS:,} rows x {COLUMNS} columns in {n} blocks" for s, n in BLOCKS.items()},
    goals={"ray_data": 1.5},
)
