"""The actor pool's two driver-side parts that need no Ray: the batch cutter and the scaling policy.

(The operator with real actors is in test_actors_pool.py, test_actors_exact_batches.py and the
reliability tests.)
"""

from __future__ import annotations

import pytest

from bridge.block import BlockMetadata
from bridge.execution.batch_cutter import BatchCutter
from bridge.execution.bundle import RefBundle
from bridge.execution.pool import AutoscalingPolicy


def _bundle(*sizes: int) -> RefBundle:
    # The cutter reads metadata only; a block ref is passed through untouched, so a name stands in for it.
    return RefBundle([f"block{n}" for n in sizes], [BlockMetadata(num_rows=n, size_bytes=8 * n) for n in sizes])


def _rows(items):
    return [(item.refs, item.slices, item.num_rows) for item in items]


def test_cutter_combines_small_blocks_and_cuts_large_ones_into_exact_calls():
    cutter = BatchCutter(4)
    assert _rows(cutter.add(_bundle(3))) == []
    assert cutter.pending_bytes() == 24
    assert _rows(cutter.add(_bundle(10))) == [
        (["block3", "block10"], [(0, 3), (0, 1)], 4),
        (["block10"], [(1, 4)], 4),
        (["block10"], [(5, 4)], 4),
    ]
    assert cutter.carry_rows == 1
    assert _rows(cutter.add(_bundle(0))) == []          # an empty block takes no row
    assert _rows(cutter.finish(keep_schema=True)) == [(["block10"], [(9, 1)], 1)]   # the short last call
    assert cutter.carry_rows == 0 and cutter.pending_bytes() == 0


def test_cutter_emits_every_row_once_and_in_order():
    cutter = BatchCutter(7)
    sizes = [5, 1, 13, 0, 2, 9, 7, 3]
    items = []
    for n in sizes:
        items += cutter.add(_bundle(n))
    items += cutter.finish(keep_schema=False)
    assert [i.num_rows for i in items] == [7, 7, 7, 7, 7, 5]
    covered = [(ref, off, length) for i in items for ref, (off, length) in zip(i.refs, i.slices)]
    # Each block's rows appear exactly once, contiguous, in arrival order.
    expect = [f"block{n}" for n in sizes if n]
    seen: dict[str, int] = {}
    for ref, off, length in covered:
        assert off == seen.get(ref, 0), (ref, off)
        seen[ref] = off + length
    assert seen == {f"block{n}": n for n in sizes if n}
    assert list(dict.fromkeys(ref for ref, _, _ in covered)) == expect
    assert cutter.carry_rows == 0


def test_cutter_keeps_the_schema_of_an_all_empty_input_only_when_asked():
    cutter = BatchCutter(4)
    cutter.add(_bundle(0))
    assert _rows(cutter.finish(keep_schema=False)) == []
    cutter.add(_bundle(0))
    assert _rows(cutter.finish(keep_schema=True)) == [(["block0"], None, 0)]


@pytest.mark.parametrize(
    ("actors", "starting", "queued", "free_slots", "add"),
    [(1, False, 5, 4, True), (1, True, 5, 4, False), (3, False, 9, 0, False), (2, False, 4, 4, False),
     (0, False, 1, 0, True)],
)
def test_policy_adds_an_actor_only_when_input_waits_for_saturated_actors(actors, starting, queued, free_slots, add):
    policy = AutoscalingPolicy(min_actors=1, max_actors=3)
    assert policy.should_add(actors=actors, starting=starting, queued=queued, free_slots=free_slots) is add


def test_policy_releases_idle_actors_beyond_min_and_all_once_input_ends():
    policy = AutoscalingPolicy(min_actors=2, max_actors=4, idle_release_s=5.0)
    assert policy.should_release(actors=3, idle_for=6.0, queued=0, finished_input=False)
    assert not policy.should_release(actors=3, idle_for=4.0, queued=0, finished_input=False)
    assert not policy.should_release(actors=3, idle_for=6.0, queued=1, finished_input=False)
    assert not policy.should_release(actors=2, idle_for=600.0, queued=0, finished_input=False)
    assert policy.should_release(actors=1, idle_for=0.0, queued=0, finished_input=True)
    assert policy.should_replace(actors=0, work_left=False)       # never below one while the op lives
    assert not policy.should_replace(actors=2, work_left=False)
    assert policy.should_replace(actors=2, work_left=True)

