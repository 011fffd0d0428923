"""groupby(1000 keys).mean of N rows x 4 columns: raybridge vs Ray Data (helpers in bench_shuffle)."""

from __future__ import annotations

from typing import Any

from integration.bench.bench_shuffle import PARAMS, RAY_INIT, ray_data_contender, raybridge_contender
from integration.bench.registry import Benchmark


def _groupby_mean(ds: Any) -> Any:
    return ds.groupby("group").mean("value")


BENCHMARK = Benchmark(
    name="groupby",
    title='groupby("group").mean("value").materialize(), 1,000 groups, N rows x 4 columns',
    unit="rows/s",
    contenders={"raybridge": raybridge_contender(_groupby_mean), "ray_data": ray_data_contender(_groupby_mean)},
    params=PARAMS,
    goals={"ray_data": 1.2},
    ray_init=RAY_INIT,
)
