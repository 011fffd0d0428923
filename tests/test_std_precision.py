"""Std is exact to rounding when the mean is large against the spread, in one block or many, grouped or not.

Arrow's variance kernel, which each block's state came from, lost precision as the mean grew:
values of mean 1e12 and spread 0.5 gave a std 1e-6 off in relative terms (pandas: 6e-10), and
int64 values near 1.7e18 were off after a merge of two blocks.  Each block's values are now taken
less a value of their group first; the expected figures are computed with exact fractions.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pyarrow as pa
import pytest

import bridge


def _exact_std(values, ddof: int = 1) -> float:
    f = [Fraction(int(v)) if isinstance(v, (int, np.integer)) else Fraction(float(v)) for v in values]
    mean = sum(f) / len(f)
    return float(sum((x - mean) ** 2 for x in f) / (len(f) - ddof)) ** 0.5


VALS = 1e12 + (np.arange(1000) % 7) * 0.25


@pytest.mark.parametrize("blocks", [1, 10])
def test_std_of_a_large_mean_and_a_small_spread(blocks):
    size = len(VALS) // blocks
    ds = bridge.from_arrow([pa.table({"x": VALS[i * size:(i + 1) * size]}) for i in range(blocks)])
    assert ds.std("x") == pytest.approx(_exact_std(VALS), rel=1e-12)
    assert ds.std("x", ddof=0) == pytest.approx(_exact_std(VALS, ddof=0), rel=1e-12)


def test_grouped_std_with_groups_far_apart_in_scale():
    # One group near 1e12, one near 0 with a tiny spread, one with nulls and NaN-free values, keys with a null.
    rng = np.random.default_rng(3)
    rows = 3000
    k = rng.integers(0, 3, rows)
    x = np.where(k == 0, 1e12 + rng.random(rows), np.where(k == 1, 1e-3 * rng.random(rows), rng.normal(5, 2, rows)))
    keys = pa.array(np.where(k == 2, None, k).tolist(), pa.int64())
    table = pa.table({"k": keys, "x": x})
    ds = bridge.from_arrow([table.slice(i * 300, 300) for i in range(10)])
    got = {r["k"]: r["std(x)"] for r in ds.groupby("k").std("x").take_all()}
    for key, mask in ((0, k == 0), (1, k == 1), (None, k == 2)):
        assert got[key] == pytest.approx(_exact_std(x[mask]), rel=1e-11), key


def test_std_of_int64_values_near_2_63_over_two_blocks_is_exact():
    ints = [1_700_000_000_000_000_000 + i * 10**9 for i in range(10)]
    ds = bridge.from_arrow([pa.table({"x": ints[:5]}), pa.table({"x": ints[5:]})])
    assert ds.std("x") == pytest.approx(_exact_std(ints), rel=1e-14)


def test_std_edge_cases_keep_their_answers():
    assert bridge.from_items([{"x": 1.0}, {"x": 3.0}]).std("x") == pytest.approx(2**0.5)
    assert np.isnan(bridge.from_items([{"x": None}, {"x": float("nan")}, {"x": 1.0}]).std("x"))
    assert bridge.from_items([{"x": None}, {"x": None}]).std("x") is None
    assert np.isnan(bridge.from_items([{"x": 4.0}]).std("x"))  # one value, ddof=1: undefined
    assert bridge.from_items([{"x": float("inf")}, {"x": 1.0}]).std("x") != 0
    u = bridge.from_arrow(pa.table({"x": pa.array([2**64 - 1, 0, 5], pa.uint64())}))
    assert u.std("x") == pytest.approx(float(np.std(np.array([2**64 - 1, 0, 5], dtype=np.float64), ddof=1)), rel=1e-9)
    f16 = bridge.from_arrow(pa.table({"x": pa.array(np.array([1, 2, 4], dtype=np.float16))}))
    assert f16.std("x") == pytest.approx(float(np.std([1.0, 2.0, 4.0], ddof=1)))
    # Keys of every kind that numbers rows: dictionary, float (0.0 and -0.0 one group, NaN one), struct (no shift).
    d = bridge.from_arrow(pa.table({"k": pa.array(["a", "b", "a"]).dictionary_encode(), "x": [1.0, 5.0, 3.0]}))
    assert {r["k"]: r["std(x)"] for r in d.groupby("k").std("x").take_all()}["a"] == pytest.approx(2**0.5)
    fk = bridge.from_arrow(pa.table({"k": [0.0, -0.0, float("nan"), float("nan")], "x": [1.0, 3.0, 2.0, 6.0]}))
    stds = sorted(r["std(x)"] for r in fk.groupby("k").std("x").take_all())
    assert stds == pytest.approx([2**0.5, 8**0.5])
