"""from_arrow of N rows x 8 float64 columns, materialised in the object store."""

from __future__ import annotations

import time

from integration.bench.bench_from_memory import ROWS, _frame, memcpy_contender
from integration.bench.registry import Benchmark


def _table(scale):
    import pyarrow as pa

    return pa.Table.from_pandas(_frame(ROWS[scale]), preserve_index=False)


def _rb(scale):
    import bridge

    table = _table(scale)

    def run():
        t = time.perf_counter()
        ds = bridge.from_arrow(table).materialize()
        elapsed = time.perf_counter() - t
        assert ds.count() == table.num_rows
        return elapsed

    return run


def _rd(scale):
    import ray.data

    table = _table(scale)

    def run():
        t = time.perf_counter()
        ds = ray.data.from_arrow(table).materialize()
        elapsed = time.perf_counter() - t
        assert ds.count() == table.num_rows
        return elapsed

    return run


def _memcpy(scale):
    return memcpy_contender([col.chunk(0).to_numpy() for col in _table(scale).columns])


BENCHMARK = Benchmark(
    name="from_arrow",
    title="from_arrow(N x 8 float64).materialize()",
    unit="s",
    contenders={"raybridge": _rb, "ray_data": _rd, "memcpy": _memcpy},
    params={s: f"{n:,} rows x 8 float64" for s, n in ROWS.items()},
    goals={"ray_data": 3.0, "memcpy": 0.67},  # (#17: within 1.5x of one memcpy)
)
