"""Shared test data for the global-operation suites: nulls, strings, timestamps, several keys."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pyarrow as pa


def mixed_table(n: int = 240, seed: int = 0) -> pa.Table:
    """Columns: int key with nulls, string key, tz-aware timestamp, float with nulls, int value."""
    rng = np.random.default_rng(seed)
    k = rng.integers(0, 5, n)
    k_null = rng.random(n) < 0.1
    s = rng.choice(["apple", "pear", "fig", "éclair"], n)
    start = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
    ts = [start + dt.timedelta(minutes=int(m)) for m in rng.integers(0, 10_000, n)]
    x = rng.normal(100.0, 10.0, n)
    x_null = rng.random(n) < 0.15
    x_null[k == 4] = True  # group k=4 has no non-null x at all: an "empty" group
    return pa.table({
        "k": pa.array(k, pa.int64(), mask=k_null),
        "s": pa.array(s, pa.string()),
        "ts": pa.array(ts, pa.timestamp("us", tz="UTC")),
        "x": pa.array(x, pa.float64(), mask=x_null),
        "v": pa.array(rng.integers(-50, 50, n), pa.int64()),
    })
