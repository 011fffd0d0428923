"""streaming_split: equal shares (padded or dropped remainders) across Ray actors, epochs, stalls, and the
RaySGD-style seed (issue 3); split(equal=True)'s remainder."""

from __future__ import annotations

import threading
import time
import warnings

import pytest
import ray

import bridge
from bridge.errors import StallError
from bridge.iteration.streaming_split import streaming_split


@ray.remote(num_cpus=0)
class Consumer:
    def epochs(self, split, n_epochs, batch_size):
        out = []
        for _ in range(n_epochs):
            out.append([int(x) for b in split.iter_batches(batch_size=batch_size) for x in b["id"]])
        return out


def test_equal_shares_in_actors_over_epochs_pad_by_wrapping_around():
    ds = bridge.range(1001, override_num_blocks=9)
    splits = ds.streaming_split(3, equal=True)
    consumers = [Consumer.remote() for _ in splits]
    results = ray.get([c.epochs.remote(s, 2, 64) for c, s in zip(consumers, splits)], timeout=300)
    for epoch in range(2):
        shares = [r[epoch] for r in results]
        assert [len(s) for s in shares] == [334, 334, 334]  # ceil(1001 / 3), like DistributedSampler
        rows = sorted(x for s in shares for x in s)
        assert rows == sorted([*range(1001), 0])  # every row, plus the first again as padding
    stats = splits[0].stats()
    assert stats["padded_rows"] == {0: 1, 1: 1} and stats["dropped_rows"] == {0: 0, 1: 0}


def test_equal_shares_with_drop_last_drop_the_remainder_in_actors():
    ds = bridge.range(1001, override_num_blocks=9)
    splits = streaming_split(ds, 3, drop_last=True)
    consumers = [Consumer.remote() for _ in splits]
    results = ray.get([c.epochs.remote(s, 2, 64) for c, s in zip(consumers, splits)], timeout=300)
    for epoch in range(2):
        shares = [r[epoch] for r in results]
        assert [len(s) for s in shares] == [333, 333, 333]
        union = set().union(*map(set, shares))
        assert len(union) == 999 and union <= set(range(1001))
    assert splits[0].stats()["dropped_rows"] == {0: 2, 1: 2}


def _read_in_step(splits, epochs=1):
    """Each epoch of every split, read in the driver (split 0 on this thread, so its warnings are caught)."""
    out = [[] for _ in splits]

    def read(i):
        for _ in range(epochs):
            out[i].append([int(x) for b in splits[i].iter_batches(batch_size=7) for x in b["id"]])

    threads = [threading.Thread(target=read, args=(i,)) for i in range(1, len(splits))]
    for t in threads:
        t.start()
    read(0)
    for t in threads:
        t.join(timeout=300)
    return out


def test_101_rows_in_2_splits_pad_one_row_and_say_so():
    splits = bridge.range(101, override_num_blocks=4).streaming_split(2)
    with pytest.warns(UserWarning, match=r"101 rows.*1 row.*repeated.*drop_last=True") as record:
        out = _read_in_step(splits, epochs=2)
    assert len([w for w in record if "streaming_split" in str(w.message)]) == 2  # once per epoch
    for epoch in range(2):
        a, b = out[0][epoch], out[1][epoch]
        assert len(a) == len(b) == 51
        assert sorted(a + b) == sorted([*range(101), 0])
    assert splits[1].stats()["padded_rows"] == {0: 1, 1: 1}


def test_fewer_rows_than_splits_wrap_around_so_every_split_gets_one():
    splits = bridge.range(3).streaming_split(5)
    with pytest.warns(UserWarning, match="2 rows"):
        out = _read_in_step(splits)
    assert [len(share[0]) for share in out] == [1, 1, 1, 1, 1]
    assert sorted(x for share in out for x in share[0]) == [0, 0, 1, 1, 2]
    assert splits[0].stats()["padded_rows"] == {0: 2}


def test_one_row_pads_by_repeating_it():
    splits = bridge.range(1).streaming_split(4)
    with pytest.warns(UserWarning, match="3 rows"):
        out = _read_in_step(splits)
    assert [share[0] for share in out] == [[0], [0], [0], [0]]


def test_drop_last_drops_the_remainder_and_says_so():
    splits = streaming_split(bridge.range(101, override_num_blocks=4), 2, drop_last=True)
    with pytest.warns(UserWarning, match=r"101 rows.*1 row.*dropped"):
        out = _read_in_step(splits)
    assert len(out[0][0]) == len(out[1][0]) == 50
    assert len(set(out[0][0]) | set(out[1][0])) == 100
    assert splits[0].stats()["dropped_rows"] == {0: 1} and splits[0].stats()["padded_rows"] == {0: 0}


def test_drop_last_with_fewer_rows_than_splits_delivers_nothing():
    splits = streaming_split(bridge.range(3), 5, drop_last=True)
    with pytest.warns(UserWarning, match="3 rows"):
        out = _read_in_step(splits)
    assert out == [[[]]] * 5


def test_evenly_divisible_rows_give_no_warning():
    splits = bridge.range(100, override_num_blocks=3).streaming_split(4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = _read_in_step(splits)
    assert sorted(x for share in out for x in share[0]) == list(range(100))
    assert splits[0].stats()["padded_rows"] == {0: 0}


def test_unequal_mode_keeps_every_row():
    a, b = bridge.range(101, override_num_blocks=4).streaming_split(2, equal=False)
    c1, c2 = Consumer.remote(), Consumer.remote()
    ra, rb = ray.get([c1.epochs.remote(a, 1, 10), c2.epochs.remote(b, 1, 10)], timeout=300)
    assert sorted(ra[0] + rb[0]) == list(range(101))
    assert a.stats()["padded_rows"] == {0: 0} and a.stats()["dropped_rows"] == {0: 0}


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


def test_static_split_equal_says_how_many_rows_it_drops():
    with pytest.warns(UserWarning, match=r"split\(3, equal=True\).*10 rows.*1 row dropped.*equal=False"):
        parts = bridge.range(10).split(3, equal=True)
    assert [p.count() for p in parts] == [3, 3, 3]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert [p.count() for p in bridge.range(9).split(3, equal=True)] == [3, 3, 3]
        assert [p.count() for p in bridge.range(10).split(3)] == [4, 3, 3]


def test_consumers_that_break_early_release_the_epoch_and_the_next_one_runs():
    splits = bridge.range(20_000, override_num_blocks=20).streaming_split(2)
    for s in splits:
        for _ in s.iter_batches(batch_size=100):
            break
    counts = [0, 0]

    def read(i: int) -> None:
        counts[i] = sum(len(b["id"]) for b in splits[i].iter_batches(batch_size=1000))

    threads = [threading.Thread(target=read, args=(i,)) for i in range(2)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert counts == [10_000, 10_000] and time.monotonic() - t0 < 30
