"""streaming_split: equal shares across Ray actors, epochs, stalls, and the RaySGD-style seed (issue 3)."""

from __future__ import annotations

import time

import pytest
import ray

import bridge
from bridge.errors import StallError


@ray.remote(num_cpus=0)
class Consumer:
    def epochs(self, split, n_epochs, batch_size):
        out = []
        for _ in range(n_epochs):
            out.append([int(x) for b in split.iter_batches(batch_size=batch_size) for x in b["id"]])
        return out


def test_equal_shares_in_actors_over_epochs():
    ds = bridge.range(1001, override_num_blocks=9)
    splits = ds.streaming_split(3, equal=True)
    consumers = [Consumer.remote() for _ in splits]
    results = ray.get([c.epochs.remote(s, 2, 64) for c, s in zip(consumers, splits)], timeout=300)
    for epoch in range(2):
        shares = [r[epoch] for r in results]
        assert [len(s) for s in shares] == [333, 333, 333]
        union = set().union(*map(set, shares))
        assert len(union) == 999 and union <= set(range(1001))


def test_unequal_mode_keeps_every_row():
    a, b = bridge.range(101, override_num_blocks=4).streaming_split(2, equal=False)
    c1, c2 = Consumer.remote(), Consumer.remote()
    ra, rb = ray.get([c1.epochs.remote(a, 1, 10), c2.epochs.remote(b, 1, 10)], timeout=300)
    assert sorted(ra[0] + rb[0]) == list(range(101))


def test_stalled_consumer_gives_stall_error_naming_it():
    ds = bridge.range(20_000, override_num_blocks=40)
    fast, slow = ds.streaming_split(2, equal=True, stall_timeout_s=3)
    stalled = slow.iter_batches(batch_size=10)
    next(stalled)  # reads one batch, then stops reading
    t0 = time.monotonic()
    with pytest.raises(StallError, match=r"split\(s\) \[1\] stopped reading") as err:
        for _ in fast.iter_batches(batch_size=100):
            pass
    assert "Hint:" in str(err.value) and time.monotonic() - t0 < 120


def test_raysgd_seed_download_with_bounded_concurrency_then_split():
    class Download:
        def __call__(self, row):
            return {"path": row["item"], "payload": len(row["item"])}

    paths = [f"s3://bucket/shard-{i:04d}.bin" for i in range(40)]
    train = bridge.from_items(paths).map(Download, concurrency=2).streaming_split(2, equal=True)

    @ray.remote(num_cpus=0)
    def consume(split):
        return [r["path"] for r in split.iter_rows()]

    got = ray.get([consume.remote(s) for s in train], timeout=300)
    assert len(got[0]) == len(got[1]) == 20
    assert sorted(got[0] + got[1]) == sorted(paths)
