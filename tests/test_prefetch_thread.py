"""The iterator's producer: on the consumer's thread for a light loop, on a thread for a heavy one.

``bridge.iteration.batch_iterator._background`` decides from measured times;
the waits below are 10-40x away from its thresholds, so the decisions do not
depend on the machine's speed.  Whatever thread produces, every item arrives
once, in order, errors reach the consumer and an early stop closes the source.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

import bridge
from bridge.iteration.batch_iterator import _background

PRODUCE_S = 0.002


class Source:
    """A generator of ``n`` items that records which thread made each one."""

    def __init__(self, n: int, fail_at: int | None = None, produce_s: float = PRODUCE_S) -> None:
        self.n, self.fail_at, self.produce_s = n, fail_at, produce_s
        self.made_on: list[str] = []
        self.closed = False

    def __iter__(self) -> Iterator[int]:
        try:
            for i in range(self.n):
                time.sleep(self.produce_s)
                if i == self.fail_at:
                    raise ValueError(f"item {i} is bad")
                self.made_on.append(threading.current_thread().name)
                yield i
        finally:
            self.closed = True


def _consume(items: Iterator[int], body_s: float | list[float]) -> list[int]:
    out = []
    for i in items:
        out.append(i)
        wait = body_s[i] if isinstance(body_s, list) else body_s
        if wait:
            time.sleep(wait)
    return out


def test_a_light_loop_gets_its_items_made_on_its_own_thread():
    src = Source(60, produce_s=0.01)
    before = {t.ident for t in threading.enumerate() if t.name == "raybridge-batcher"}
    assert _consume(_background(iter(src), 2), 0.0) == list(range(60))
    me = threading.current_thread().name
    # The thread never takes over (a scheduling hiccup of the loaded machine may hand it a few items).
    assert src.made_on.count(me) >= 44
    if src.made_on == [me] * 60:  # and was never started
        assert {t.ident for t in threading.enumerate() if t.name == "raybridge-batcher"} <= before


def test_a_heavy_loop_gets_its_items_made_ahead_on_the_thread():
    src = Source(12)
    assert _consume(_background(iter(src), 2), 0.02) == list(range(12))
    assert src.made_on[0] == threading.current_thread().name  # the first item, before anything is measured
    assert set(src.made_on[2:]) == {"raybridge-batcher"}


def test_switching_both_ways_keeps_every_item_once_in_order():
    n = 100
    # heavy, light, heavy again: the producer moves to the thread, back, and to the thread again
    body = [0.02] * 10 + [0.0] * 70 + [0.02] * 20
    src = Source(n)
    assert _consume(_background(iter(src), 2), body) == list(range(n))
    me = threading.current_thread().name
    where = ["thread" if name == "raybridge-batcher" else "consumer" for name in src.made_on]
    assert where[0] == "consumer" and "thread" in where[1:10]
    assert "consumer" in where[30:80]  # the light stretch went back to the consumer's thread
    assert where[-1] == "thread"
    assert len(src.made_on) == n and me != "raybridge-batcher"


@pytest.mark.parametrize("body_s", [0.0, 0.02], ids=["consumer-thread", "background-thread"])
def test_an_error_reaches_the_consumer_after_the_items_before_it(body_s):
    src = Source(20, fail_at=7)
    got: list[int] = []
    with pytest.raises(ValueError, match="item 7 is bad"):
        for i in _background(iter(src), 2):
            got.append(i)
            time.sleep(body_s)
    assert got == list(range(7))


@pytest.mark.parametrize("body_s", [0.0, 0.02], ids=["consumer-thread", "background-thread"])
def test_stopping_early_closes_the_source(body_s):
    src = Source(1000)
    items = _background(iter(src), 2)
    for i in items:
        time.sleep(body_s)
        if i == 5:
            break
    items.close()  # type: ignore[attr-defined]
    deadline = time.monotonic() + 5
    while not src.closed and time.monotonic() < deadline:
        time.sleep(0.01)
    assert src.closed
    assert len(src.made_on) < 20  # the thread stopped within its prefetch depth


def test_torch_batches_are_identical_whoever_makes_them():
    pytest.importorskip("torch")
    import numpy as np

    ds = bridge.from_numpy({"x": np.arange(50_000, dtype=np.float32),
                            "img": np.arange(50_000 * 12, dtype=np.uint8).reshape(50_000, 3, 4)}).repartition(7)
    light = [b for b in ds.iter_torch_batches(batch_size=1000, prefetch_batches=2)]
    heavy = []
    for b in ds.iter_torch_batches(batch_size=1000, prefetch_batches=2):
        heavy.append(b)
        time.sleep(0.005)
    inline = list(ds.iter_torch_batches(batch_size=1000, prefetch_batches=0))
    assert len(light) == len(heavy) == len(inline) == 50
    for a, b, c in zip(light, heavy, inline):
        for k in ("x", "img"):
            assert a[k].dtype == b[k].dtype == c[k].dtype
            assert a[k].equal(b[k]) and a[k].equal(c[k])


@pytest.mark.parametrize("fail_at", [10, 11, 12, 13])
def test_an_error_while_the_producer_moves_back_reaches_the_consumer(fail_at):
    # Heavy, then light: the source fails around the items where the thread hands production back.
    src = Source(40, fail_at=fail_at)
    body = [0.02] * 10 + [0.0] * 30
    got: list[int] = []
    with pytest.raises(ValueError, match=f"item {fail_at} is bad"):
        for i in _background(iter(src), 2):
            got.append(i)
            time.sleep(body[i])
    assert got == list(range(fail_at))
