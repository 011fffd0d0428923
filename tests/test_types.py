"""Types survive the trip through blocks, batch formats and user functions."""

from __future__ import annotations

import datetime as dt
import decimal

import numpy as np
import pyarrow as pa
import pytest

import bridge
from bridge.tensor import VariableShapeTensorType


def _rich_table() -> pa.Table:
    n = 6
    return pa.table({
        "i8": pa.array([1, -2, None, 4, 5, 6], pa.int8()),
        "u64": pa.array([0, 2**64 - 1, 3, 4, None, 6], pa.uint64()),
        "i64": pa.array([2**62, None, 1, 2, 3, 4], pa.int64()),
        "f32": pa.array([0.5, None, 1.5, float("nan"), 2.0, 3.0], pa.float32()),
        "b": pa.array([True, False, None, True, True, False]),
        "s": pa.array(["a", None, "ü", "", "x" * 100, "z"]),
        "ls": pa.array(["a", "b", None, "d", "e", "f"], pa.large_string()),
        "bin": pa.array([b"\x00", b"", None, b"ab", b"c", b"d"]),
        "ts_tz": pa.array([dt.datetime(2024, 1, 1, 12, i) for i in range(5)] + [None],
                          pa.timestamp("us", tz="Europe/Paris")),
        "ts_ns": pa.array([1, 2, 3, None, 5, 6], pa.timestamp("ns")),
        "date": pa.array([dt.date(2020, 1, i + 1) for i in range(n)], pa.date32()),
        "dec": pa.array([decimal.Decimal("1.25"), None, decimal.Decimal("-3.50"), decimal.Decimal("0.00"),
                         decimal.Decimal("99999.99"), decimal.Decimal("1.01")], pa.decimal128(7, 2)),
        "dict": pa.array(["x", "y", "x", None, "y", "x"]).dictionary_encode(),
        "lst": pa.array([[1, 2], [], None, [3], [4, 5, 6], [7]], pa.list_(pa.int64())),
        "st": pa.array([{"a": i, "b": str(i)} if i != 2 else None for i in range(n)]),
    })


@pytest.mark.parametrize("fmt", ["numpy", "pandas", "pyarrow"])
def test_identity_map_keeps_every_type(fmt):
    table = _rich_table()
    # Three blocks: each batch infers its own pandas dtypes, and the blocks must still agree.
    out = bridge.from_arrow(table, override_num_blocks=3).map_batches(lambda b: b, batch_format=fmt).to_arrow()
    if fmt == "pandas":
        assert out["i64"].type == pa.int64() and out["i64"].to_pylist() == table["i64"].to_pylist()
        # pandas cannot hold uint64 with nulls or int8 with nulls without widening: compare values.
        assert out.column_names == table.column_names
        for name in ["s", "ts_tz", "date", "dec", "lst", "st", "bin"]:
            assert out[name].to_pylist() == table[name].to_pylist(), name
        assert out["ts_tz"].type == table["ts_tz"].type
        return
    for name in table.column_names:
        assert out[name].type == table[name].type, (name, out[name].type)
        assert out[name].to_pylist() == table[name].to_pylist() or name == "f32", name


def test_numpy_batches_never_turn_null_ints_into_floats():
    out = bridge.from_arrow(_rich_table()).map_batches(lambda b: {"i64": b["i64"]}).to_arrow()
    assert out["i64"].type == pa.int64()
    assert out["i64"].to_pylist() == [2**62, None, 1, 2, 3, 4]


def test_fixed_shape_tensor_round_trip():
    arr = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2 * 3, 4, 5)[:6]
    ds = bridge.from_numpy(arr)
    assert isinstance(ds.schema().field("data").type, pa.FixedShapeTensorType)
    batch = ds.map_batches(lambda b: {"data": b["data"] * 2}).take_batch(6)
    assert batch["data"].shape == (6, 4, 5)
    np.testing.assert_array_equal(batch["data"], arr * 2)
    rows = ds.take(2)
    assert rows[1]["data"].shape == (4, 5)


def test_variable_shape_tensors():
    def make(b):
        return {"img": np.array([np.ones((int(i) + 1, 2)) for i in b["id"]] + [], dtype=object)}

    ds = bridge.range(4).map_batches(make)
    assert isinstance(ds.schema().field("img").type, VariableShapeTensorType)
    imgs = ds.take_batch(4)["img"]
    assert [x.shape for x in imgs] == [(1, 2), (2, 2), (3, 2), (4, 2)]


def test_pandas_index_survives_round_trip():
    import pandas as pd

    df = pd.DataFrame({"v": [1.0, 2.0, 3.0]}, index=pd.Index(["a", "b", "c"], name="key"))
    back = bridge.from_pandas(df).to_pandas()
    pd.testing.assert_frame_equal(back, df)
    plain = pd.DataFrame({"v": [1, 2]})
    pd.testing.assert_frame_equal(bridge.from_pandas(plain).to_pandas(), plain)


def test_polars_and_duckdb_through_the_capsule():
    import duckdb
    import polars as pl

    ds = bridge.range(100).map_batches(lambda b: {"id": b["id"], "s": b["id"].astype(str)})
    frame = pl.DataFrame(ds)
    assert frame.height == 100 and frame["s"][5] == "5"
    rel = duckdb.sql("SELECT sum(id) AS total FROM ds")
    assert rel.fetchall()[0][0] == sum(range(100))
    back = bridge.from_any(frame)
    assert back.count() == 100 and back.schema().field("s").type == pa.large_string()


@pytest.mark.parametrize("dtype", ["i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f2", "f4", "f8"])
def test_numeric_arrays_are_what_pa_array_makes(dtype):
    """bridge.tensor.numeric_array builds what pa.array(ndarray) builds (same type and values, NaN a value and
    not a null, the memory shared) without pa.array's pandas import; a strided view is copied, as there."""
    from bridge.tensor import numeric_array

    arr = (np.arange(10) * 3).astype(dtype)
    if dtype.startswith("f"):
        arr[3] = np.nan
    for values in (arr, arr[::3], arr[:0]):
        ours, theirs = numeric_array(values), pa.array(values)
        assert ours.type == theirs.type and len(ours) == len(theirs) and ours.null_count == theirs.null_count == 0
        np.testing.assert_array_equal(ours.to_numpy(), theirs.to_numpy())  # NaN where pa.array has NaN
    ours = numeric_array(arr)
    arr[0] = 7
    assert ours[0].as_py() == 7  # zero-copy, as pa.array is for numbers
    for other in (np.array([True, False]), np.array(["a"]), np.arange(4.0).reshape(2, 2),
                  np.arange(3, dtype=">i4" if np.little_endian else "<i4")):
        assert numeric_array(other) is None  # left to pa.array


@pytest.mark.parametrize("shape,dtype", [((4, 3), "f8"), ((2, 3, 8, 8), "u1"), ((5, 1), "i4"), ((3, 2, 2), "f2")])
def test_fixed_tensor_arrays_are_what_pyarrow_makes(shape, dtype):
    from bridge.tensor import fixed_tensor_array

    arr = np.arange(int(np.prod(shape))).reshape(shape).astype(dtype)
    ours = fixed_tensor_array(arr)
    theirs = pa.FixedShapeTensorArray.from_numpy_ndarray(arr)
    assert ours.type == theirs.type and ours.equals(theirs)
    np.testing.assert_array_equal(ours.to_numpy_ndarray(), arr)
    # The same type whichever way a block was made: blocks of both kinds concatenate.
    assert pa.concat_arrays([ours, theirs]).type == ours.type


def test_bool_tensors_stay_bool():
    # pyarrow's from_numpy_ndarray / to_numpy_ndarray refuse bools: the bits are packed as Arrow holds them.
    from bridge.tensor import fixed_tensor_array, tensor_to_numpy

    arr = np.arange(12).reshape(3, 2, 2) % 3 == 0
    ours = fixed_tensor_array(arr)
    assert ours.type == pa.fixed_shape_tensor(pa.bool_(), [2, 2], permutation=[0, 1])
    np.testing.assert_array_equal(tensor_to_numpy(ours), arr)
    np.testing.assert_array_equal(tensor_to_numpy(ours.slice(1, 2)), arr[1:])
    assert tensor_to_numpy(pa.chunked_array([ours.slice(0, 1), ours.slice(1)])).dtype == np.bool_


def test_a_permuted_tensor_reads_in_its_logical_order():
    from bridge.tensor import tensor_to_numpy

    arr = np.arange(48, dtype=np.int32).reshape(2, 4, 3, 2).transpose(0, 2, 3, 1)
    tensors = pa.FixedShapeTensorArray.from_numpy_ndarray(arr)  # memory order kept: a permutation
    assert list(tensors.type.permutation) != [0, 1, 2]
    np.testing.assert_array_equal(tensor_to_numpy(tensors), arr)
