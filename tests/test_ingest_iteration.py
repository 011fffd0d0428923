"""Epochs, local shuffle, resume and static splits (issue 3)."""

from __future__ import annotations

import pytest

import bridge
from bridge.errors import BridgeError


def _ids(batches):
    return [int(x) for b in batches for x in b["id"]]


def test_local_shuffle_deterministic_with_seed_and_varies_without():
    ds = bridge.range(2000, override_num_blocks=8).materialize()
    kw = dict(batch_size=100, local_shuffle_buffer_size=500)
    a = _ids(ds.iter_batches(local_shuffle_seed=7, **kw))
    b = _ids(ds.iter_batches(local_shuffle_seed=7, **kw))
    assert a == b and sorted(a) == list(range(2000)) and a != list(range(2000))
    e1, e2 = _ids(ds.iter_batches(**kw)), _ids(ds.iter_batches(**kw))
    assert sorted(e1) == sorted(e2) == list(range(2000))
    assert e1 != e2


@pytest.mark.parametrize("shuffle", [False, True])
def test_resume_mid_epoch_gives_exactly_one_epoch(shuffle):
    ds = bridge.range(1000, override_num_blocks=7).materialize().randomize_block_order()
    kw = dict(batch_size=30, local_shuffle_buffer_size=200 if shuffle else None)
    it = ds.iter_batches(**kw)
    seen = []
    for b in it:
        seen.extend(int(x) for x in b["id"])
        if len(seen) >= 370:  # 37% of the epoch
            break
    state = it.state_dict()
    assert state["rows_consumed"] == len(seen) and state["epoch"] == 0
    resumed = ds.iter_batches(**kw)
    resumed.load_state_dict(state)
    rest = _ids(resumed)
    assert len(seen) + len(rest) == 1000
    assert sorted(seen + rest) == list(range(1000))


def test_load_state_after_start_raises_with_hint():
    it = bridge.range(10).iter_batches(batch_size=2)
    next(it)
    with pytest.raises(BridgeError, match="Hint"):
        it.load_state_dict({"epoch": 0, "seed": 1, "rows_consumed": 2})


def test_randomize_block_order_reorders_per_epoch_keeps_rows():
    ds = bridge.range(400, override_num_blocks=20).materialize().randomize_block_order()
    orders = [_ids(ds.iter_batches(batch_size=None)) for _ in range(3)]
    assert all(sorted(o) == list(range(400)) for o in orders)
    assert len({tuple(o) for o in orders}) > 1
    fixed = bridge.range(400, override_num_blocks=20).materialize().randomize_block_order(seed=3)
    assert _ids(fixed.iter_batches(batch_size=None)) == _ids(fixed.iter_batches(batch_size=None))


def test_repeat_streams_n_epochs_and_reruns_steps_after_materialize():
    ds = bridge.range(50, override_num_blocks=5).materialize().randomize_block_order()
    rows = _ids(ds.repeat(3).iter_batches(batch_size=None))
    assert len(rows) == 150
    epochs = [rows[i * 50:(i + 1) * 50] for i in range(3)]
    assert all(sorted(e) == list(range(50)) for e in epochs)
    assert bridge.range(7).repeat().limit(20).count() == 20
    mapped = bridge.range(4).repeat(2).map_batches(lambda b: {"x": b["id"] + 1}).take_all()
    assert [r["x"] for r in mapped] == [1, 2, 3, 4, 1, 2, 3, 4]


def test_split_variants():
    parts = bridge.range(10, override_num_blocks=3).split(3)
    assert [p.count() for p in parts] == [4, 3, 3]
    assert sorted(r["id"] for p in parts for r in p.take_all()) == list(range(10))
    assert [p.count() for p in bridge.range(10).split(3, equal=True)] == [3, 3, 3]
    at = bridge.range(10, override_num_blocks=4).split_at_indices([2, 5, 20])
    assert [[r["id"] for r in p.take_all()] for p in at] == [[0, 1], [2, 3, 4], [5, 6, 7, 8, 9], []]
    train, test = bridge.range(100).train_test_split(0.25)
    assert (train.count(), test.count()) == (75, 25)
    assert [r["id"] for r in test.take_all()] == list(range(75, 100))
    with pytest.raises(BridgeError, match="test_size"):
        bridge.range(10).train_test_split(1.5)


def test_iter_batches_drop_last_and_sizes():
    sizes = [len(b["id"]) for b in bridge.range(10, override_num_blocks=3).iter_batches(batch_size=4, drop_last=True)]
    assert sizes == [4, 4]
