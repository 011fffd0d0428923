"""groupby / aggregate / map_groups checked against pandas on the same data."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import bridge
from bridge import AggregateFn, Count, Max, Mean, Min, Std, Sum, Unique
from tests.ops_data import mixed_table


@pytest.fixture(scope="module")
def table() -> pa.Table:
    return mixed_table()


def _close(a, b) -> bool:
    if a is None or (isinstance(a, float) and math.isnan(a)):
        return b is None or (isinstance(b, float) and math.isnan(b))
    if isinstance(a, float):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
    return a == b


def _pandas_groups(df: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    g = df.groupby(keys, dropna=False, sort=True)
    out = pd.DataFrame({
        "count()": g.size(),
        "sum(x)": g["x"].sum(min_count=1),
        "mean(x)": g["x"].mean(),
        "std(x)": g["x"].std(ddof=1),
        "min(ts)": g["ts"].min(),
        "max(s)": g["s"].max(),
        "sum(v)": g["v"].sum(),
    }).reset_index()
    return out.sort_values(keys, na_position="last", kind="stable").reset_index(drop=True)


@pytest.mark.parametrize("blocks", [1, 6])
@pytest.mark.parametrize("keys", [["k"], ["s"], ["k", "s"]])
def test_groupby_aggregate_matches_pandas(table, blocks, keys):
    ds = bridge.from_arrow(table, override_num_blocks=blocks)
    got = ds.groupby(keys).aggregate(Count(), Sum("x"), Mean("x"), Std("x"), Min("ts"), Max("s"), Sum("v"))
    got_df = got.to_pandas()
    want = _pandas_groups(table.to_pandas(), keys)
    assert got_df.columns.tolist() == keys + want.columns.tolist()[len(keys):]
    assert len(got_df) == len(want)
    for col in want.columns:
        for a, b in zip(got_df[col].astype(object).tolist(), want[col].astype(object).tolist()):
            # to_pandas gives nullable dtypes (pd.NA) where a column has nulls
            assert _close(None if a is pd.NaT or a is pd.NA else a, None if b is pd.NaT else b), (col, a, b)
    # k == 4 has no non-null x: its sum/mean/std are null, not 0
    if keys == ["k"]:
        row = got_df[got_df["k"] == 4].iloc[0]
        assert pd.isna(row["sum(x)"]) and pd.isna(row["mean(x)"]) and row["count()"] > 0


def test_groupby_shortcuts_and_types(table):
    ds = bridge.from_arrow(table, override_num_blocks=3)
    df = table.to_pandas()
    counts = ds.groupby("s").count().to_arrow()
    assert counts.column_names == ["s", "count()"]
    assert counts.column("count()").to_pylist() == df.groupby("s").size().sort_index().tolist()
    mins = ds.groupby("s").min("ts").to_arrow()
    assert mins.schema.field("min(ts)").type == pa.timestamp("us", tz="UTC")
    means = ds.groupby("k").mean(["x", "v"]).to_pandas()
    assert means.columns.tolist() == ["k", "mean(x)", "mean(v)"]
    assert np.allclose(means["mean(v)"], df.groupby("k", dropna=False)["v"].mean().values)


def test_whole_dataset_aggregates_match_pandas(table):
    ds = bridge.from_arrow(table, override_num_blocks=5)
    df = table.to_pandas()
    assert math.isclose(ds.sum("x"), df["x"].sum())
    assert math.isclose(ds.mean("x"), df["x"].mean())
    assert math.isclose(ds.std("x"), df["x"].std())
    assert ds.min("s") == df["s"].min() and ds.max("v") == df["v"].max()
    assert ds.min("ts") == df["ts"].min().to_pydatetime()
    assert ds.sum(["v", "x"])["sum(v)"] == df["v"].sum()  # Ray Data's keys: "sum(col)"
    assert sorted(ds.unique("s")) == sorted(df["s"].unique())
    uniq = ds.unique("k")
    assert None in uniq and sorted(u for u in uniq if u is not None) == [0, 1, 2, 3, 4]
    assert ds.aggregate(Count(), Count("x"), Unique("v")).keys() == {"count()", "count(x)", "unique(v)"}
    assert ds.aggregate(Count("x", ignore_nulls=True))["count(x)"] == df["x"].count()
    assert ds.aggregate(Count("x"))["count(x)"] == len(df)  # Ray Data's default counts nulls too


def test_std_is_exact_for_large_offsets():
    rng = np.random.default_rng(0)
    x = 1e9 + rng.normal(0, 1, 20_000)
    ds = bridge.from_arrow(pa.table({"x": x}), override_num_blocks=8)
    assert math.isclose(ds.std("x"), float(np.std(x, ddof=1)), rel_tol=1e-6)


def test_zero_rows_and_ignore_nulls_false():
    empty = bridge.from_arrow(pa.table({"k": pa.array([], pa.int64()), "x": pa.array([], pa.float64())}))
    assert empty.aggregate(Count(), Sum("x"), Mean("x")) == {"count()": 0, "sum(x)": None, "mean(x)": None}
    assert empty.groupby("k").count().count() == 0
    ds = bridge.from_items([{"x": 1.0}, {"x": None}, {"x": 3.0}], override_num_blocks=2)
    assert ds.sum("x") == 4.0 and ds.sum("x", ignore_nulls=False) is None
    assert ds.std("x", ignore_nulls=False) is None and ds.mean("x") == 2.0


def test_user_defined_aggregate_fn(table):
    ds = bridge.from_arrow(table, override_num_blocks=4)
    longest = AggregateFn(
        init=lambda key: 0,
        accumulate_block=lambda acc, b: max(acc, pc.max(pc.utf8_length(b["s"])).as_py() or 0),
        merge=max,
        name="longest(s)",
    )
    rows = AggregateFn(init=lambda key: [], accumulate_row=lambda acc, r: acc + [r["v"]],
                       merge=lambda a, b: a + b, finalize=len, name="rows")
    out = ds.groupby("k").aggregate(longest, rows, Count()).to_pandas()
    assert (out["rows"] == out["count()"]).all()
    want = table.to_pandas().assign(n=lambda d: d["s"].str.len()).groupby("k", dropna=False)["n"].max()
    assert out["longest(s)"].tolist() == want.tolist()
    assert ds.aggregate(rows)["rows"] == table.num_rows


@pytest.mark.parametrize("fmt", ["numpy", "pandas", "pyarrow"])
def test_map_groups_sees_whole_groups(table, fmt):
    ds = bridge.from_arrow(table, override_num_blocks=5)

    def summarize(g):
        if fmt == "pyarrow":
            return pa.table({"s": g["s"].slice(0, 1), "n": [g.num_rows], "vsum": [pc.sum(g["v"]).as_py()]})
        if fmt == "pandas":
            return pd.DataFrame({"s": g["s"].iloc[:1], "n": [len(g)], "vsum": [g["v"].sum()]})
        return {"s": g["s"][:1], "n": np.array([len(g["v"])]), "vsum": np.array([g["v"].sum()])}

    out = ds.groupby("s").map_groups(summarize, batch_format=fmt).to_pandas()
    want = table.to_pandas().groupby("s").agg(n=("v", "size"), vsum=("v", "sum")).reset_index()
    assert out["s"].tolist() == want["s"].tolist()
    assert out["n"].tolist() == want["n"].tolist() and out["vsum"].tolist() == want["vsum"].tolist()


def test_map_groups_user_error_names_operator():
    ds = bridge.from_items([{"k": 1}, {"k": 2}])
    with pytest.raises(bridge.UserCodeError, match=r"MapGroups\(boom\)[\s\S]*ZeroDivisionError"):
        ds.groupby("k").map_groups(boom).take_all()


def boom(g):
    raise ZeroDivisionError("boom")


def test_bad_aggregations_are_clear():
    ds = bridge.range(3)
    # two of one name are numbered (Ray Data's rule): tests/test_ray_data_semantics.py
    with pytest.raises(bridge.BridgeError, match="expected AggregateFn"):
        ds.aggregate(Sum("id"), "sum")
    with pytest.raises(bridge.SchemaMismatchError, match=r"\['nope'\] not found"):
        ds.groupby("nope").count().take_all()


def test_aggregations_refuse_column_types_they_cannot_read_before_any_task():
    """The mean of a timestamp, the sum of strings, the min of lists ... raised ArrowNotImplementedError
    from inside a reduce task; refused up front now, naming the column, its type and what is taken."""
    import datetime

    from bridge import AbsMax, Quantile
    from bridge.errors import UnsupportedTypeError

    ds = bridge.from_arrow(pa.table({
        "g": [1, 1],
        "ts": pa.array([datetime.datetime(2020, 1, 1), datetime.datetime(2020, 1, 3)], pa.timestamp("us")),
        "s": ["a", "b"], "lst": [[1], [2, 3]], "flag": [True, False]}))
    for agg, column in [(Mean("ts"), "ts"), (Std("ts"), "ts"), (Quantile("ts"), "ts"), (Sum("s"), "s"),
                        (Min("lst"), "lst"), (AbsMax("flag"), "flag")]:
        with pytest.raises(UnsupportedTypeError) as err:
            ds.groupby("g").aggregate(agg).take_all()
        assert f"column {column!r} of type" in err.value.what and err.value.hint
    with pytest.raises(UnsupportedTypeError, match="Mean takes numbers") as err:
        ds.aggregate(Mean("ts"))
    assert "pa.int64()" in err.value.hint
    assert ds.aggregate(Min("ts"), Count("lst"), Unique("s"))["min(ts)"] == datetime.datetime(2020, 1, 1)
    assert ds.aggregate(Unique("lst")) == {"unique(lst)": [[1], [2, 3]]}  # lists: by their Python values (s43)


def test_float16_and_duration_columns_aggregate_in_their_own_type():
    """Arrow has no float16 kernels and no grouped sum / min of durations: computed as float32 / int64
    and given back in the column's type (a float16 Sum is float64, as a float32 one: in float16,
    60,000 + 60,000 is inf)."""
    from bridge import AbsMax, Quantile

    table = pa.table({"g": [1, 1, 2, 2],
                      "h": pa.array([1.5, None, 60000.0, 60000.0], pa.float16()),
                      "d": pa.array([1, -5, 3, None], pa.duration("ms"))})
    out = bridge.from_arrow(table).groupby("g").aggregate(
        Sum("h"), Min("h"), Max("h"), AbsMax("h"), Mean("h"), Quantile("h"),
        Sum("d"), Min("d"), Max("d"), AbsMax("d")).to_arrow()
    assert out.schema.field("min(h)").type == pa.float16() and out.schema.field("abs_max(h)").type == pa.float16()
    assert out.schema.field("sum(h)").type == pa.float64()  # as Arrow sums float32
    assert out.column("sum(h)").to_pylist() == [1.5, 120000.0]
    assert out.column("max(h)").to_pylist() == [1.5, 60000.0]
    assert out.column("mean(h)").to_pylist() == [1.5, 60000.0]
    for name in ("sum(d)", "min(d)", "max(d)", "abs_max(d)"):
        assert out.schema.field(name).type == pa.duration("ms"), name
    ms = [v.value for v in out.column("sum(d)")]
    assert ms == [-4, 3]
    assert [v.value for v in out.column("min(d)")] == [-5, 3]
    assert [v.value for v in out.column("abs_max(d)")] == [5, 3]


def test_abs_max_of_the_smallest_signed_value_and_quantile_of_uint64():
    """abs(-128) is no int8: raised ArrowInvalid; now every magnitude comes in uint8.  A uint64 quantile
    raised on the float64 cast; it rounds as numpy.quantile does."""
    from bridge import AbsMax, Quantile

    ds = bridge.from_arrow(pa.table({"i": pa.array([-128, 5, 3], pa.int8()),
                                     "l": pa.array([-2**63, 7, 1], pa.int64()),
                                     "u": pa.array([2**64 - 1, 1, 3], pa.uint64())}))
    out = ds.aggregate(AbsMax("i"), AbsMax("l"), Quantile("u", q=1.0), AbsMax("u"))
    assert out["abs_max(i)"] == 128 and out["abs_max(l)"] == 2**63
    assert out["quantile(u)"] == float(np.quantile(np.array([2**64 - 1, 1, 3], np.uint64), 1.0))
    assert out["abs_max(u)"] == 2**64 - 1
    small = bridge.from_arrow(pa.table({"i": pa.array([-127, 5], pa.int8())}))
    assert small.groupby(None).aggregate(AbsMax("i")).to_arrow().schema.field(0).type == pa.int8()


def test_decimal_sums_and_means_do_not_wrap_past_38_digits():
    import decimal

    from bridge.errors import BridgeValueError

    D = decimal.Decimal
    big, dt = D("9" * 28), pa.decimal128(38, 10)
    t1 = pa.table({"k": [1] * 3, "x": pa.array([big] * 3, dt)})
    t2 = pa.table({"k": [1, 2], "x": pa.array([big, D("1")], dt)})
    ds = bridge.from_arrow([t1, t2])
    # 4 * big needs 39 digits at scale 10: Arrow's decimal128 sum wrapped it into a wrong number.
    with pytest.raises(BridgeValueError, match=r"sum\(x\).*'x'[\s\S]*Hint: cast 'x' to pa.decimal256"):
        ds.groupby("k").sum("x").take_all()
    with pytest.raises(BridgeValueError, match="decimal256"):
        bridge.from_arrow([pa.table({"x": pa.array([D("9" * 36)] * 40, pa.decimal128(38, 2))})]).sum("x")
    means = ds.groupby("k").mean("x")
    assert means.schema().field("mean(x)").type == pa.float64()
    assert means.take_all() == [{"k": 1, "mean(x)": float(big)}, {"k": 2, "mean(x)": 1.0}]
    assert math.isclose(ds.mean("x"), float((4 * big + 1) / 5))
    fits = bridge.from_arrow([pa.table({"k": [1] * 4, "x": pa.array([D("9" * 27)] * 4, dt)})] * 2)
    out = fits.groupby("k").aggregate(Sum("x"), Min("x"))
    assert out.schema().field("sum(x)").type == dt and out.schema().field("min(x)").type == dt
    assert out.take_all() == [{"k": 1, "sum(x)": D(8 * int("9" * 27)), "min(x)": D("9" * 27)}]
    wide = pa.decimal256(76, 2)
    assert bridge.from_arrow([pa.table({"x": pa.array([D("9" * 36)] * 40, wide)})] * 2).sum("x") == D(80 * int("9" * 36))
    # A decimal256 sum past 76 digits (and past 2**255, where Arrow wraps) raises too.
    with pytest.raises(BridgeValueError, match="decimal256"):
        bridge.from_arrow([pa.table({"x": pa.array([D("9" * 76)] * 10, pa.decimal256(76, 0))})]).sum("x")


def test_count_of_a_column_counts_nulls_by_default_as_ray_data():
    t = pa.table({"k": [1, 1, 2, 2], "x": [1.0, None, float("nan"), None]})
    rows = bridge.from_arrow(t).groupby("k").aggregate(Count("x"), Count("x", ignore_nulls=True, alias_name="n"))
    # NaN is a value, not a null (Arrow's count, as Ray Data's): counted either way.
    assert rows.take_all() == [{"k": 1, "count(x)": 2, "n": 1}, {"k": 2, "count(x)": 2, "n": 1}]


def test_dictionary_key_keeps_its_type_when_also_aggregated():
    d = pa.table({"k": pa.array(["b", "a", "b"]).dictionary_encode(), "v": [1, 2, 3]})
    out = bridge.from_arrow([d]).groupby("k").aggregate(Max("k"), Sum("v"))
    assert out.schema().field("k").type == pa.dictionary(pa.int32(), pa.string())
    assert out.take_all() == [{"k": "a", "max(k)": "a", "sum(v)": 2}, {"k": "b", "max(k)": "b", "sum(v)": 4}]


def test_negative_zero_is_reported_as_it_occurs():
    assert [math.copysign(1, v) for v in bridge.from_arrow([pa.table({"x": [-0.0, -0.0]})]).unique("x")] == [-1]
    uniq = bridge.from_arrow([pa.table({"x": [-0.0, 0.0, float("nan"), None]})]).unique("x")
    assert len(uniq) == 3 and math.copysign(1, uniq[0]) == -1 and None in uniq
    t1, t2 = pa.table({"k": [-0.0, -0.0, 1.0], "v": [1, 2, 3]}), pa.table({"k": [0.0, None], "v": [4, 5]})
    rows = bridge.from_arrow([t1, t2]).groupby("k").aggregate(Sum("v"), Min("k")).take_all()
    assert [r["sum(v)"] for r in rows] == [7, 3, 5]  # -0.0 and 0.0 are one group, keyed by the first one seen
    assert math.copysign(1, rows[0]["k"]) == -1 and math.copysign(1, rows[0]["min(k)"]) == -1
