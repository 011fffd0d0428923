"""``count()`` from the plan where it says: a sort, shuffle or repartition of known rows is not run to count
them (it was: ``read_parquet(...).random_shuffle().count()`` shuffled everything), as Ray Data counts from
its operators' metadata.  Where the plan does not say (a function, a filter, a zip) it still runs."""

from __future__ import annotations

import pyarrow as pa
import pytest

import bridge
from bridge.plan.logical import known_num_rows


def _base():
    return bridge.from_arrow([pa.table({"k": [i % 3 for i in range(10 * b, 10 * b + 10)],
                                        "v": list(range(10 * b, 10 * b + 10))}) for b in range(4)])


CHAINS = {
    "sort": lambda ds: ds.sort("v", descending=True),
    "random_shuffle": lambda ds: ds.random_shuffle(seed=3),
    "repartition": lambda ds: ds.repartition(3),
    "repartition rows": lambda ds: ds.repartition(target_num_rows_per_block=7),
    "repartition keys": lambda ds: ds.repartition(2, keys=["k"], sort=True),
    "repartition shuffle": lambda ds: ds.repartition(5, shuffle=True),
    "randomize_block_order": lambda ds: ds.randomize_block_order(seed=1),
    "select + rename": lambda ds: ds.select_columns(["v"]).rename_columns({"v": "w"}),
    "limit below": lambda ds: ds.random_shuffle(seed=1).limit(25),
    "limit above": lambda ds: ds.sort("v").limit(1000),
    "union": lambda ds: ds.union(ds.sort("v"), ds.limit(3)),
    "range source": lambda ds: bridge.range(17).random_shuffle(),
}


@pytest.mark.parametrize("name", list(CHAINS))
def test_counted_from_the_plan_as_many_as_running_it_gives(name):
    ds = CHAINS[name](_base())
    known = known_num_rows(ds._plan)
    assert known is not None
    assert ds.count() == known == len(ds.take_all())


def _boom(bundles, ctx):
    raise RuntimeError("ran")


def test_a_row_keeping_all_to_all_is_not_run_to_count():
    ds = _base().random_shuffle(seed=1)._all_to_all(_boom, "Boom", preserves_rows=True)
    assert ds.count() == 40
    with pytest.raises(Exception, match="ran"):
        ds.take_all()
    other = _base()._all_to_all(_boom, "Boom")  # (rows not kept: the count runs it)
    assert known_num_rows(other._plan) is None
    with pytest.raises(Exception, match="ran"):
        other.count()


def test_where_the_plan_does_not_say_count_runs():
    ds = _base()
    for unknown in (ds.filter(lambda r: r["v"] < 5), ds.map_batches(lambda b: {"v": b["v"][:1]}),
                    ds.groupby("k").count(), ds.random_sample(0.5, seed=1), ds.zip(ds.select_columns(["v"])
                                                                                    .rename_columns({"v": "w"}))):
        assert known_num_rows(unknown._plan) is None
    assert ds.filter(lambda r: r["v"] < 5).sort("v").count() == 5
    assert ds.map_batches(lambda b: {"v": b["v"][:1]}).random_shuffle().count() == 4
    with pytest.raises(Exception, match="(?i)row"):  # a zip of unequal counts still fails when counted
        ds.zip(ds.limit(5).select_columns(["v"]).rename_columns({"v": "w"})).count()
