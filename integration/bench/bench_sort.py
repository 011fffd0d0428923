"""sort by one float64 key of N rows x 4 columns: raybridge vs Ray Data (helpers in bench_shuffle)."""

from __future__ import annotations

from typing import Any

from integration.bench.bench_shuffle import PARAMS, RAY_INIT, ray_data_contender, raybridge_contender
from integration.bench.registry import Benchmark


def _sort(ds: Any) -> Any:
    return ds.sort("key")


BENCHMARK = Benchmark(
    name="sort",
    title='sort("key").materialize() of N rows x 4 columns (float64 key)',
    unit="rows/s",
    contenders={"raybridge": raybridge_contender(_sort), "ray_data": ray_data_contender(_sort)},
    params=PARAMS,
    goals={"ray_data": 1.2},
    ray_init=RAY_INIT,
)
