"""A dictionary column of text in NumPy batches: taken from its dictionary by index, not decoded.

The values, their Python types and the nulls are those of decoding the column and converting its
strings (the reference below); each distinct value is one Python object shared by its rows (the
decoded conversion made one per row for a column too short to sample, and hashed every row else).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import bridge
from bridge.batch import column_to_numpy


def _reference(col: pa.ChunkedArray | pa.Array) -> list[Any]:
    return pc.cast(col, col.type.value_type).to_pylist()


def _dict(indices: list[int | None], values: list[Any], index_type: pa.DataType = pa.int32(),
          value_type: pa.DataType = pa.string()) -> pa.DictionaryArray:
    return pa.DictionaryArray.from_arrays(pa.array(indices, index_type), pa.array(values, value_type))


CASES = {
    "plain": _dict([0, 1, 0, 2, 1], ["a", "b", "c"]),
    "null_rows": _dict([0, None, 1, None, 0], ["x", "y"], pa.int8()),
    "null_in_dictionary": _dict([0, 1, 0, 1], ["x", None]),
    "unused_values": _dict([2, 2, 2], ["never", "used", "z"]),
    "large_string": _dict([1, 0, 1], ["ü", "日本"], pa.uint16(), pa.large_string()),
    "binary": _dict([0, 1, None, 0], [b"\x00\xff", b""], pa.int64(), pa.binary()),
    "empty": _dict([], [], pa.int32()),
    "chunked_two_dictionaries": pa.chunked_array([_dict([0, 1, 0], ["a", "b"]), _dict([1, 0, None], ["c", "a"])]),
    "sliced": _dict([0, 1, 2, 1, 0, 2, 2, 1], ["p", "q", "r"]).slice(2, 5),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_values_types_and_nulls_as_decoded(case: str) -> None:
    col = CASES[case]
    got = column_to_numpy(col)
    assert got.dtype == object
    assert got.tolist() == _reference(col)
    assert [type(v) for v in got.tolist()] == [type(v) for v in _reference(col)]


@pytest.mark.parametrize("rows", [5_000, 50_000])  # below and above the length text_objects samples from
def test_one_object_per_distinct_value(rows: int) -> None:
    rng = np.random.default_rng(0)
    labels = [f"label-{i}" for i in range(10)]
    col = pa.DictionaryArray.from_arrays(pa.array(rng.integers(0, 10, rows).astype(np.int32)), pa.array(labels))
    got = column_to_numpy(col)
    assert got.tolist() == _reference(col)
    assert len({id(v) for v in got}) == 10


def test_a_slice_of_a_large_dictionary_converts_only_its_rows() -> None:
    # The dictionary (100,000 values) is longer than the slice (3 rows): decoded, not taken from.
    big = pa.DictionaryArray.from_arrays(pa.array(np.arange(100_000, dtype=np.int32)),
                                         pa.array([f"v{i}" for i in range(100_000)]))
    part = big.slice(500, 3)
    assert column_to_numpy(part).tolist() == ["v500", "v501", "v502"]


def test_numpy_batches_of_a_categorical_column() -> None:
    import pandas as pd

    # (Labels of several characters: CPython shares one-character strings whatever the conversion.)
    df = pd.DataFrame({"c": pd.Categorical(["beta", "alpha", None, "beta"] * 1000), "x": np.arange(4000)})
    batches = list(bridge.from_pandas(df).iter_batches(batch_size=1024, batch_format="numpy"))
    got = np.concatenate([b["c"] for b in batches])
    assert got.tolist() == [None if v is None or v != v else v for v in df["c"].astype(object).tolist()]
    for b in batches:  # (a column with nulls is converted batch by batch: each batch shares its own)
        assert len({id(v) for v in b["c"] if v is not None}) == 2


@pytest.mark.parametrize(("index_type", "size"), [(pa.int8(), 128), (pa.uint8(), 256)], ids=str)
def test_a_full_dictionary_with_null_rows(index_type: pa.DataType, size: int) -> None:
    col = pa.DictionaryArray.from_arrays(pa.array([*range(size), None], index_type),
                                         pa.array([f"s{i}" for i in range(size)]))
    assert column_to_numpy(col).tolist() == [*(f"s{i}" for i in range(size)), None]


def test_every_row_null_and_an_empty_dictionary() -> None:
    col = pa.DictionaryArray.from_arrays(pa.array([None, None], pa.int32()), pa.array([], pa.string()))
    assert column_to_numpy(col).tolist() == [None, None]
