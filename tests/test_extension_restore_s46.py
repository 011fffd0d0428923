"""Canonical extension types and dictionaries of large text come back as themselves from NumPy and pandas.

NumPy and pandas hold ``arrow.json`` as text, ``arrow.opaque`` as bytes and ``arrow.bool8`` as int8
(float where pandas met a null); the batch or frame came back as that storage type.  A dictionary
of ``large_string`` came back from a pandas frame as ``dictionary<int8, string>``.  Found by a
survey of types the fidelity matrix does not cover; these fail on the code before.
"""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa
import pytest

import bridge

CASES = {
    "json": pa.ExtensionArray.from_storage(pa.json_(), pa.array(['{"a": 1}', None, "[]"])),
    "opaque": pa.ExtensionArray.from_storage(pa.opaque(pa.binary(), "geometry", "vendor"),
                                             pa.array([b"\x00", None, b"ab"])),
    "bool8_null": pa.ExtensionArray.from_storage(pa.bool8(), pa.array([1, None, 0], pa.int8())),
    "bool8": pa.ExtensionArray.from_storage(pa.bool8(), pa.array([1, 0, 0], pa.int8())),
    "dictionary_large_string": pa.array(["a", "b", None], pa.dictionary(pa.int32(), pa.large_string())),
    "dictionary_large_binary": pa.array([b"a", b"b", None], pa.dictionary(pa.int16(), pa.large_binary())),
}

PATHS: dict[str, Callable[[pa.Table], pa.Table]] = {
    "numpy_batches": lambda t: bridge.from_arrow(t).map_batches(lambda b: b).to_arrow(),
    "pandas_batches": lambda t: bridge.from_arrow(t).map_batches(lambda df: df, batch_format="pandas").to_arrow(),
    "pandas": lambda t: bridge.from_pandas(bridge.from_arrow(t).to_pandas()).to_arrow(),
}


@pytest.mark.parametrize("path", sorted(PATHS))
@pytest.mark.parametrize("case", sorted(CASES))
def test_round_trip_keeps_the_type(case: str, path: str) -> None:
    arr = CASES[case]
    got = PATHS[path](pa.table({"c": arr, "x": [1, 2, 3]})).column("c")
    assert got.type == arr.type
    assert got.to_pylist() == arr.to_pylist()


def test_a_value_the_storage_cannot_hold_stays_as_computed() -> None:
    # The function made a bool8 column hold 2: not restorable, so the column is what the function returned.
    t = pa.table({"c": CASES["bool8"]})
    out = bridge.from_arrow(t).map_batches(lambda b: {"c": b["c"].astype("int64") * 200}).to_arrow()
    assert out.column("c").to_pylist() == [200, 0, 0]
    assert out.schema.field("c").type == pa.int64()


# ----------------------------------------------------------------- after review: what the function changed stays


def test_a_changed_column_is_not_wrapped_again() -> None:
    import numpy as np

    t = pa.table({"b": CASES["bool8"], "j": CASES["json"], "x": [1, 2, 3]})
    ds = bridge.from_arrow(t)
    times_ten = ds.map_batches(lambda d: {"b": d["b"].astype(np.int64) * 10}).to_arrow()
    assert times_ten.schema.field("b").type == pa.int64() and times_ten.column("b").to_pylist() == [10, 0, 0]
    floats = ds.map_batches(lambda d: {"b": np.array([0.0, 1.0, 1.0])}).to_arrow()
    assert floats.schema.field("b").type == pa.float64()
    ints = ds.map_batches(lambda d: {"j": np.array([17, 15, 3])}).to_arrow()
    assert ints.schema.field("j").type == pa.int64() and ints.column("j").to_pylist() == [17, 15, 3]
    scaled = ds.map_batches(lambda df: df.assign(b=df["b"].astype("float64") * 3), batch_format="pandas").to_arrow()
    assert scaled.schema.field("b").type == pa.float64() and scaled.column("b").to_pylist() == [3.0, 0.0, 0.0]


def test_bool8_is_bools_inside_pandas() -> None:
    # pyarrow gave pandas the int8 storage (float64 with NaN where a row is null): bools, masked where null.
    t = pa.table({"nulls": CASES["bool8_null"], "plain": CASES["bool8"]})
    df = bridge.from_arrow(t).to_pandas()
    assert str(df["nulls"].dtype) == "boolean" and df["plain"].dtype == bool
    assert df["nulls"].tolist()[0] is True and df["nulls"].isna().tolist() == [False, True, False]
    batch_types = bridge.from_arrow(t).map_batches(
        lambda d: d.assign(seen=[f"{d['nulls'].dtype}/{d['plain'].dtype}"] * len(d)), batch_format="pandas")
    assert batch_types.to_arrow().column("seen").to_pylist()[0] == "boolean/bool"
