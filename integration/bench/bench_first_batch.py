"""Time to the first batch of the three-map_batches chain (bench_map_chain)."""

from __future__ import annotations

from integration.bench.bench_map_chain import ROWS, _chain_rb, _chain_rd, _first_batch
from integration.bench.registry import Benchmark

BENCHMARK = Benchmark(
    name="first_batch",
    title="time to first batch of range(N) -> 3 x map_batches -> iter_batches(4096)",
    unit="s",
    contenders={"raybridge": _first_batch(_chain_rb), "ray_data": _first_batch(_chain_rd)},
    params={s: f"{n:,} rows" for s, n in ROWS.items()},
    goals={"ray_data": 2.0},
)
