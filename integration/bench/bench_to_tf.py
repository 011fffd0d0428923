"""to_tf rows/s: 8 float32 feature columns + a float32 label, batch 1024, raybridge vs Ray Data."""

from __future__ import annotations

import time

import numpy as np

from integration.bench.registry import Benchmark

ROWS = {"small": 500_000, "full": 5_000_000}
BATCH = 1024
FEATURES = [f"f{i}" for i in range(8)]


def _table(scale: str):
    import pyarrow as pa

    rng = np.random.default_rng(0)
    n = ROWS[scale]
    cols = {c: rng.random(n, dtype=np.float32) for c in FEATURES}
    cols["y"] = rng.random(n, dtype=np.float32)
    return pa.table(cols)


def _consume(tfds) -> int:
    n = 0
    for _features, label in tfds:
        n += int(label.shape[0])
    return n


def _raybridge(scale: str):
    import bridge

    ds = bridge.from_arrow(_table(scale))

    def run() -> float:
        t = time.perf_counter()
        n = _consume(ds.to_tf(FEATURES, "y", batch_size=BATCH))
        assert n == ROWS[scale]
        return n / (time.perf_counter() - t)

    return run


def _ray_data(scale: str):
    import ray.data

    ds = ray.data.from_arrow(_table(scale)).materialize()

    def run() -> float:
        t = time.perf_counter()
        n = _consume(ds.to_tf(FEATURES, "y", batch_size=BATCH))
        assert n == ROWS[scale]
        return n / (time.perf_counter() - t)

    return run


BENCHMARK = Benchmark(
    name="to_tf",
    title="to_tf(8 float32 features, label, batch 1024) consumed by a Python loop",
    unit="rows/s",
    contenders={"raybridge": _raybridge, "ray_data": _ray_data},
    params={s: f"{n:,} rows" for s, n in ROWS.items()},
    goals={"ray_data": 1.0},
)
