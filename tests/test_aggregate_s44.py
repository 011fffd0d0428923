"""Aggregations, session 44: ``Unique(encode_lists=True)`` in Arrow, exact temporal values in ``Unique``, and
Ray Data 2.60's ``ValueCounter``, ``MissingValuePercentage``, ``ZeroPercentage``, ``ApproximateQuantile`` and
``ApproximateTopK`` (differential against Ray Data on the same tables).

* ``Unique(col, encode_lists=True)`` of a list column of hashable elements went through Python (``to_pylist``
  and a set per group); it is now Arrow's grouping, with the same result: values, order (first occurrence)
  and Arrow type, nulls inside lists kept (unless ``ignore_nulls``), empty and null lists contributing none.
* ``Unique`` of lists of timestamps past year 9999 (or of durations past ``timedelta``'s range) raised a raw
  ``OverflowError`` from a map task (Python ``datetime``); lists, structs and maps are now told apart by the
  integers that store their dates, times, timestamps and durations: exact, and the result keeps the values.
* ``CountDistinct`` / ``Unique(ignore_nulls=True)`` of an all-null (``null``-typed) column crashed the worker
  process (Arrow's grouped ``distinct`` of the null type skipping nulls segfaults in pyarrow 26).
* The five aggregations were missing.  Ray Data's two approximate ones need ``datasketches`` (in the test
  extra since session 46): these compute the answer a sketch holding every value gives, exactly; they are compared with Ray
  Data where ``datasketches`` is importable and with the sketches' documented definitions always.
"""

from __future__ import annotations

import contextlib
import inspect
import math

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import bridge
import bridge.ops.aggregate as agg_mod
from bridge.errors import BridgeValueError, UnsupportedTypeError

ray_data = pytest.importorskip("ray.data")
ray_agg = pytest.importorskip("ray.data.aggregate")


def _nan_key(v):
    """A value comparable across results: every NaN one value, lists as tuples."""
    if isinstance(v, float) and v != v:
        return "NaN"
    if isinstance(v, list):
        return tuple(_nan_key(x) for x in v)
    return v


def _as_set(values):
    return sorted((_nan_key(v) for v in values), key=repr)


def _ours(table, agg, key=None, blocks=1):
    ds = bridge.from_arrow(table, override_num_blocks=blocks) if blocks > 1 else bridge.from_arrow(table)
    if key is None:
        return ds.aggregate(agg)[agg.name]
    return {r[key]: r[agg.name] for r in ds.groupby(key).aggregate(agg).take_all()}


def _ray(table, agg, key=None, blocks=1):
    cuts = [i * len(table) // blocks for i in range(blocks + 1)]
    parts = [table.slice(a, b - a) for a, b in zip(cuts, cuts[1:])] if blocks > 1 and len(table) else [table]
    ds = ray_data.from_arrow(parts)
    if key is None:
        return ds.aggregate(agg)[agg.name]
    return {r[key]: r[agg.name] for r in ds.groupby(key).aggregate(agg).take_all()}


@contextlib.contextmanager
def _ray_default_shuffle():
    """Ray Data's own default shuffle (the suite runs it sort-based, for speed: conftest.py).

    Its keyless ValueCounter over several blocks differs by strategy: the default merges the blocks'
    NaN counts into one entry, the sort-based one keeps one entry per block. Users get the default.
    """
    ctx = ray_data.DataContext.get_current()
    before = ctx.shuffle_strategy
    ctx.shuffle_strategy = ray_data.context.ShuffleStrategy.SHUFFLE_V2
    try:
        yield
    finally:
        ctx.shuffle_strategy = before


def _ray_schema_type(table, agg, key):
    return ray_data.from_arrow(table).groupby(key).aggregate(agg).schema().base_schema.field(agg.name).type


def _have_datasketches() -> bool:
    try:
        import datasketches  # noqa: F401
    except ImportError:
        return False
    return True


# ------------------------------------------------------------------ 1. Unique(encode_lists=True) in Arrow


LISTS = pa.table({
    "k": [1, 2, 1, 2, 1, 2, 1],
    "x": pa.array([[1, 2, None], [2, 3], None, [], [1], [None, 4], [5, 5]], pa.list_(pa.int64())),
})


def test_unique_encode_lists_of_hashable_elements_is_arrow_not_python(monkeypatch):
    """The map and merge steps (run here in-process) never build Python keys for int elements."""
    from bridge.ops.groupby import merge_states, partial_states

    def refuse(value):
        raise AssertionError("Unique(encode_lists=True) of int elements built a Python key")

    monkeypatch.setattr(agg_mod, "_value_key", refuse)
    aggs = agg_mod.typed_aggregations("t", [agg_mod.Unique("x", encode_lists=True)], LISTS.schema)
    states = [partial_states(LISTS.slice(0, 4), ["k"], aggs), partial_states(LISTS.slice(4), ["k"], aggs)]
    out = merge_states(states, ["k"], aggs)
    assert out.column("unique(x)").to_pylist() == [[1, 2, None, 5], [2, 3, None, 4]]
    assert out.schema.field("unique(x)").type == pa.list_(pa.int64())


@pytest.mark.parametrize("ignore_nulls", [False, True])
@pytest.mark.parametrize("blocks", [1, 3])
def test_unique_encode_lists_matches_ray_data(ignore_nulls, blocks):
    make = lambda: bridge.Unique("x", ignore_nulls=ignore_nulls, encode_lists=True)  # noqa: E731
    mine = _ours(LISTS, make(), blocks=blocks)
    theirs = _ray(LISTS, ray_agg.Unique("x", ignore_nulls=ignore_nulls, encode_lists=True), blocks=blocks)
    assert _as_set(mine) == _as_set(theirs)
    # First-occurrence order, as the Python path gave it.
    assert mine == ([1, 2, 3, 4, 5] if ignore_nulls else [1, 2, None, 3, 4, 5])
    grouped = _ours(LISTS, make(), key="k", blocks=blocks)
    ray_grouped = _ray(LISTS, ray_agg.Unique("x", ignore_nulls=ignore_nulls, encode_lists=True), key="k",
                       blocks=blocks)
    assert {k: _as_set(v) for k, v in grouped.items()} == {k: _as_set(v) for k, v in ray_grouped.items()}


def test_unique_encode_lists_of_strings_large_and_fixed_size_lists_keeps_the_element_type():
    table = pa.table({
        "k": [1, 1, 2, 2],
        "s": pa.array([["b", "a"], None, ["a", None], []], pa.large_list(pa.string())),
        "f": pa.array([[1, 2], None, [2, 3], [3, 1]], pa.list_(pa.int32(), 2)),
    })
    ds = bridge.from_arrow(table)
    out = ds.groupby("k").aggregate(bridge.Unique("s", encode_lists=True), bridge.Unique("f", encode_lists=True))
    assert out.take_all() == [{"k": 1, "unique(s)": ["b", "a"], "unique(f)": [1, 2]},
                              {"k": 2, "unique(s)": ["a", None], "unique(f)": [2, 3, 1]}]
    types = {f.name: f.type for f in out.schema()}
    assert types["unique(s)"] == pa.list_(pa.string()) and types["unique(f)"] == pa.list_(pa.int32())
    theirs = _ray(table, ray_agg.Unique("s", encode_lists=True))
    assert _as_set(ds.aggregate(bridge.Unique("s", encode_lists=True))["unique(s)"]) == _as_set(theirs)


def test_unique_encode_lists_of_floats_one_nan_and_one_zero_first_kept():
    table = pa.table({"k": [1, 1, 2], "x": [[1.0, float("nan"), -0.0], [0.0, float("nan")], [0.0, -0.0]]})
    mine = _ours(table, bridge.Unique("x", encode_lists=True), blocks=2)
    assert mine[0] == 1.0 and math.isnan(mine[1]) and len(mine) == 3
    assert math.copysign(1.0, mine[2]) == -1.0  # the first zero of the data, as the Python path kept it
    grouped = _ours(table, bridge.Unique("x", encode_lists=True), key="k")
    assert len(grouped[1]) == 3 and grouped[2] == [0.0] and math.copysign(1.0, grouped[2][0]) == 1.0


def test_unique_encode_lists_of_an_all_null_list_column_and_of_nested_lists():
    table = pa.table({"k": [1, 1], "x": pa.array([None, None], pa.list_(pa.int64())),
                      "n": pa.array([[[1], [2]], [[1]]], pa.list_(pa.list_(pa.int64())))})
    ds = bridge.from_arrow(table)
    assert ds.aggregate(bridge.Unique("x", encode_lists=True))["unique(x)"] == []
    assert ds.aggregate(bridge.Unique("n", encode_lists=True))["unique(n)"] == [[1], [2]]
    assert _as_set(_ray(table, ray_agg.Unique("n", encode_lists=True))) == [(1,), (2,)]


# ------------------------------------------------------------------ 2. exact temporal values


FAR = 300_000_000_000_000_000  # in microseconds: about year 9,500,000


def _temporal_cases():
    return [
        (pa.timestamp("us"), [FAR, 1, FAR]),
        (pa.timestamp("ms", tz="UTC"), [FAR, -FAR, FAR]),
        (pa.timestamp("s"), [FAR // 1000, 5, FAR // 1000]),
        (pa.timestamp("ns"), [2**63 - 1, 0, 2**63 - 1]),
        (pa.date64(), [FAR // 1000, 1, 2]),  # 1 ms and 2 ms: the same Python date, two values
        (pa.duration("s"), [FAR, 3, FAR]),  # past timedelta's range
        (pa.time64("us"), [86_400_000_000 + 1, 1, 86_400_000_000 + 1]),  # past a day: no Python time
    ]


@pytest.mark.parametrize("encode_lists", [False, True])
@pytest.mark.parametrize("t, ints", _temporal_cases(), ids=lambda v: str(v))
def test_unique_of_lists_of_temporal_values_is_exact(t, ints, encode_lists):
    a, b, c = ints
    storage = pa.int32() if pa.types.is_date32(t) or pa.types.is_time32(t) else pa.int64()
    values = pa.array([[a, b], [c, b], [a, b], None], pa.list_(storage)).view(pa.list_(t))
    table = pa.table({"k": [1, 1, 1, 1], "x": values})
    out = bridge.from_arrow(table).groupby("k").aggregate(bridge.Unique("x", encode_lists=encode_lists))
    got = out.to_arrow().column("unique(x)").combine_chunks()
    if encode_lists:
        distinct = list(dict.fromkeys([a, b, c]))
        want = pa.array([distinct], pa.list_(storage)).view(pa.list_(t))
    else:
        firsts = [[a, b]] + ([[c, b]] if c != a else []) + [None]
        want = pa.array([firsts], pa.list_(pa.list_(storage))).view(pa.list_(pa.list_(t)))
    assert got.type == want.type
    assert got.equals(want)


def test_unique_of_structs_and_count_distinct_of_lists_past_year_9999():
    ts = pa.array([FAR, FAR, 7], pa.int64()).view(pa.timestamp("us"))
    structs = pa.StructArray.from_arrays([ts, pa.array([1, 1, 1])], names=["t", "n"])
    lists = pa.array([[FAR], [FAR], [FAR, 1]], pa.list_(pa.int64())).view(pa.list_(pa.timestamp("us")))
    table = pa.table({"k": [1, 1, 1], "s": structs, "l": lists})
    out = bridge.from_arrow(table, override_num_blocks=2).groupby("k").aggregate(
        bridge.Unique("s"), bridge.CountDistinct("l")).to_arrow()
    assert out.column("count_distinct(l)").to_pylist() == [2]
    got = out.column("unique(s)").combine_chunks()
    assert pc.list_value_length(got).to_pylist() == [2]
    assert got.values.field("t").view(pa.int64()).to_pylist() == [FAR, 7]


def test_count_distinct_and_unique_of_an_all_null_column():
    """Arrow's grouped distinct of the null type skipping nulls crashed the worker process."""
    ds = bridge.from_items([{"k": 1, "x": None}, {"k": 2, "x": None}, {"k": 1, "x": None}])
    assert ds.aggregate(bridge.CountDistinct("x"), bridge.Unique("x", ignore_nulls=True),
                        bridge.Unique("x")) == {"count_distinct(x)": 0, "unique(x)": [], "unique(x)_2": [None]}
    assert ds.groupby("k").aggregate(bridge.CountDistinct("x")).take_all() == [
        {"k": 1, "count_distinct(x)": 0}, {"k": 2, "count_distinct(x)": 0}]


# ------------------------------------------------------------------ 3. Ray Data's other aggregations


NEW = ["ValueCounter", "MissingValuePercentage", "ZeroPercentage", "ApproximateQuantile", "ApproximateTopK"]


@pytest.mark.parametrize("name", NEW)
def test_the_aggregation_exists_with_ray_datas_arguments(name):
    ours, theirs = getattr(bridge, name), getattr(ray_agg, name)
    mine = [(p.name, p.default) for p in inspect.signature(ours).parameters.values()]
    ray_params = [(p.name, p.default) for p in inspect.signature(theirs).parameters.values()]
    assert mine == ray_params


def test_every_public_ray_data_aggregation_is_here():
    theirs = {n for n, c in vars(ray_agg).items() if inspect.isclass(c) and issubclass(c, ray_agg.AggregateFn)
              and c.__module__ == ray_agg.__name__ and not n.startswith("_")}
    theirs -= {"AggregateFnV2", "VectorizedAggregateFnV2"}  # (bases for user-defined ones)
    assert sorted(n for n in theirs if not hasattr(bridge, n)) == []


MIXED = pa.table({
    "k": [1, 1, 1, 2, 2, 2, 2, 3],
    "x": [1.0, None, float("nan"), 0.0, 2.5, 1.0, float("nan"), 7.0],
    "i": [0, 1, None, 0, 5, 5, 2, None],
    "s": ["a", None, "b", "a", "a", None, "c", "c"],
    "n": pa.array([None] * 8, pa.null()),
    "l": pa.array([[1, 2], None, [], [2, None], [1], [3, 3], [1], [float("nan")]], pa.list_(pa.float64())),
})


def _counts(result):
    if result is None:
        return None
    return sorted(zip((_nan_key(v) for v in result["values"]), result["counts"]), key=repr)


@pytest.mark.parametrize("col", ["x", "i", "s", "n"])
@pytest.mark.parametrize("blocks", [1, 3])
def test_value_counter_matches_ray_data(col, blocks):
    if blocks > 1:
        with _ray_default_shuffle():
            theirs = _ray(MIXED, ray_agg.ValueCounter(col), blocks=blocks)
    else:  # (one block: nothing to merge, the strategies agree)
        theirs = _ray(MIXED, ray_agg.ValueCounter(col), blocks=blocks)
    assert _counts(_ours(MIXED, bridge.ValueCounter(col), blocks=blocks)) == _counts(theirs)
    mine = _ours(MIXED, bridge.ValueCounter(col), key="k", blocks=blocks)
    theirs = _ray(MIXED, ray_agg.ValueCounter(col), key="k", blocks=blocks)
    assert {k: _counts(v) for k, v in mine.items()} == {k: _counts(v) for k, v in theirs.items()}


def test_value_counter_output_type_order_and_empty():
    out = bridge.from_arrow(MIXED).groupby("k").aggregate(bridge.ValueCounter("s"))
    assert out.schema().field("value_counter(s)").type == _ray_schema_type(MIXED, ray_agg.ValueCounter("s"), "k")
    assert out.take_all()[1] == {"k": 2, "value_counter(s)": {"values": ["a", None, "c"], "counts": [2, 1, 1]}}
    empty = MIXED.slice(0, 0)
    assert _ours(empty, bridge.ValueCounter("s")) is None and _ray(empty, ray_agg.ValueCounter("s")) is None
    # Ray Data raises Arrow's ArrowNotImplementedError for lists; they are counted here.
    assert _counts(_ours(MIXED, bridge.ValueCounter("l"), key="k")[3]) == [(("NaN",), 1)]
    assert _ours(MIXED, bridge.ValueCounter("l"))["counts"] == [1, 1, 1, 1, 2, 1, 1]


@pytest.mark.parametrize("col", ["x", "i", "s", "n", "l"])
@pytest.mark.parametrize("blocks", [1, 3])
def test_missing_value_percentage_matches_ray_data(col, blocks):
    assert _ours(MIXED, bridge.MissingValuePercentage(col), blocks=blocks) == \
        _ray(MIXED, ray_agg.MissingValuePercentage(col), blocks=blocks)
    assert _ours(MIXED, bridge.MissingValuePercentage(col), key="k", blocks=blocks) == \
        _ray(MIXED, ray_agg.MissingValuePercentage(col), key="k", blocks=blocks)


def test_missing_value_percentage_counts_nan_and_null_and_is_float64():
    assert _ours(MIXED, bridge.MissingValuePercentage("x")) == 37.5
    assert _ours(MIXED.slice(0, 0), bridge.MissingValuePercentage("x")) is None
    out = bridge.from_arrow(MIXED).groupby("k").aggregate(bridge.MissingValuePercentage("x", alias_name="m"))
    assert out.schema().field("m").type == pa.float64()
    assert out.take_all() == [{"k": 1, "m": 2 / 3 * 100}, {"k": 2, "m": 25.0}, {"k": 3, "m": 0.0}]


ZEROS = pa.table({
    "k": [1, 1, 1, 2, 2, 2, 3],
    "x": [0.0, -0.0, float("nan"), None, 1.5, 0.0, None],
    "i": pa.array([0, 1, None, 0, 0, 2, None], pa.int8()),
    "d": pa.array([0, 1, None, 0, 2, None, None], pa.decimal128(5, 2)),
    "n": pa.array([None] * 7, pa.null()),
})


@pytest.mark.parametrize("col", ["x", "i", "d", "n"])
@pytest.mark.parametrize("ignore_nulls", [True, False])
@pytest.mark.parametrize("blocks", [1, 3])
def test_zero_percentage_matches_ray_data(col, ignore_nulls, blocks):
    assert _ours(ZEROS, bridge.ZeroPercentage(col, ignore_nulls=ignore_nulls), blocks=blocks) == \
        _ray(ZEROS, ray_agg.ZeroPercentage(col, ignore_nulls=ignore_nulls), blocks=blocks)
    assert _ours(ZEROS, bridge.ZeroPercentage(col, ignore_nulls=ignore_nulls), key="k", blocks=blocks) == \
        _ray(ZEROS, ray_agg.ZeroPercentage(col, ignore_nulls=ignore_nulls), key="k", blocks=blocks)


def test_zero_percentage_of_booleans_empty_and_strings():
    ds = bridge.from_items([{"b": True}, {"b": False}, {"b": None}, {"b": False}])
    assert ds.aggregate(bridge.ZeroPercentage("b")) == {"zero_pct(b)": 2 / 3 * 100}
    assert _ours(ZEROS.slice(0, 0), bridge.ZeroPercentage("x")) is None
    assert _ours(ZEROS, bridge.ZeroPercentage("x"), key="k")[3] is None  # no value: null (Ray Data too)
    with pytest.raises(UnsupportedTypeError, match=r"(?s)zero_pct\(s\).*Hint: "):
        bridge.from_items([{"s": "0"}]).aggregate(bridge.ZeroPercentage("s"))


def _kll_quantiles(values, qs):
    """The definition of a KLL sketch's ``get_quantiles`` (inclusive=False) when it holds every value."""
    kept = sorted(float(v) for v in values if v is not None and not (isinstance(v, float) and math.isnan(v)))
    if not kept:
        return []
    return [kept[min(math.floor(q * float(len(kept))), len(kept) - 1)] for q in qs]


QS = [0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0]


@pytest.mark.parametrize("col", ["x", "i"])
@pytest.mark.parametrize("blocks", [1, 3])
def test_approximate_quantile_is_the_sketch_answer_exactly(col, blocks):
    values = MIXED.column(col).to_pylist()
    assert _ours(MIXED, bridge.ApproximateQuantile(col, QS), blocks=blocks) == _kll_quantiles(values, QS)
    keys = MIXED.column("k").to_pylist()
    grouped = _ours(MIXED, bridge.ApproximateQuantile(col, QS), key="k", blocks=blocks)
    assert grouped == {k: _kll_quantiles([v for kk, v in zip(keys, values) if kk == k], QS) for k in set(keys)}


def test_approximate_quantile_nulls_empty_types_and_arguments():
    ds = bridge.from_arrow(MIXED)
    assert ds.aggregate(bridge.ApproximateQuantile("n", [0.5])) == {"approx_quantile(n)": []}
    assert _ours(MIXED.slice(0, 0), bridge.ApproximateQuantile("x", [0.5])) is None
    out = ds.groupby("k").aggregate(bridge.ApproximateQuantile("i", [0.5], alias_name="q"))
    assert out.schema().field("q").type == pa.list_(pa.float64())
    assert out.take_all()[2] == {"k": 3, "q": []}
    with pytest.raises(BridgeValueError, match="(?s)quantiles must be.*Hint: "):
        bridge.ApproximateQuantile("x", [1.5])
    with pytest.raises(BridgeValueError, match="(?s)quantile_precision.*Hint: "):
        bridge.ApproximateQuantile("x", [0.5], quantile_precision=4)
    with pytest.raises(UnsupportedTypeError, match="(?s)approx_quantile.*Hint: "):
        ds.aggregate(bridge.ApproximateQuantile("s", [0.5]))


@pytest.mark.skipif(not _have_datasketches(), reason="Ray Data's ApproximateQuantile needs datasketches")
@pytest.mark.parametrize("blocks", [1, 3])
def test_approximate_quantile_matches_ray_data(blocks):
    for col in ("x", "i"):
        assert _ours(MIXED, bridge.ApproximateQuantile(col, QS), blocks=blocks) == \
            _ray(MIXED, ray_agg.ApproximateQuantile(col, QS), blocks=blocks)
        assert _ours(MIXED, bridge.ApproximateQuantile(col, QS), key="k", blocks=blocks) == \
            _ray(MIXED, ray_agg.ApproximateQuantile(col, QS), key="k", blocks=blocks)
    # Past the sketch's exact size: within its documented rank error (0.35% at K=800) of the true ranks.
    rng = np.random.default_rng(0)
    big = pa.table({"v": rng.integers(0, 1_000_000, 50_000).astype(np.float64)})
    sorted_values = np.sort(big.column("v").to_numpy())
    mine = _ours(big, bridge.ApproximateQuantile("v", QS), blocks=4)
    theirs = _ray(big, ray_agg.ApproximateQuantile("v", QS), blocks=4)
    for q, a, b in zip(QS, mine, theirs):
        rank = lambda v: np.searchsorted(sorted_values, v, side="right") / len(sorted_values)  # noqa: E731
        assert abs(rank(a) - rank(b)) <= 0.01, (q, a, b)


def _topk(values, k):
    """Exact top-k: most frequent first, ties in first-occurrence order, nulls skipped."""
    counts: dict = {}
    for v in values:
        if v is not None:
            counts[_nan_key(v)] = counts.get(_nan_key(v), 0) + 1
    order = sorted(counts.items(), key=lambda kv: -kv[1])  # stable: first occurrence among ties
    return order[:k]


def _pairs(result, col):
    return None if result is None else [(_nan_key(r[col]), r["count"]) for r in result]


TOPK = pa.table({
    "k": [1, 1, 1, 1, 2, 2, 2, 1, 1, 2],
    "w": ["apple", "banana", "apple", None, "cherry", "cherry", "apple", "apple", "banana", None],
    "x": [1.5, float("nan"), 1.5, None, 2.0, 2.0, 2.0, float("nan"), 1.5, 3.0],
    "l": pa.array([[1, 2], [2], None, [], [3, None], [3], [3], [1, 2], [1, 2], [4]], pa.list_(pa.int64())),
})


@pytest.mark.parametrize("col", ["w", "x", "l"])
@pytest.mark.parametrize("blocks", [1, 3])
def test_approximate_topk_is_the_exact_count(col, blocks):
    values = TOPK.column(col).to_pylist()
    assert _pairs(_ours(TOPK, bridge.ApproximateTopK(col, k=2), blocks=blocks), col) == _topk(values, 2)
    keys = TOPK.column("k").to_pylist()
    grouped = _ours(TOPK, bridge.ApproximateTopK(col, k=5), key="k", blocks=blocks)
    assert {k: _pairs(v, col) for k, v in grouped.items()} == \
        {k: _topk([v for kk, v in zip(keys, values) if kk == k], 5) for k in set(keys)}


def test_approximate_topk_encode_lists_type_and_arguments():
    ds = bridge.from_arrow(TOPK)
    out = ds.aggregate(bridge.ApproximateTopK("l", k=3, encode_lists=True))["approx_topk(l)"]
    assert out == [{"l": 2, "count": 4}, {"l": 1, "count": 3}, {"l": 3, "count": 3}]  # ties: first seen first
    grouped = ds.groupby("k").aggregate(bridge.ApproximateTopK("w", k=1))
    assert grouped.schema().field("approx_topk(w)").type == pa.list_(pa.struct([("w", pa.string()),
                                                                                   ("count", pa.int64())]))
    assert grouped.take_all() == [{"k": 1, "approx_topk(w)": [{"w": "apple", "count": 3}]},
                                  {"k": 2, "approx_topk(w)": [{"w": "cherry", "count": 2}]}]
    assert ds.aggregate(bridge.ApproximateTopK("w", k=0)) == {"approx_topk(w)": []}
    assert _ours(TOPK.slice(0, 0), bridge.ApproximateTopK("w", k=2)) is None
    nulls = bridge.from_items([{"x": None}, {"x": None}])
    assert nulls.aggregate(bridge.ApproximateTopK("x", k=2)) == {"approx_topk(x)": []}
    with pytest.raises(BridgeValueError, match="(?s)k must be.*Hint: "):
        bridge.ApproximateTopK("w", k=-1)
    with pytest.raises(UnsupportedTypeError, match="(?s)approx_topk.*Hint: "):
        bridge.from_numpy(np.ones((2, 2, 2))).aggregate(bridge.ApproximateTopK("data", k=1))


@pytest.mark.skipif(not _have_datasketches(), reason="Ray Data's ApproximateTopK needs datasketches")
@pytest.mark.parametrize("blocks", [1, 3])
def test_approximate_topk_matches_ray_data(blocks):
    # No tie at the k-th count (which of the tied values a sketch keeps is arbitrary), and the top k compared
    # as sets (the sketch orders equal counts arbitrarily).
    for col, k, enc in (("w", 3, False), ("x", 2, False), ("l", 2, False), ("l", 1, True)):
        mine = _ours(TOPK, bridge.ApproximateTopK(col, k=k, encode_lists=enc), blocks=blocks)
        theirs = _ray(TOPK, ray_agg.ApproximateTopK(col, k=k, encode_lists=enc), blocks=blocks)
        assert sorted(_pairs(mine, col), key=repr) == sorted(_pairs(theirs, col), key=repr)
    mine = _ours(TOPK, bridge.ApproximateTopK("w", k=1), key="k", blocks=blocks)
    theirs = _ray(TOPK, ray_agg.ApproximateTopK("w", k=1), key="k", blocks=blocks)
    assert mine == theirs


def test_new_aggregations_together_in_one_groupby_across_blocks():
    ds = bridge.from_arrow(MIXED, override_num_blocks=4)
    out = ds.groupby("k").aggregate(
        bridge.ValueCounter("s"), bridge.MissingValuePercentage("x"), bridge.ZeroPercentage("i"),
        bridge.ApproximateQuantile("i", [0.5]), bridge.ApproximateTopK("s", k=1), bridge.Mean("i"))
    rows = out.take_all()
    assert rows[0] == {"k": 1, "value_counter(s)": {"values": ["a", None, "b"], "counts": [1, 1, 1]},
                       "missing_pct(x)": 2 / 3 * 100, "zero_pct(i)": 50.0, "approx_quantile(i)": [1.0],
                       "approx_topk(s)": [{"s": "a", "count": 1}], "mean(i)": 0.5}
