"""from_modin + to_modin: raybridge vs Ray Data, 8 columns (ints, floats, strings), Modin on Ray.

Each run converts a Modin DataFrame to a Dataset (materialised), converts it
back and sums one column of the new Modin frame (so Modin holds real
partitions).  The ``*_from`` / ``*_to`` contenders time one direction each.
"""

from __future__ import annotations

import time

from integration.bench.bench_dask import ROWS, make_pandas
from integration.bench.registry import Benchmark


def _mdf(scale: str):
    import modin.config as cfg

    cfg.Engine.put("ray")
    cfg.NPartitions.put(16)
    import modin.pandas as mpd

    mdf = mpd.DataFrame(make_pandas(ROWS[scale]))
    len(mdf)
    return mdf


def _contender(system: str, direction: str):
    def setup(scale: str):
        mdf = _mdf(scale)
        expected = int(mdf["i0"].sum())

        def to_ds():
            if system == "raybridge":
                import bridge

                return bridge.from_modin(mdf)
            import ray.data

            return ray.data.from_modin(mdf).materialize()

        prepared = to_ds() if direction == "to" else None

        def run() -> float:
            t = time.perf_counter()
            ds = prepared if prepared is not None else to_ds()
            if direction != "from":
                assert int(ds.to_modin()["i0"].sum()) == expected
            return time.perf_counter() - t

        return run

    return setup


_PARAMS = {"small": "1M rows x 8 cols", "full": "10M rows x 8 cols"}
BENCHMARKS = [
    Benchmark(
        name=f"modin_{direction}",
        title=f"{label}, 8 columns, 16 row partitions",
        unit="s",
        contenders={"raybridge": _contender("raybridge", direction), "ray_data": _contender("ray_data", direction)},
        params=_PARAMS,
        goals={"ray_data": 2.0},
    )
    for direction, label in [("both", "from_modin + to_modin (compute all partitions)"),
                             ("from", "from_modin"), ("to", "to_modin (compute all partitions)")]
]
