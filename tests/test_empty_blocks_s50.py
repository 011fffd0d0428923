"""A block with no rows among others must not change an answer (found by a multi-block hunt, session 50).

pyarrow (26) aborts the whole process when it groups a dictionary column of no rows with ``distinct``:
``unique`` / ``Unique`` / ``CountDistinct`` of a Categorical column crashed the worker (Ray retried it,
then raised ``WorkerCrashedError``) as soon as one block was empty -- what a ``filter`` leaves.
"""

from __future__ import annotations

import pyarrow as pa

import bridge


def _with_an_empty_block() -> bridge.Dataset:
    keep = pa.table({"g": [1, 1, 1], "k": pa.array(["b", "a", "b"]).dictionary_encode(),
                     "n": pa.array([2**53 + 1, 0, 2**53 + 1]).dictionary_encode()})
    drop = pa.table({"g": [2], "k": pa.array(["c"]).dictionary_encode(), "n": pa.array([5]).dictionary_encode()})
    ds = bridge.from_arrow([keep, drop]).filter(expr="g == 1")  # the second block: no rows left
    assert ds.num_blocks() == 2
    return ds


def test_unique_and_count_distinct_of_a_dictionary_column_with_an_empty_block():
    ds = _with_an_empty_block()
    assert sorted(ds.unique("k")) == ["a", "b"]
    assert sorted(ds.unique("n")) == [0, 2**53 + 1]
    assert ds.aggregate(bridge.CountDistinct("k"), bridge.CountDistinct("n")) == {
        "count_distinct(k)": 2, "count_distinct(n)": 2}
    out = ds.groupby("g").aggregate(bridge.Unique("k")).take_all()
    assert len(out) == 1 and out[0]["g"] == 1 and sorted(out[0]["unique(k)"]) == ["a", "b"]


def test_every_block_empty_gives_no_value_not_a_crash():
    ds = _with_an_empty_block().filter(expr="g == 99")
    assert ds.count() == 0
    assert ds.unique("k") == []
    assert ds.groupby("g").aggregate(bridge.Unique("k")).take_all() == []
