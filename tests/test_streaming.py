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


# ------------------------------------------------------------------ fetching blocks in groups


def _bundle(*sizes: int, start: int = 0) -> tuple[bridge.execution.bundle.RefBundle, int]:
    import pyarrow as pa

    from bridge.block import BlockMetadata
    from bridge.execution.bundle import RefBundle

    refs, metas = [], []
    for n in sizes:
        block = pa.table({"id": pa.array(range(start, start + n), pa.int64())})
        refs.append(ray.put(block))
        metas.append(BlockMetadata.of(block))
        start += n
    return RefBundle(refs, metas), start


def test_skipping_rows_keeps_every_block_after_the_first_partial_one():
    # A resumed iterator skips a prefix: the block it starts inside is sliced and every later
    # block kept, also a short one inside the same bundle (it was dropped as if still skipped).
    from bridge.execution.bundle import ReadyBundles
    from bridge.iteration.batch_iterator import blocks_from_bundles

    first, end = _bundle(10, 3)
    second, end = _bundle(4, start=end)
    for bundles in ([first, second], ReadyBundles([first, second])):
        ids = [i for b in blocks_from_bundles(bundles, skip_rows=5) for i in b.column("id").to_pylist()]
        assert ids == list(range(5, end))


def test_ready_bundles_are_fetched_in_groups_in_order_and_bounded():
    from bridge.execution.bundle import ReadyBundles
    from bridge.iteration import batch_iterator

    bundles = []
    end = 0
    for _ in range(20):
        b, end = _bundle(7, start=end)
        bundles.append(b)
    ready = ReadyBundles(bundles)
    calls = []
    real_get = batch_iterator.get_blocks

    def counting_get(refs, where=None):
        calls.append(len(refs))
        return real_get(refs, where)

    batch_iterator.get_blocks = counting_get
    try:
        ids = [i for b in batch_iterator.blocks_from_bundles(ready) for i in b.column("id").to_pylist()]
    finally:
        batch_iterator.get_blocks = real_get
    assert ids == list(range(end))
    assert calls == [8, 8, 4]
    # The size bound: a group never passes FETCH_GROUP_BYTES, except a single block.
    assert ReadyBundles(bundles).take_ready(8, 1) == bundles[:1]


def test_streaming_output_is_fetched_in_groups_and_nothing_is_lost():
    ds = bridge.range(5000, override_num_blocks=50).map_batches(lambda b: b)
    ids = [i for batch in ds.iter_batches(batch_size=333, prefetch_batches=0) for i in batch["id"].tolist()]
    assert ids == list(range(5000))
