"""Three chained map_batches over range(N), iterated to the end: throughput, and time to first batch."""

from __future__ import annotations

import time

from integration.bench.registry import Benchmark, first_batch_setup

ROWS = {"small": 2_000_000, "full": 20_000_000}
BATCH = 4096


def _f1(b):
    return {"id": b["id"], "x": b["id"] * 2}


def _f2(b):
    return {"id": b["id"], "x": b["x"] + 1, "y": b["id"] % 7}


def _f3(b):
    return {"id": b["id"], "z": b["x"] * 0.5 + b["y"]}


def _chain_rb(n):
    import bridge

    return bridge.range(n).map_batches(_f1).map_batches(_f2).map_batches(_f3)


def _chain_rd(n):
    import ray.data

    return ray.data.range(n).map_batches(_f1, batch_size=None).map_batches(_f2, batch_size=None).map_batches(
        _f3, batch_size=None)


def _throughput(make):
    def setup(scale):
        n = ROWS[scale]

        def run():
            t = time.perf_counter()
            rows = 0
            for b in make(n).iter_batches(batch_size=BATCH):
                rows += len(b["id"])
            assert rows == n, rows
            return n / (time.perf_counter() - t)

        return run

    return setup


def _first_batch(make):
    return first_batch_setup(make, ROWS, BATCH)


BENCHMARK = Benchmark(
    name="map_chain",
    title="range(N) -> 3 x map_batches -> iter_batches(4096) to the end",
    unit="rows/s",
    contenders={"raybridge": _throughput(_chain_rb), "ray_data": _throughput(_chain_rd)},
    params={s: f"{n:,} rows" for s, n in ROWS.items()},
    goals={"ray_data": 1.5},
)
