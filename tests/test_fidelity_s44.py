"""Session 44 fidelity: pandas metadata after a column changes, with_column's known schema, float8 casts,
ArrowDtype round trips.

1. A Dataset made by ``from_pandas`` carries pyarrow's pandas metadata (each column's dtype in the frame).
   An operation that replaces a column (``with_column``, ``add_column``, a ``map_batches`` table), or that
   drops one whose name comes back later, must not leave the old column's dtype on the new values:
   ``to_pandas`` made ints strings (a ``string`` entry), failed on 0.5 (an ``Int64`` entry) or cast them
   back to the old ``int32[pyarrow]``.
2. ``with_column`` on a known schema states its output's schema: a ``filter(expr=...)`` on the new column
   is checked at its call.
3. ``iter_torch_batches(dtypes=torch.float8_*)`` refuses a value the cast changes (torch's float8_e4m3fn
   made 1000.0 and inf 448.0, 17 16), as float16 / float32 casts are refused.
4. ``pd.ArrowDtype`` columns come back as themselves (a decimal came back as objects; a dictionary failed).
"""

from __future__ import annotations

import datetime
import decimal

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import bridge
from bridge.errors import BridgeError, BridgeTypeError, BridgeValueError, SchemaMismatchError
from raybridge_adapters.training_columns import check_float_cast

expressions = pytest.importorskip("ray.data.expressions")
col, lit = expressions.col, expressions.lit


def _assert_frame(out: pd.DataFrame, expected: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(out, expected, check_exact=True, check_freq=False)


# ----------------------------------------------------------------------------- 1. replaced columns
REPLACED = {
    # the frame's column (name "x") -> with_column("x", expr) -> the pandas column expected
    "float_nan_by_int": (pd.Series([1.5, np.nan, 3.0]), "n * 2", pd.Series([2, 4, 6])),
    "float_nan_by_str": (pd.Series([1.5, np.nan, 3.0]), lit("a"), pd.Series(["a", "a", "a"], dtype=object)),
    "arrow_int32_by_int64": (pd.Series([1, 2, 3], dtype=pd.ArrowDtype(pa.int32())), "n * 2", pd.Series([2, 4, 6])),
    "arrow_int32_by_float": (pd.Series([1, 2, 3], dtype=pd.ArrowDtype(pa.int32())), "n / 2",
                             pd.Series([0.5, 1.0, 1.5])),
    "category_by_int": (pd.Series(pd.Categorical(["a", "b", "a"])), "n * 2", pd.Series([2, 4, 6])),
    "category_by_str": (pd.Series(pd.Categorical(["a", "b", "a"])), lit("z"), pd.Series(["z"] * 3, dtype=object)),
    "tz_by_int": (pd.Series(pd.date_range("2020", periods=3, tz="Europe/Paris")), "n * 2", pd.Series([2, 4, 6])),
    "masked_int_by_float": (pd.Series([1, None, 3], dtype="Int64"), "n / 2", pd.Series([0.5, 1.0, 1.5])),
    "masked_int_by_str": (pd.Series([1, None, 3], dtype="Int64"), lit("s"), pd.Series(["s"] * 3, dtype=object)),
    "boolean_by_int": (pd.Series([True, None, False], dtype="boolean"), "n * 2", pd.Series([2, 4, 6])),
    "string_by_int": (pd.Series(["a", None, "c"], dtype="string"), "n * 2", pd.Series([2, 4, 6])),
    "pyarrow_string_by_int": (pd.Series(["a", None, "c"], dtype="string[pyarrow]"), "n * 2", pd.Series([2, 4, 6])),
    "object_ints_by_float": (pd.Series([1, None, 3], dtype=object), "n / 4", pd.Series([0.25, 0.5, 0.75])),
}


@pytest.mark.parametrize("case", list(REPLACED))
def test_with_column_replacing_a_frame_column_gives_the_new_values_dtype(case):
    old, expr, expected = REPLACED[case]
    df = pd.DataFrame({"x": old, "n": [1, 2, 3]})
    out = bridge.from_pandas(df).with_column("x", expr).to_pandas()
    _assert_frame(out, pd.DataFrame({"x": expected.rename("x"), "n": [1, 2, 3]}))


def test_a_replaced_column_of_the_same_type_keeps_the_frames_dtype():
    """The entry still describes a column of that type: the frame's NumPy float (NaN) and ArrowDtype stay."""
    df = pd.DataFrame({"x": [1.5, np.nan, 3.0], "a": pd.Series([1, 2, 3], dtype=pd.ArrowDtype(pa.int32()))})
    out = bridge.from_pandas(df).with_column("x", "x * 2").with_column("a", col("a")).to_pandas()
    _assert_frame(out, pd.DataFrame({"x": [3.0, np.nan, 6.0], "a": df["a"]}))


def test_a_tz_column_replaced_by_naive_timestamps_stays_naive():
    naive = pd.Series(pd.date_range("2020-01-01 12:00", periods=2))
    df = pd.DataFrame({"t": pd.date_range("2020", periods=2, tz="Asia/Tokyo"), "naive": naive})
    out = bridge.from_pandas(df).with_column("t", col("naive")).to_pandas()
    assert out["t"].dt.tz is None and out["t"].tolist() == naive.tolist()


def test_with_column_replacing_the_index_column_keeps_it_the_index():
    naive = pd.date_range("2020-01-01 12:00", periods=3)
    df = pd.DataFrame({"x": [1.5, np.nan, 3.0], "naive": naive},
                      index=pd.Index(pd.date_range("2020", periods=3, tz="Asia/Tokyo"), name="k"))
    ds = bridge.from_pandas(df)
    assert ds.columns() == ["x", "naive", "k"]
    out = ds.with_column("k", col("naive")).to_pandas()  # (the zone's entry made 12:00 21:00+09:00)
    _assert_frame(out, df.set_index(pd.Index(naive, name="k")))
    out = ds.with_column("k", "x * 2").to_pandas()  # (an entry as pyarrow writes one for a float64 index)
    assert out.index.name == "k" and out.index.equals(pd.Index([3.0, np.nan, 6.0], name="k"))


def test_add_column_replacing_a_frame_column():
    df = pd.DataFrame({"a": [1, 2, 3], "c": pd.array([1, None, 3], dtype="Int64"),
                       "b": pd.array(["x", None, "z"], dtype="string")})
    ds = bridge.from_pandas(df)
    out = ds.add_column("c", lambda d: d["a"] / 2).add_column("b", lambda d: d["a"]).to_pandas()
    _assert_frame(out, pd.DataFrame({"a": [1, 2, 3], "c": [0.5, 1.0, 1.5], "b": [1, 2, 3]}))


def test_map_batches_table_with_a_replaced_column():
    """The function's table keeps the input's metadata (``set_column`` keeps it): the replaced entry goes."""
    df = pd.DataFrame({"a": [1, 2, 3], "b": pd.array(["x", None, "z"], dtype="string")})
    out = bridge.from_pandas(df).map_batches(
        lambda t: t.set_column(1, "b", pc.multiply(t["a"], 2)), batch_format="pyarrow").to_pandas()
    _assert_frame(out, pd.DataFrame({"a": [1, 2, 3], "b": [2, 4, 6]}))


def test_map_batches_table_of_its_own_frame_keeps_its_metadata():
    def fn(t: pa.Table) -> pa.Table:
        return pa.Table.from_pandas(pd.DataFrame({"b": pd.array(["p", None, "q"], dtype="string")}))

    out = bridge.from_pandas(pd.DataFrame({"b": [1, 2, 3]})).map_batches(fn, batch_format="pyarrow").to_pandas()
    assert str(out["b"].dtype) == "string" and out["b"].tolist()[::2] == ["p", "q"]


@pytest.mark.parametrize("op", ["drop_rename", "select_rename", "select_with_column", "drop_index_rename"])
def test_a_dropped_columns_dtype_does_not_come_back_with_a_later_column_of_its_name(op):
    df = pd.DataFrame({"a": [1, 2, 3], "b": pd.array(["x", None, "z"], dtype="string")},
                      index=pd.Index([7, 8, 9], name="k"))
    ds = bridge.from_pandas(df)
    if op == "drop_rename":  # (the index stays: its column was not dropped)
        out = ds.drop_columns(["b"]).rename_columns({"a": "b"}).to_pandas()
        _assert_frame(out, pd.DataFrame({"b": [1, 2, 3]}, index=df.index))
        return
    if op == "select_rename":
        out = ds.select_columns(["a"]).rename_columns({"a": "b"}).to_pandas()
    elif op == "select_with_column":
        out = ds.select_columns(["a"]).with_column("b", "a * 2").to_pandas()
        _assert_frame(out, pd.DataFrame({"a": [1, 2, 3], "b": [2, 4, 6]}))
        return
    else:  # the index column dropped, another renamed to its name: not the index
        out = ds.drop_columns(["k"]).rename_columns({"a": "k"}).to_pandas()
        _assert_frame(out, pd.DataFrame({"k": [1, 2, 3], "b": df["b"].reset_index(drop=True)}))
        return
    _assert_frame(out, pd.DataFrame({"b": [1, 2, 3]}))


def test_selections_and_renames_keep_the_frames_dtypes_and_index():
    df = pd.DataFrame({"a": pd.array([1, None, 3], dtype="Int64"), "b": pd.Categorical(["x", "y", "x"]),
                       "c": [0.5, np.nan, 1.5]}, index=pd.Index([7, 8, 9], name="k"))
    ds = bridge.from_pandas(df)
    _assert_frame(ds.select_columns(["c", "a", "k"]).to_pandas(), df[["c", "a"]])
    _assert_frame(ds.drop_columns(["b"]).rename_columns({"a": "A"}).to_pandas(),
                  df[["a", "c"]].rename(columns={"a": "A"}))
    _assert_frame(ds.select_columns(["c"]).to_pandas(), df[["c"]].reset_index(drop=True))


# ----------------------------------------------------------------------------- 2. with_column's known schema
def test_with_column_states_its_schema_without_running():
    ds = bridge.from_arrow(pa.table({"x": [1, 2, 3], "s": ["a", "b", "c"]})).with_column("y", col("s") + "z")
    assert ds.schema() == pa.schema([("x", pa.int64()), ("s", pa.string()), ("y", pa.string())])
    assert "y: string" in repr(ds)
    assert ds._last_stats is None  # nothing ran
    ds2 = bridge.range(4).with_column("h", "id / 2").with_column("g", "h * 2")
    assert ds2.schema().types == [pa.int64(), pa.float64(), pa.float64()] and ds2._last_stats is None


@pytest.mark.parametrize(("expr", "error", "words"), [
    ("y > 1", BridgeTypeError, "y: string"),
    ("nope > 1", SchemaMismatchError, "column 'nope'"),
    ("y", BridgeTypeError, "not a condition"),
])
def test_filter_on_a_with_column_result_is_checked_at_the_call(expr, error, words):
    ds = bridge.from_arrow(pa.table({"x": [1, 2, 3], "s": ["a", "b", "c"]})).with_column("y", col("s") + "z")
    with pytest.raises(error) as info:
        ds.filter(expr=expr)  # nothing consumed
    assert words in str(info.value) and "Hint:" in str(info.value)
    assert ds._last_stats is None


def test_filter_on_a_with_column_result_runs_right():
    ds = bridge.range(6).with_column("h", "id / 2").filter(expr="h >= 2")
    assert ds.take_all() == [{"id": 4, "h": 2.0}, {"id": 5, "h": 2.5}]
    ds = bridge.from_arrow(pa.table({"s": ["a", "b"]})).with_column("y", col("s") + "z").filter(expr="y == 'bz'")
    assert ds.take_all() == [{"s": "b", "y": "bz"}]


def test_with_column_schema_unknown_without_a_known_input():
    ds = bridge.range(3).map_batches(lambda b: {"x": b["id"]}).with_column("y", "x * 2")
    assert ds.columns(fetch_if_missing=False) is None
    with pytest.raises(BridgeError, match="column 'nope'"):
        ds.filter(expr="nope > 1").count()


def test_with_column_known_schema_matches_the_run():
    t = pa.table({"i": pa.array([1, 2], pa.int32()), "f": pa.array([1.5, None], pa.float32()),
                  "d": pa.array(["a", "b"]).dictionary_encode(), "s": ["p", None]})
    for expr in ["i * 2", "f + 1", col("d"), col("s") + "!", lit(None), "i / 3", col("i") / 3, pc.field("i") + 1]:
        ds = bridge.from_arrow(t).with_column("y", expr)
        known = ds.schema()
        assert known == ds.materialize().schema(), expr


def test_with_column_on_a_frame_states_the_fitted_metadata():
    ds = bridge.from_pandas(pd.DataFrame({"x": pd.array([1, None], dtype="Int64")})).with_column("x", "x / 2")
    assert ds.filter(expr="x > 0").to_pandas()["x"].tolist() == [0.5]


# ----------------------------------------------------------------------------- 3. float8 casts
torch = pytest.importorskip("torch")
E4M3 = getattr(torch, "float8_e4m3fn", None)
FLOAT8 = pytest.mark.skipif(E4M3 is None, reason="this torch has no float8 dtypes")


def _torch(table: pa.Table, dtype):
    return next(iter(bridge.from_arrow(table).iter_torch_batches(batch_size=len(table), dtypes=dtype)))


@FLOAT8
@pytest.mark.parametrize(("values", "words"), [
    ([1.0, 1000.0], "holds 1000.0, past float8_e4m3fn's largest value (448); dtypes=torch.float8_e4m3fn would make "
                    "it 448.0"),
    ([1.0, -1e6], "holds -1000000.0, past float8_e4m3fn's largest value (448)"),
    ([1.0, float("inf")], "holds inf, past float8_e4m3fn's largest value (448)"),
])
def test_float8_e4m3fn_refuses_values_it_would_saturate(values, words):
    with pytest.raises(BridgeValueError) as info:
        _torch(pa.table({"x": values}), E4M3)
    assert words in str(info.value) and "Hint:" in str(info.value)


@FLOAT8
def test_float8_refuses_integers_it_does_not_hold():
    with pytest.raises(BridgeValueError, match=r"holds 17, which float8_e4m3fn cannot hold exactly; .* make it 16"):
        _torch(pa.table({"i": [1, 17]}), E4M3)
    with pytest.raises(BridgeValueError, match=r"holds 1000, which float8_e4m3fn cannot hold exactly"):
        _torch(pa.table({"i": [1000]}), E4M3)


@FLOAT8
def test_float8_keeps_what_it_rounds():
    out = _torch(pa.table({"x": [1.0, 449.0, -0.3, float("nan"), 1e-9], "i": [0, 16, -16, 8, 1]}), E4M3)
    assert out["x"].dtype == E4M3 and out["i"].dtype == E4M3
    assert out["x"].to(torch.float64).tolist()[:2] == [1.0, 448.0]
    assert out["i"].to(torch.float64).tolist() == [0, 16, -16, 8, 1]
    e5m2 = torch.float8_e5m2  # has inf: inf stays inf, 1000.0 rounds to 1024.0
    assert _torch(pa.table({"x": [float("inf"), 1000.0]}), e5m2)["x"].to(torch.float64).tolist() == [float("inf"),
                                                                                                      1024.0]
    with pytest.raises(BridgeValueError, match="would make it inf"):
        _torch(pa.table({"x": [1e6]}), e5m2)


@FLOAT8
@pytest.mark.parametrize("name", ["float8_e4m3fnuz", "float8_e5m2fnuz"])
def test_float8_fnuz_refuses_what_becomes_nan(name):
    dtype = getattr(torch, name, None)
    if dtype is None:
        pytest.skip(f"this torch has no {name}")
    with pytest.raises(BridgeValueError, match=r"would make it nan"):
        _torch(pa.table({"x": [1.0, float("-inf")]}), dtype)
    with pytest.raises(BridgeValueError, match=r"would make it nan"):
        _torch(pa.table({"x": [1.0, 1e6]}), dtype)


def test_float8_e8m0fnu_refuses_zero_and_negative_numbers():
    dtype = getattr(torch, "float8_e8m0fnu", None)
    if dtype is None:
        pytest.skip("this torch has no float8_e8m0fnu")
    for values in ([1.0, -2.0], [0.0, 4.0], [2, 0]):
        with pytest.raises(BridgeValueError, match="holds no negative number and no zero"):
            _torch(pa.table({"x": values}), dtype)
    assert _torch(pa.table({"x": [0.5, 4.0]}), dtype)["x"].to(torch.float64).tolist() == [0.5, 4.0]


def _to32(values: np.ndarray) -> np.ndarray:
    return values.astype(np.float32).astype(np.float64)


@pytest.mark.parametrize(("values", "refused"), [
    ([1.0, 2.0], False), ([float("nan")] * 3, False), ([1.0, float("inf"), float("-inf"), float("nan")], False),
    ([3.4e38, -3.4e38], False), ([1.0, 1e39], True), ([float("nan"), -1e300, float("inf")], True),
    ([float("inf"), 5e38], True),
])
def test_float64_to_float32_check(values, refused):
    arr = np.array(values, dtype=np.float64)
    largest = float(np.finfo(np.float32).max)

    def check() -> None:
        check_float_cast(arr, _to32, largest, name="x", target="torch.float32", where="torch", module="torch")

    if refused:
        with pytest.raises(BridgeValueError, match="would make it -?inf"):
            check()
    else:
        check()


# ----------------------------------------------------------------------------- 4. ArrowDtype round trips
ARROW_DTYPES = {
    "decimal128": pd.array([decimal.Decimal("1.25"), None, decimal.Decimal("-3.10")],
                           dtype=pd.ArrowDtype(pa.decimal128(10, 2))),
    "decimal256": pd.array([decimal.Decimal("1.25"), None, decimal.Decimal("9" * 30)],
                           dtype=pd.ArrowDtype(pa.decimal256(40, 2))),
    "list": pd.array([[1, 2], None, []], dtype=pd.ArrowDtype(pa.list_(pa.int64()))),
    "struct": pd.array([{"a": 1, "b": "x"}, None, {"a": None, "b": "y"}],
                       dtype=pd.ArrowDtype(pa.struct([("a", pa.int64()), ("b", pa.string())]))),
    "timestamp_tz": pd.array([pd.Timestamp("2020-01-01 01:02:03.000004", tz="UTC"), None, pd.Timestamp(0, tz="UTC")],
                             dtype=pd.ArrowDtype(pa.timestamp("us", tz="Europe/Paris"))),
    "duration": pd.array([pd.Timedelta(1, "ms"), None, pd.Timedelta(-5, "s")], dtype=pd.ArrowDtype(pa.duration("ms"))),
    "string_pyarrow": pd.array(["a", None, "c"], dtype="string[pyarrow]"),
    "arrow_string": pd.array(["a", None, "c"], dtype=pd.ArrowDtype(pa.string())),
    "large_string": pd.array(["a", None, "c"], dtype=pd.ArrowDtype(pa.large_string())),
    "dictionary": pd.array(["a", None, "a"], dtype=pd.ArrowDtype(pa.dictionary(pa.int32(), pa.string()))),
    "map": pd.array([[("k", 1)], None, []], dtype=pd.ArrowDtype(pa.map_(pa.string(), pa.int64()))),
    "date": pd.array([datetime.date(2020, 1, 1), None, datetime.date(1, 1, 1)], dtype=pd.ArrowDtype(pa.date32())),
}


@pytest.mark.parametrize("case", list(ARROW_DTYPES))
def test_arrow_dtype_round_trips(case):
    df = pd.DataFrame({"v": ARROW_DTYPES[case], "n": [1, 2, 3]})
    out = bridge.from_pandas(df).to_pandas()
    assert out["v"].dtype == df["v"].dtype
    _assert_frame(out, df)


def test_arrow_dtype_decimal_through_pandas_batches_and_with_an_index():
    df = pd.DataFrame({"d": ARROW_DTYPES["decimal128"], "n": [1, 2, 3]}, index=pd.Index([5, 6, 7], name="k"))
    ds = bridge.from_pandas(df)
    _assert_frame(ds.to_pandas(), df)
    _assert_frame(ds.map_batches(lambda b: b, batch_format="pandas").to_pandas(), df)
    batch = next(iter(ds.iter_batches(batch_format="pandas", batch_size=3)))
    assert batch["d"].dtype == df["d"].dtype


def test_object_decimals_stay_objects():
    df = pd.DataFrame({"d": [decimal.Decimal("1.25"), None]})
    out = bridge.from_pandas(df).to_pandas()
    assert out["d"].dtype == object and out["d"].tolist() == df["d"].tolist()


def test_arrow_dtype_marks_leave_parquet_readable_by_pandas(tmp_path):
    df = pd.DataFrame({"d": ARROW_DTYPES["decimal128"], "n": [1, 2, 3]})
    bridge.from_pandas(df).write_parquet(str(tmp_path))
    (path,) = sorted(tmp_path.glob("*.parquet"))
    plain = pq.read_table(path).to_pandas()  # another reader: the Decimals as pyarrow gives them
    assert plain["d"].tolist()[::2] == [decimal.Decimal("1.25"), decimal.Decimal("-3.10")]
    _assert_frame(bridge.read_parquet(str(tmp_path)).to_pandas(), df)


def test_a_replaced_decimal_arrow_dtype_column_is_not_restored_as_one():
    df = pd.DataFrame({"d": ARROW_DTYPES["decimal128"], "n": [1, 2, 3]})
    out = bridge.from_pandas(df).with_column("d", "n * 2").to_pandas()
    _assert_frame(out, pd.DataFrame({"d": [2, 4, 6], "n": [1, 2, 3]}))


# ----------------------------------------------------------------------------- column labels
def test_a_string_named_column_added_to_a_frame_of_int_labels():
    """pandas' ``df["y"] = ...`` gives labels ``[0, 1, "y"]``; pyarrow failed to make "y" an int."""
    df = pd.DataFrame({0: [1.5, np.nan, 3.0], 1: pd.array([1, None, 3], dtype="Int64")})
    df.columns.name = "lab"
    ds = bridge.from_pandas(df)
    out = ds.with_column("y", col("1") * 2).to_pandas()
    expected = df.assign(y=pd.array([2, None, 6], dtype="Int64"))
    _assert_frame(out, expected)
    assert [type(c) for c in out.columns] == [int, int, str]
    out = ds.add_column("y", lambda d: d[0] * 0 + 1).rename_columns({"1": "z"}).to_pandas()
    assert out.columns.tolist() == [0, "z", "y"] and out["z"].dtype == "Int64"


def test_int_labels_with_an_arrow_dtype_pyarrow_cannot_parse():
    df = pd.DataFrame({0: ARROW_DTYPES["dictionary"], 1: [1, 2, 3]})
    _assert_frame(bridge.from_pandas(df).to_pandas(), df)


def test_with_column_on_rows_without_columns_states_no_schema_it_cannot_know():
    """Rows without columns pass a transform by when empty: the schema learnt from no rows lacked the new
    column (schema() said no columns, the blocks had one); it is now found by running, as before."""
    ds = bridge.from_arrow(pa.table({"x": [1, 2, 3]}).drop_columns(["x"])).with_column("c", "1")
    assert ds.schema() == pa.schema([("c", pa.int64())])
    assert ds.take_all() == [{"c": 1}] * 3
