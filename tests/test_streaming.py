"""The executor streams: bounded bytes in flight, early stop, larger-than-object-store data."""

from __future__ import annotations

import threading
import time

import numpy as np
import ray

import bridge
from conftest import OBJECT_STORE_BYTES


class _StoreSampler:
    def __init__(self):
        self.peak = 0
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _run(self):
        total = ray.cluster_resources()["object_store_memory"]
        while not self._stop.is_set():
            self.peak = max(self.peak, total - ray.available_resources().get("object_store_memory", total))
            time.sleep(0.05)

    def stop(self):
        self._stop.set()
        self._t.join()


def test_dataset_three_times_the_object_store_streams_through():
    n = 60_000_000  # 480 MB of ids; with the added column 960 MB out: > 3x the 256 MiB store
    ds = bridge.range(n, override_num_blocks=100).map_batches(lambda b: {"id": b["id"], "x": b["id"] * 2})
    sampler = _StoreSampler()
    rows, total, xs = 0, 0, 0
    for batch in ds.iter_batches(batch_size=1 << 16):
        rows += len(batch["id"])
        total += int(batch["id"].sum())
        xs += int(batch["x"].sum())
    sampler.stop()
    assert rows == n
    assert total == n * (n - 1) // 2  # every id exactly once
    assert xs == 2 * total
    assert n * 16 > 3 * OBJECT_STORE_BYTES
    assert sampler.peak < OBJECT_STORE_BYTES, f"object store peaked at {sampler.peak / 2**20:.0f} MiB"


def test_consumer_stopping_early_stops_the_sources():
    seen = []
    ds = bridge.range(10_000_000, override_num_blocks=200).map_batches(lambda b: b)
    for i, batch in enumerate(ds.iter_batches(batch_size=1000)):
        seen.append(int(batch["id"][0]))
        if i == 2:
            break
    assert seen == [0, 1000, 2000]
    # Give the executor a moment; it must not have run all 200 tasks.
    stats = ds.stats()
    done = int(stats.split("MapBatches(<lambda>): ")[1].split(" tasks")[0])
    assert done < 200, stats


def test_budget_bounds_bytes_in_flight_with_a_slow_consumer():
    ctx = bridge.DataContext.get_current()
    old = ctx.max_bytes_in_flight
    ctx.max_bytes_in_flight = 20 * 2**20
    try:
        ds = bridge.range(20_000_000, override_num_blocks=80)  # 2 MB blocks, 160 MB in all
        sampler = _StoreSampler()
        rows = 0
        for batch in ds.iter_batches(batch_size=250_000):
            rows += len(batch["id"])
            time.sleep(0.01)
        sampler.stop()
    finally:
        ctx.max_bytes_in_flight = old
    assert rows == 20_000_000
    assert sampler.peak < 100 * 2**20, f"{sampler.peak / 2**20:.0f} MiB in the store with a 20 MiB budget"


def test_numpy_batches_are_zero_copy_views():
    batch = next(iter(bridge.range(1000).iter_batches(batch_size=None)))
    assert isinstance(batch["id"], np.ndarray) and not batch["id"].flags.owndata
