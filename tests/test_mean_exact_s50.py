"""The mean of an integer column is the same however the rows are cut into blocks (session 50).

Integers were summed as float64: each value past 2**53 and each block's partial sum rounded, so
``mean`` gave 1.0 on one block and 0.8 on two for a true 1.2 (Ray Data: 1.2). They are summed as int64
(exact) and the sum rounded once; a sum past int64 takes the float64 sum, as NumPy's mean does.
"""

from __future__ import annotations

from fractions import Fraction

import pyarrow as pa
import pytest

import bridge

VALUES = [3, 2**53 + 1, -(2**53) - 3, 1, 4]  # sum 6, mean 1.2


def _cuts(t: pa.Table) -> list[bridge.Dataset]:
    return [bridge.from_arrow([t]), bridge.from_arrow([t.slice(0, 2), t.slice(2)]),
            bridge.from_arrow([t.slice(i, 1) for i in range(t.num_rows)])]


@pytest.mark.parametrize("typ", [pa.int64(), pa.int32(), pa.uint32()], ids=str)
def test_mean_of_ints_is_exact_and_the_same_for_every_cut(typ):
    values = VALUES if typ == pa.int64() else [3, 2**31 - 1, 7, 1, 4]
    t = pa.table({"g": [0, 1, 0, 1, 0], "x": pa.array(values, typ)})
    want = float(Fraction(sum(values), len(values)))
    by_group = {g: float(Fraction(sum(v for k, v in zip(t["g"].to_pylist(), values) if k == g),
                                  t["g"].to_pylist().count(g))) for g in (0, 1)}
    for ds in _cuts(t):
        assert ds.mean("x") == want
        got = {r["g"]: r["mean(x)"] for r in ds.groupby("g").mean("x").take_all()}
        assert got == by_group


def test_a_sum_past_int64_takes_the_float_sum_and_nulls_still_count_as_before():
    big = pa.table({"x": pa.array([2**62] * 4, pa.int64())})  # the int64 sum wraps to 0
    assert [ds.mean("x") for ds in _cuts(big)] == [float(2**62)] * 3
    with_null = pa.table({"g": [0, 0, 1], "x": pa.array([2**53 + 1, None, None], pa.int64())})
    for ds in _cuts(with_null):
        rows = {r["g"]: r["mean(x)"] for r in ds.groupby("g").mean("x").take_all()}
        assert rows == {0: float(2**53 + 1), 1: None}
        assert ds.aggregate(bridge.Mean("x", ignore_nulls=False)) == {"mean(x)": None}


def test_blocks_of_int64_and_float64_in_one_column_take_the_float_mean():
    """A union whose int64 input's schema is known only by running keeps each block's type (schema():
    double): the int block's exact sum next to the float block's once refused to merge past 2**53.
    (Where the plan knows both schemas the union casts the int blocks, and 2**53 + 1 has no float64.)"""
    ints = bridge.from_blocks([pa.table({"x": pa.array([2**53 + 1, 3 * 2**60], pa.int64())})])
    floats = bridge.from_blocks([pa.table({"x": pa.array([1.0, 2.5])})])
    ds = ints.map_batches(lambda b: b, batch_format="pyarrow").union(floats)
    assert ds.schema().field("x").type == pa.float64()
    assert ds.mean("x") == (float(2**53 + 1) + float(3 * 2**60) + 1.0 + 2.5) / 4
    with pytest.raises(bridge.SchemaMismatchError, match=r"union: a block of an input does not fit .*int64 -> double"):
        ints.union(floats).mean("x")
    wraps = bridge.from_blocks([pa.table({"x": pa.array([4 * 10**18] * 3, pa.int64())})]).map_batches(
        lambda b: b, batch_format="pyarrow").union(
        bridge.from_blocks([pa.table({"x": pa.array([4e18])})]))
    assert wraps.mean("x") == 4e18  # the int block's int64 sum wrapped; its float sum did not
