"""In-memory conversions against Ray Data 2.60 and the source library: what differed, one test each.

Found by a differential hunt (pandas, NumPy, batch formats, torch, tf, Dask, Modin; 2026-11-25).
Ray Data is the reference unless it loses or changes a value; then ours is exact or a BridgeError
with a Hint.  Each test fails on the code before its fix.

1. A frame's NumPy float column with NaN (pandas' missing value, stored as null) came back from
   ``to_pandas`` / pandas batches / ``to_dask`` / ``to_modin`` as masked ``Float64`` with ``pd.NA``;
   Ray Data and pyarrow give the frame's ``float64`` with NaN (float16 came back ``ArrowDtype``).
2. A frame's ``ArrowDtype`` column with nulls (``int32[pyarrow]``, ``bool[pyarrow]``) came back as
   masked ``Int32`` / ``boolean``, and ``ArrowDtype(pa.string())`` as ``StringDtype``; Ray Data gives
   the ``ArrowDtype`` back.
3. A frame's object column of Python values with ``None`` (bools, ints, lists, dicts) came back as
   ``boolean`` / ``Int64`` / ``ArrowDtype`` columns; Ray Data gives the object column back.
4. Column labels pyarrow cannot restore changed without a word: ``[True, False]`` came back
   ``[True, True]``, ``[0, "a"]`` as ``["0", "a"]`` (Ray Data fails with a ValueError in a task);
   duplicate column names raised pyarrow's ValueError.  Now a BridgeError with a Hint.
5. ``from_numpy`` of a structured array raised ``ArrowNotImplementedError`` (Ray Data pickles the
   records); now a struct column, every field kept.
6. ``from_numpy`` of an n-d array of strings or datetimes made a tensor column pyarrow could not read
   back (``ArrowTypeError`` on every read: the data was lost); Ray Data keeps the values.  Now a list
   column (2-d) or variable-shape tensor (n-d) of the values.  A 0-d array is refused with a Hint.
7. ``iter_torch_batches`` / ``iter_tf_batches`` with a float ``dtypes`` rounded integers the float does
   not hold (2**53 + 1 -> 2**53) and made finite values inf (1e6 in float16), as Ray Data does; now
   refused naming the column and value (integer ``dtypes`` already were).
8. A pandas function returning ``pd.NA`` inside a row (``{"all": [list(df["x"])]}`` of an ``Int64``
   column with a null, in ``map_groups`` / ``map_batches(batch_format="pandas")``) failed
   ("Could not convert <NA>"); Ray Data pickles the row.  ``pd.NA`` is pandas' null, at any depth.

Not fixed (reported): an ``ArrowDtype`` decimal column comes back as objects (pyarrow's pandas
metadata records only ``object``); a Decimal of another exponent in an object column comes back
rescaled (``Decimal('-3')`` -> ``Decimal('-3.00')``, equal in value); complex columns are refused
(Arrow has no complex type; Ray Data keeps them in pandas blocks).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import bridge
from bridge.errors import BridgeError

# ---------------------------------------------------------------- pandas: the frame's dtypes come back


def _float_frame() -> pd.DataFrame:
    return pd.DataFrame({
        "f64": [1.0, np.nan, 3.0],
        "f32": np.array([1.5, np.nan, -2.0], dtype=np.float32),
        "f16": np.array([0.5, np.nan, 2.0], dtype=np.float16),
    })


def test_a_frames_numpy_float_column_with_nan_comes_back_as_that_dtype_with_nan():
    df = _float_frame()
    back = bridge.from_pandas(df).to_pandas()
    pd.testing.assert_frame_equal(back, df, check_exact=True)
    assert [str(t) for t in back.dtypes] == ["float64", "float32", "float16"]
    assert np.isnan(back["f64"].iloc[1]) and back["f64"].iloc[0] == 1.0
    batch = next(iter(bridge.from_pandas(df).iter_batches(batch_format="pandas")))
    assert batch["f64"].dtype == np.float64 and np.isnan(batch["f64"].iloc[1])
    # The function sees the frame's dtype; what it returns is stored as before (NaN -> null).
    same = bridge.from_pandas(df).map_batches(lambda b: b, batch_format="pandas")
    pd.testing.assert_frame_equal(same.to_pandas(), df, check_exact=True)
    assert same.to_arrow().column("f64").null_count == 1


def test_a_frames_numpy_float_column_comes_back_from_dask_and_modin_as_that_dtype():
    pytest.importorskip("dask.dataframe")
    df = _float_frame()
    ddf = bridge.from_pandas(df).to_dask()
    assert [str(t) for t in ddf.dtypes] == ["float64", "float32", "float16"]
    pd.testing.assert_frame_equal(ddf.compute(), df, check_exact=True)
    pd.testing.assert_frame_equal(bridge.from_dask(ddf).to_pandas(), df, check_exact=True)
    pytest.importorskip("modin.pandas")
    mdf = bridge.from_pandas(df).to_modin()
    pd.testing.assert_frame_equal(mdf._to_pandas(), df, check_exact=True)


def test_a_float_column_made_in_arrow_keeps_nan_apart_from_null():
    # No frame behind it: the module's own rule (masked Float64, NaN and pd.NA two things) holds.
    t = pa.table({"x": pa.array([1.0, None, float("nan")])})
    col = bridge.from_arrow(t).to_pandas()["x"]
    assert col.dtype == pd.Float64Dtype() and col.isna().tolist() == [False, True, False]
    assert np.isnan(col.iloc[2])


def test_a_frames_arrow_dtype_columns_with_nulls_keep_their_arrow_dtype():
    df = pd.DataFrame({
        "i": pd.array([1, None, 2**31 - 1], dtype=pd.ArrowDtype(pa.int32())),
        "b": pd.array([True, None, False], dtype=pd.ArrowDtype(pa.bool_())),
        "u": pd.array([2**64 - 1, None, 0], dtype=pd.ArrowDtype(pa.uint64())),
        "f": pd.array([0.1, None, 2.0], dtype=pd.ArrowDtype(pa.float32())),
        "s": pd.array(["a", None, ""], dtype=pd.ArrowDtype(pa.string())),  # (pyarrow gives StringDtype)
        "sd": pd.array(["a", None, ""], dtype="string[pyarrow]"),  # a StringDtype stays one
    })
    for back in (bridge.from_pandas(df).to_pandas(),
                 next(iter(bridge.from_pandas(df).iter_batches(batch_format="pandas"))),
                 bridge.from_pandas(df).map_batches(lambda b: b, batch_format="pandas").to_pandas()):
        pd.testing.assert_frame_equal(back, df, check_exact=True)
        assert back["i"].dtype == pd.ArrowDtype(pa.int32()) and back["u"].iloc[0] == 2**64 - 1
        assert back["b"].isna().tolist() == [False, True, False]
        assert back["s"].dtype == pd.ArrowDtype(pa.string()) and back["sd"].dtype == pd.StringDtype("pyarrow")


def test_a_frames_object_columns_of_python_values_come_back_as_objects():
    df = pd.DataFrame({
        "flags": pd.Series([True, None, False], dtype=object),
        "ids": pd.Series([1, None, 2**62 + 1], dtype=object),
        "lists": pd.Series([[1, 2], None, []], dtype=object),
        "dicts": pd.Series([{"a": 1}, None, {"a": 2**53 + 1}], dtype=object),
    })
    back = bridge.from_pandas(df).to_pandas()
    pd.testing.assert_frame_equal(back, df, check_exact=True)
    assert all(t == np.dtype(object) for t in back.dtypes)
    assert back["ids"].tolist() == [1, None, 2**62 + 1] and type(back["ids"].iloc[2]) is int
    assert back["lists"].tolist() == [[1, 2], None, []] and back["dicts"].iloc[2] == {"a": 2**53 + 1}
    # Its Arrow types are what pyarrow infers from the values.
    schema = bridge.from_pandas(df).schema()
    assert schema.field("ids").type == pa.int64() and schema.field("lists").type == pa.list_(pa.int64())
    # A pandas function gets the frame's objects and gives them back unchanged.
    same = bridge.from_pandas(df).map_batches(lambda b: b, batch_format="pandas")
    assert same.schema().field("ids").type == pa.int64()
    pd.testing.assert_frame_equal(same.to_pandas(), df, check_exact=True)


def test_a_frames_object_column_comes_back_as_objects_in_every_dask_partition():
    pytest.importorskip("dask.dataframe")
    df = pd.DataFrame({"ids": pd.Series([1, 2, None, 2**62 + 1], dtype=object)})
    ddf = bridge.from_pandas(df, override_num_blocks=2).to_dask()
    assert ddf.dtypes["ids"] == np.dtype(object)  # one dtype for every partition, the one with no null too
    assert ddf.compute()["ids"].tolist() == [1, 2, None, 2**62 + 1]


@pytest.mark.parametrize("labels", [[True, False], [0, "a"]], ids=["bools", "mixed"])
def test_column_labels_that_would_not_come_back_are_refused(labels):
    df = pd.DataFrame([[1, 2]], columns=labels)
    with pytest.raises(BridgeError, match="would not come back") as err:
        bridge.from_pandas(df)
    assert "df.columns = df.columns.map(str)" in str(err.value) and "Hint:" in str(err.value)
    # Labels pyarrow restores are kept, as before.
    ints = pd.DataFrame([[1, 2]], columns=[3, 7])
    pd.testing.assert_frame_equal(bridge.from_pandas(ints).to_pandas(), ints)


@pytest.mark.parametrize("labels", [["a", "a"], [0, "0"]], ids=["same", "same_as_text"])
def test_duplicate_column_names_are_a_bridge_error(labels):
    with pytest.raises(BridgeError, match="duplicate column names") as err:
        bridge.from_pandas(pd.DataFrame([[1, 2]], columns=labels))
    assert "Hint: give every column its own name" in str(err.value)


# ---------------------------------------------------------------- NumPy


def test_from_numpy_of_a_structured_array_is_a_struct_column():
    arr = np.array([(1, 2.5, "x"), (2**40, -0.0, "ü")], dtype=[("a", "i8"), ("b", "f4"), ("s", "U2")])
    ds = bridge.from_numpy(arr)
    assert ds.schema().field("data").type == pa.struct([("a", pa.int64()), ("b", pa.float32()), ("s", pa.string())])
    assert [r["data"] for r in ds.take_all()] == [{"a": 1, "b": 2.5, "s": "x"}, {"a": 2**40, "b": -0.0, "s": "ü"}]
    back = ds.take_batch(2)["data"]
    assert back.dtype == object and back[1] == {"a": 2**40, "b": -0.0, "s": "ü"}


def test_from_numpy_of_nd_strings_and_times_keeps_every_value():
    words = np.array([["a", "bc"], ["", "ü"]])
    ds = bridge.from_numpy(words)
    assert ds.schema().field("data").type == pa.list_(pa.string())
    assert [r["data"] for r in ds.take_all()] == [["a", "bc"], ["", "ü"]]
    times = np.array([[["2024-01-01T00:00:01", "NaT"]], [["1900-01-01", "2262-04-11"]]], dtype="datetime64[s]")
    rows = bridge.from_numpy(times).take_batch(2)["data"]
    assert rows.dtype == object and [r.shape for r in rows] == [(1, 2), (1, 2)]
    assert rows[0].dtype == np.dtype("datetime64[s]")
    np.testing.assert_array_equal(np.stack(list(rows)), times)
    nd = np.arange(8).reshape(2, 2, 2).astype("U1")
    got = bridge.from_numpy(nd).take_batch(2)["data"]
    assert [r.tolist() for r in got] == nd.tolist()


def test_from_numpy_of_a_0d_array_says_how_to_make_it_a_column():
    with pytest.raises(BridgeError, match="0-d array") as err:
        bridge.from_numpy(np.array(5))
    assert "np.atleast_1d" in str(err.value)
    assert bridge.from_numpy(np.atleast_1d(np.array(5))).take_all() == [{"data": 5}]


# ---------------------------------------------------------------- torch / tf float dtypes

torch = pytest.importorskip("torch")


def _torch_batch(t: pa.Table, **kw):
    return next(iter(bridge.from_arrow(t).iter_torch_batches(batch_size=len(t), **kw)))


@pytest.mark.parametrize(("values", "arrow_type", "dtype", "message"), [
    ([2**53 + 1, 3], pa.int64(), torch.float64, "holds 9007199254740993, which float64 cannot hold exactly"),
    ([2**24 + 1, 3], pa.int64(), torch.float32, "holds 16777217, which float32 cannot hold exactly"),
    ([2**64 - 1, 0], pa.uint64(), torch.float32, "holds 18446744073709551615, which float32"),
    ([70000, 1], pa.int32(), torch.float16, "would make it inf"),
    ([1e6, 0.1], pa.float64(), torch.float16, "past float16's largest value"),
    ([1e300, 0.1], pa.float64(), torch.float32, "past float32's largest value"),
])
def test_torch_float_dtypes_that_would_change_a_value_are_refused(values, arrow_type, dtype, message):
    t = pa.table({"x": pa.array(values, arrow_type)})
    with pytest.raises(BridgeError, match=message) as err:
        _torch_batch(t, dtypes=dtype)
    assert "column 'x'" in str(err.value) and "Hint:" in str(err.value)


def test_torch_float_dtypes_of_values_they_hold_keep_them():
    t = pa.table({"i": pa.array([2**53, -(2**24), 7], pa.int64()), "u": pa.array([2**63, 0, 1], pa.uint64()),
                  "f": pa.array([0.1, float("inf"), float("nan")])})
    out = _torch_batch(t, dtypes={"i": torch.float64, "u": torch.float64, "f": torch.float32})
    assert out["i"].dtype == torch.float64 and out["i"].tolist() == [2.0**53, -(2.0**24), 7.0]
    assert out["u"].dtype == torch.float64 and out["u"].tolist() == [2.0**63, 0.0, 1.0]
    f = out["f"]
    assert f.dtype == torch.float32 and f[0].item() == np.float32(0.1) and f[1].item() == float("inf")
    assert torch.isnan(f[2])
    small = _torch_batch(pa.table({"x": pa.array([2048, -3], pa.int64())}), dtypes=torch.float16)["x"]
    assert small.dtype == torch.float16 and small.tolist() == [2048.0, -3.0]


def test_tf_float_dtypes_that_would_change_a_value_are_refused_and_others_kept():
    tf = pytest.importorskip("tensorflow")
    t = pa.table({"x": pa.array([2**53 + 1, 3], pa.int64())})
    with pytest.raises(BridgeError, match="holds 9007199254740993, which float64 cannot hold exactly") as err:
        next(iter(bridge.from_arrow(t).iter_tf_batches(batch_size=2, dtypes=tf.float64)))
    assert "iter_tf_batches: column 'x'" in str(err.value) and "Hint:" in str(err.value)
    with pytest.raises(BridgeError, match="past float16's largest value"):
        next(iter(bridge.from_arrow(pa.table({"y": [1e6]})).iter_tf_batches(batch_size=1, dtypes=tf.float16)))
    ok = next(iter(bridge.from_arrow(pa.table({"x": pa.array([2**53, 3])})).iter_tf_batches(
        batch_size=2, dtypes=tf.float64)))["x"]
    assert ok.dtype == tf.float64 and ok.numpy().tolist() == [2.0**53, 3.0]


def test_pandas_na_inside_a_returned_row_is_a_null():
    ds = bridge.from_items([{"k": 1, "x": 1}, {"k": 1, "x": None}, {"k": 2, "x": 3}])
    grouped = ds.groupby("k").map_groups(lambda df: {"all": [list(df["x"])]}).take_all()
    assert sorted(grouped, key=lambda r: len(r["all"])) == [{"all": [3]}, {"all": [1, None]}]
    nested = ds.map_batches(lambda df: {"r": [{"v": df["x"].iloc[1], "l": [pd.NA, 2]}] * len(df)},
                            batch_format="pandas").take_all()
    assert nested == [{"r": {"v": None, "l": [None, 2]}}] * 3
    assert ds.map_batches(lambda df: {"r": [(pd.NA,)] * len(df)}, batch_format="pandas").take(1) == [{"r": [None]}]


def test_from_numpy_edges_found_in_review_are_values_or_hinted_errors():
    """2-d datetime64[D] raised a raw TypeError; a masked structured array a raw TypeError; a structured
    array without fields lost its rows."""
    days = np.array([["2020-01-01", "2021-02-03"], ["NaT", "1900-01-01"]], dtype="datetime64[D]")
    ds = bridge.from_numpy(days)
    assert ds.schema().field("data").type == pa.list_(pa.date32())
    import datetime

    assert [r["data"] for r in ds.take_all()] == [[datetime.date(2020, 1, 1), datetime.date(2021, 2, 3)],
                                                  [None, datetime.date(1900, 1, 1)]]
    rec = np.array([(1, 2.5)], dtype=[("a", "i8"), ("b", "f8")])
    assert bridge.from_numpy(np.ma.array(rec)).take_all() == [{"data": {"a": 1, "b": 2.5}}]
    with pytest.raises(BridgeError, match="masked structured array"):
        bridge.from_numpy(np.ma.array(rec, mask=[(False, True)])).take_all()
    with pytest.raises(BridgeError, match="without fields"):
        bridge.from_numpy(np.zeros(2, dtype=np.dtype([]))).take_all()
