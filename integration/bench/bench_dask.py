"""from_dask + to_dask: raybridge vs Ray Data on 8 columns (ints, floats, strings) in 16 partitions.

Each run converts a Dask DataFrame to a Dataset (blocks materialised in the
object store), then converts it back and computes every partition of the Dask
DataFrame (``len`` per partition, so each partition is built as pandas).
The ``*_from`` / ``*_to`` contenders time one direction each.
"""

from __future__ import annotations

import time

from integration.bench.registry import Benchmark

ROWS = {"small": 1_000_000, "full": 10_000_000}
PARTITIONS = 16


def make_pandas(rows: int):
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(0)
    labels = np.array([f"label-{i:04d}" for i in range(1000)], dtype=object)
    cols = {f"i{k}": rng.integers(0, 1 << 40, rows) for k in range(3)}
    cols.update({f"f{k}": rng.random(rows) for k in range(3)})
    cols.update({f"s{k}": labels[rng.integers(0, 1000, rows)] for k in range(2)})
    return pd.DataFrame(cols)


def _ddf(scale: str):
    import dask.dataframe as dd

    return dd.from_pandas(make_pandas(ROWS[scale]), npartitions=PARTITIONS).persist(scheduler="sync")


def _count_partitions(ddf, scheduler=None) -> int:
    return int(sum(ddf.map_partitions(len).compute(scheduler=scheduler)))


def _contender(system: str, direction: str):
    def setup(scale: str):
        ddf = _ddf(scale)
        rows = ROWS[scale]

        def to_ds():
            if system == "raybridge":
                import bridge

                return bridge.from_dask(ddf)
            import ray.data

            return ray.data.from_dask(ddf).materialize()

        def back(ds) -> int:
            if system == "raybridge":
                return _count_partitions(ds.to_dask())
            from ray.util.dask import ray_dask_get

            return _count_partitions(ds.to_dask(), scheduler=ray_dask_get)

        prepared = to_ds() if direction == "to" else None

        def run() -> float:
            t = time.perf_counter()
            ds = prepared if prepared is not None else to_ds()
            if direction != "from":
                assert back(ds) == rows
            return time.perf_counter() - t

        return run

    return setup


_PARAMS = {"small": "1M rows x 8 cols, 16 partitions", "full": "10M rows x 8 cols, 16 partitions"}
BENCHMARKS = [
    Benchmark(
        name=f"dask_{direction}",
        title=f"{label}, 8 columns, 16 partitions",
        unit="s",
        contenders={"raybridge": _contender("raybridge", direction), "ray_data": _contender("ray_data", direction)},
        params=_PARAMS,
        goals={"ray_data": 2.0},
    )
    for direction, label in [("both", "from_dask + to_dask (compute all partitions)"),
                             ("from", "from_dask"), ("to", "to_dask (compute all partitions)")]
]
