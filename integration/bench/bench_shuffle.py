"""random_shuffle of N rows x 4 columns (20M rows ~ 640 MB at full scale): raybridge vs Ray Data.

The data is generated and materialised in the object store in ``setup`` (not
timed), identically for both; ``run`` times the operation through
``materialize()``.  ``bench_sort`` and ``bench_groupby`` reuse these helpers.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from integration.bench.registry import Benchmark

ROWS = {"small": 2_000_000, "full": 20_000_000}
BLOCKS = 32
NUM_GROUPS = 1000
PARAMS = {s: f"{n:,} rows x 4 columns (int64 id, float64 key, int64 group of {NUM_GROUPS}, float64 value)"
          for s, n in ROWS.items()}
#: Same object store for every contender: the data plus room for the exchange.
RAY_INIT = {"object_store_memory": 4 * 1024**3}


def make_columns(batch: dict[str, Any]) -> dict[str, Any]:
    import numpy as np

    ids = batch["id"]
    rng = np.random.default_rng(int(ids[0]) if len(ids) else 0)
    return {"id": ids, "key": rng.random(len(ids)), "group": rng.integers(0, NUM_GROUPS, len(ids)),
            "value": rng.normal(0.0, 1.0, len(ids))}


def raybridge_contender(op: Callable[[Any], Any]) -> Callable[[str], Callable[[], float]]:
    def setup(scale: str) -> Callable[[], float]:
        import bridge

        n = ROWS[scale]
        ds = bridge.range(n, override_num_blocks=BLOCKS).map_batches(make_columns).materialize()

        def run() -> float:
            t = time.perf_counter()
            out = op(ds).materialize()
            elapsed = time.perf_counter() - t
            assert out.count() > 0
            return n / elapsed

        return run

    return setup


def ray_data_contender(op: Callable[[Any], Any]) -> Callable[[str], Callable[[], float]]:
    def setup(scale: str) -> Callable[[], float]:
        import ray.data

        ray.data.DataContext.get_current().enable_progress_bars = False
        n = ROWS[scale]
        ds = ray.data.range(n, override_num_blocks=BLOCKS).map_batches(make_columns, batch_format="numpy").materialize()

        def run() -> float:
            t = time.perf_counter()
            out = op(ds).materialize()
            elapsed = time.perf_counter() - t
            assert out.count() > 0
            return n / elapsed

        return run

    return setup


def _shuffle(ds: Any) -> Any:
    return ds.random_shuffle()


BENCHMARK = Benchmark(
    name="shuffle",
    title="random_shuffle().materialize() of N rows x 4 columns",
    unit="rows/s",
    contenders={"raybridge": raybridge_contender(_shuffle), "ray_data": ray_data_contender(_shuffle)},
    params=PARAMS,
    goals={"ray_data": 1.2},
    ray_init=RAY_INIT,
)
