"""random_shuffle, sort, repartition, random_sample, zip and union checked against pandas."""

from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pytest
import ray

import bridge
from bridge.errors import SchemaMismatchError
from bridge.pandas_types import block_to_pandas  # what Dataset.to_pandas gives
from tests.ops_data import mixed_table


@pytest.fixture(scope="module")
def table() -> pa.Table:
    return mixed_table()


def _ds(table: pa.Table, blocks: int = 4) -> bridge.Dataset:
    return bridge.from_arrow(table, override_num_blocks=blocks)


def _rows_multiset(df: pd.DataFrame) -> list[tuple]:
    return sorted(map(repr, df.astype(object).where(df.notna(), None).itertuples(index=False)))


# ------------------------------------------------------------------ shuffle


def test_shuffle_is_a_permutation_and_moves_rows(table):
    out = _ds(table).random_shuffle(seed=3).to_pandas()
    assert _rows_multiset(out) == _rows_multiset(block_to_pandas(table))
    assert out["v"].tolist() != table.column("v").to_pylist()


def test_seeded_shuffle_is_deterministic_and_unseeded_differs_per_epoch():
    ds = bridge.range(2000, override_num_blocks=4)
    a = [r["id"] for r in ds.random_shuffle(seed=7).iter_rows()]
    b = [r["id"] for r in ds.random_shuffle(seed=7).iter_rows()]
    assert a == b
    epochs = ds.random_shuffle()
    first = [r["id"] for r in epochs.iter_rows()]
    second = [r["id"] for r in epochs.iter_rows()]
    assert first != second
    assert sorted(first) == sorted(second) == list(range(2000))


def test_shuffle_num_blocks_and_edge_cases(table):
    assert _ds(table).random_shuffle(seed=1, num_blocks=3).num_blocks() == 3
    assert _ds(table, blocks=1).random_shuffle(seed=1).count() == table.num_rows
    empty = bridge.from_arrow(table.slice(0, 0))
    assert empty.random_shuffle(seed=1).count() == 0


# ------------------------------------------------------------------ sort


@pytest.mark.parametrize("blocks", [1, 5])
@pytest.mark.parametrize(
    ("keys", "descending"),
    [("x", False), ("x", True), ("v", False), ("v", True), ("s", False), ("ts", True), (["k", "x"], [False, True]), (["s", "k", "v"], False)],
)
def test_sort_matches_pandas(table, blocks, keys, descending):
    out = _ds(table, blocks).sort(keys, descending=descending).to_pandas()
    cols = [keys] if isinstance(keys, str) else keys
    asc = [not d for d in descending] if isinstance(descending, list) else not descending
    want = block_to_pandas(table).sort_values(cols, ascending=asc, na_position="last", kind="stable")
    got_keys = out[cols].astype(object).where(out[cols].notna(), None).values.tolist()
    want_keys = want[cols].astype(object).where(want[cols].notna(), None).values.tolist()
    assert got_keys == want_keys
    assert _rows_multiset(out) == _rows_multiset(block_to_pandas(table))


def test_sort_nulls_last_both_directions_and_zero_rows():
    ds = bridge.from_items([{"x": 2}, {"x": None}, {"x": 1}, {"x": 3}], override_num_blocks=2)
    assert [r["x"] for r in ds.sort("x").take_all()] == [1, 2, 3, None]
    assert [r["x"] for r in ds.sort("x", descending=True).take_all()] == [3, 2, 1, None]
    assert bridge.from_arrow(pa.table({"x": pa.array([], pa.int64())})).sort("x").count() == 0


def test_sort_unknown_column_names_it(table):
    with pytest.raises(SchemaMismatchError, match=r"\[.nope.\] not found[\s\S]*Hint:"):
        _ds(table).sort("nope").take_all()


# ------------------------------------------------------------------ repartition, sample, zip, union


def test_repartition_keeps_order_and_balances(table):
    ds = _ds(table, 3).repartition(7)
    assert ds.num_blocks() == 7
    sizes = [b.num_rows for b in ds.iter_internal_ref_bundles()]
    assert max(sizes) - min(sizes) <= 1
    assert ds.to_arrow().equals(table)
    shuffled = _ds(table).repartition(2, shuffle=True)
    assert shuffled.num_blocks() == 2
    assert _rows_multiset(shuffled.to_pandas()) == _rows_multiset(block_to_pandas(table))


def test_random_sample_fraction_and_seed():
    ds = bridge.range(10_000, override_num_blocks=4)
    a = [r["id"] for r in ds.random_sample(0.2, seed=5).iter_rows()]
    assert a == [r["id"] for r in ds.random_sample(0.2, seed=5).iter_rows()]
    assert 1500 < len(a) < 2500
    assert ds.random_sample(0.0).count() == 0 and ds.random_sample(1.0).count() == 10_000


def test_zip_aligns_rows_across_different_blockings(table):
    left = _ds(table.select(["k", "x"]), 3)
    right = _ds(table.select(["x", "v"]), 5)
    out = left.zip(right).to_arrow()
    assert out.column_names == ["k", "x", "x_1", "v"]
    assert out.column("x_1").equals(table.column("x")) and out.column("v").equals(table.column("v"))


def test_zip_row_count_mismatch_is_clear():
    with pytest.raises(ValueError, match=r"10 \(left\) vs 9 \(right\)[\s\S]*Hint:"):
        bridge.range(10).zip(bridge.range(9)).take_all()


def test_union_unifies_types_and_names_mismatched_columns():
    a = bridge.from_arrow(pa.table({"x": pa.array([1], pa.int32()), "s": ["a"]}))
    b = bridge.from_arrow(pa.table({"x": pa.array([2], pa.int64()), "s": ["b"]}))
    assert sorted(a.union(b).to_arrow().column("x").to_pylist()) == [1, 2]
    c = bridge.from_arrow(pa.table({"x": [3], "t": ["c"]}))
    with pytest.raises(SchemaMismatchError, match=r"missing \['s'\], unexpected \['t'\]"):
        a.union(c)
    lazy = bridge.range(3).map_batches(lambda b: {"id": b["id"].astype(str)})
    with pytest.raises(SchemaMismatchError, match=r"'id': int64 vs string"):
        bridge.range(3).union(lazy).take_all()


def test_sort_with_boundaries_cuts_blocks_at_those_values_ties_going_after():
    ds = bridge.from_items([{"x": v} for v in [25, 10, None, 3, 20, 19, 10, 40]], override_num_blocks=3)
    out = ds.sort("x", boundaries=[10, 20]).materialize()
    blocks = [ray.get(ref).column("x").to_pylist() for ref in out.get_internal_block_refs()]
    assert blocks == [[3], [10, 10, 19], [20, 25, 40, None]]  # x < 10 | 10 <= x < 20 | x >= 20, nulls last
    # Without nulls a numeric key is placed by binary search: the same rule.
    by_search = bridge.range(30, override_num_blocks=4).sort("id", boundaries=[10, 20]).materialize()
    assert [ray.get(r).column("id").to_pylist() for r in by_search.get_internal_block_refs()] == [
        list(range(10)), list(range(10, 20)), list(range(20, 30))]
    # Empty ranges are kept as empty blocks; a string key takes string boundaries.
    words = bridge.from_items([{"w": w} for w in ["pear", "apple", "fig"]]).sort("w", boundaries=["b", "c", "g"])
    assert [ray.get(r).num_rows for r in words.materialize().get_internal_block_refs()] == [1, 0, 1, 1]


def test_sort_boundaries_are_checked_at_the_call():
    ds = bridge.range(10)
    with pytest.raises(ValueError, match=r"ascending order"):
        ds.sort("id", boundaries=[5, 2])
    with pytest.raises(ValueError, match=r"one ascending key"):
        ds.sort("id", descending=True, boundaries=[5])
    with pytest.raises(ValueError, match=r"do not fit column 'id'"):
        ds.sort("id", boundaries=["a"]).materialize()


def test_repartition_with_keys_gives_exactly_n_blocks_each_key_in_one_block():
    rows = [{"k": (i % 7) if i % 11 else None, "s": str(i % 3), "x": i} for i in range(500)]
    ds = bridge.from_items(rows).repartition(5)
    for n, keys in [(4, ["k"]), (3, ["s", "k"]), (12, "s")]:
        out = ds.repartition(n, keys=keys).materialize()
        assert out.num_blocks() == n
        blocks = list(out.iter_batches(batch_size=None, batch_format="pyarrow"))
        key_cols = [keys] if isinstance(keys, str) else keys
        home: dict = {}
        for i, b in enumerate(blocks):
            for key in set(zip(*[b.column(c).to_pylist() for c in key_cols])):
                assert home.setdefault(key, i) == i, f"key {key} in blocks {home[key]} and {i}"
        assert sorted(r["x"] for r in out.take_all()) == list(range(500))  # nothing lost or repeated
    ordered = ds.repartition(3, keys=["k"], sort=True)
    for b in ordered.iter_batches(batch_size=None, batch_format="pyarrow"):
        ks = b.column("k").to_pylist()
        present = [k for k in ks if k is not None]
        assert present == sorted(present) and ks == present + [None] * (len(ks) - len(present))


@pytest.mark.parametrize("kwargs, match", [
    ({"num_blocks": 3, "sort": True}, "keys= , which is missing|sorts by keys"),
    ({"num_blocks": 3, "keys": []}, "column names"),
    ({"num_blocks": 3, "keys": ["x"], "shuffle": True}, "without shuffle"),
    ({"target_num_rows_per_block": 3, "keys": ["x"]}, "alone"),
])
def test_repartition_refuses_keys_and_sort_it_cannot_honour(kwargs, match):
    with pytest.raises(ValueError, match=match):
        bridge.range(10).repartition(**kwargs)


def test_repartition_with_an_unknown_key_names_it():
    with pytest.raises(SchemaMismatchError, match="'nope'"):
        bridge.range(10).repartition(2, keys=["nope"]).materialize()


def test_sort_boundaries_are_compared_by_value_not_cast_to_the_column_type():
    def blocks(ds: bridge.Dataset, column: str = "x") -> list[list]:
        return [ray.get(r).column(column).to_pylist() for r in ds.materialize().get_internal_block_refs()]

    ints = bridge.from_items([{"x": v} for v in [6, 4, 7, 5]], override_num_blocks=2)
    assert blocks(ints.sort("x", boundaries=[5.5])) == [[4, 5], [6, 7]]  # as Ray Data; not cut at 5
    assert blocks(ints.sort("x", boundaries=[4.9999])) == [[4], [5, 6, 7]]
    assert blocks(ints.sort("x", boundaries=[5.0, 2**70])) == [[4], [5, 6, 7], []]
    # With nulls the rows are placed by the tagged sort rather than by binary search: the same cut.
    nulls = bridge.from_items([{"x": v} for v in [6, None, 4, 7, 5]], override_num_blocks=2)
    assert blocks(nulls.sort("x", boundaries=[5.5])) == [[4, 5], [6, 7, None]]
    f32 = bridge.from_arrow(pa.table({"x": pa.array([0.9, 0.7, 0.5], pa.float32())}))
    assert [len(b) for b in blocks(f32.sort("x", boundaries=[0.7]))] == [2, 1]  # float32(0.7) < 0.7
    i8 = bridge.from_arrow(pa.table({"x": pa.array([127, 1, 100], pa.int8())}))
    out = i8.sort("x", boundaries=[100, 300]).materialize()
    assert blocks(out) == [[1], [100, 127], []] and out.schema().field("x").type == pa.int8()


def test_sort_refuses_a_key_type_arrow_cannot_sort_naming_it():
    from bridge.errors import UnsupportedTypeError

    ds = bridge.from_items([{"l": [i, 1], "m": i} for i in range(6)], override_num_blocks=2)
    with pytest.raises(UnsupportedTypeError, match=r"Sort.*key column 'l' has type list<item: int64>[\s\S]*Hint:"):
        ds.sort("l").take_all()
    with pytest.raises(UnsupportedTypeError, match=r"'l' has type list"):
        ds.sort(["m", "l"], descending=[True, False]).take_all()
    assert [r["m"] for r in ds.sort("m", descending=True).take_all()] == [5, 4, 3, 2, 1, 0]
