"""Text columns as Python objects, shared where values repeat (bridge/text_objects.py).

NumPy batches made one ``str`` per row (a column of a few labels over 2M rows: 87 ms, 13 ms shared);
pandas frames hashed every value to share them (2M distinct strings: 339 ms, 89 ms without).  The values
must stay the very ones pyarrow gives, in every type, chunking, slicing and null pattern; only how many
objects hold them changes -- which these tests check too, as the thing that would silently go away.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import bridge
from bridge.batch import column_to_numpy
from bridge.pandas_types import block_to_pandas
from bridge.text_objects import MIN_ROWS, text_objects, values_repeat

ROWS = 3 * MIN_ROWS
TEXT_TYPES = [pa.string(), pa.large_string(), pa.binary(), pa.large_binary()]


def _few(n: int = ROWS, nulls: bool = True) -> list:
    labels = ["cat", "dog", "", "bird ünïcode"] + ([None] if nulls else [])
    return [labels[i % len(labels)] for i in range(n)]


def _unique(n: int = ROWS) -> list:
    return [None if i % 97 == 0 else f"sentence {i} of many" for i in range(n)]


def _typed(values: list, t: pa.DataType) -> pa.Array:
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        values = [None if v is None else v.encode() for v in values]
    return pa.array(values, type=t)


def _chunked(arr: pa.Array, cuts: int = 5) -> pa.ChunkedArray:
    n = len(arr)
    edges = [0, 1, *sorted({n * k // cuts for k in range(1, cuts)}), n - 3, n - 3, n]
    return pa.chunked_array([arr.slice(a, b - a) for a, b in zip(edges, edges[1:])], type=arr.type)


def _distinct_objects(values: np.ndarray) -> int:
    return len({id(v) for v in values if v is not None})


@pytest.mark.parametrize("t", TEXT_TYPES, ids=str)
@pytest.mark.parametrize("make", [_few, _unique], ids=["few", "unique"])
@pytest.mark.parametrize("shape", ["array", "chunked", "slice"])
def test_text_objects_are_pyarrows_values(t, make, shape):
    arr = _typed(make(), t)
    col = {"array": arr, "chunked": _chunked(arr), "slice": arr.slice(7, len(arr) - 20)}[shape]
    want = col.to_numpy(zero_copy_only=False)
    for got in (text_objects(col), column_to_numpy(col)):
        assert got.dtype == object and got.flags.writeable and len(got) == len(want)
        assert got.tolist() == want.tolist()
        assert [type(v) for v in got[:10]] == [type(v) for v in want[:10]]


@pytest.mark.parametrize("t", TEXT_TYPES, ids=str)
def test_repeating_values_share_one_object_each(t):
    col = _chunked(_typed(_few(), t))
    assert values_repeat(col)
    for got in (text_objects(col), column_to_numpy(col)):
        assert _distinct_objects(got) == 4  # (before: one per row)
    unique = _typed(_unique(), t)
    assert not values_repeat(unique)
    assert _distinct_objects(text_objects(unique)) == len(unique) - unique.null_count


def test_the_sample_spans_the_column_not_its_start():
    """Values distinct for the first 8,192 rows, then the same few labels: the column repeats."""
    values = [f"head {i}" for i in range(MIN_ROWS)] + _few(20 * MIN_ROWS)
    assert values_repeat(pa.array(values))
    assert values_repeat(_chunked(pa.array(values), cuts=9))
    assert not values_repeat(pa.array(_unique(20 * MIN_ROWS)))


@pytest.mark.parametrize("t", [pa.string_view(), pa.binary_view()], ids=str)
def test_views_keep_pyarrows_conversion(t):
    col = _chunked(_typed(_few(), t))
    assert column_to_numpy(col).tolist() == col.to_numpy(zero_copy_only=False).tolist()
    table = pa.table({"v": col, "s": _few()})
    pd.testing.assert_frame_equal(block_to_pandas(table), table.to_pandas())


def test_short_null_and_empty_columns():
    assert not values_repeat(pa.array(_few(MIN_ROWS - 1)))  # short: pyarrow's conversion as it is
    nulls = pa.array([None] * ROWS, pa.string())
    assert not values_repeat(nulls)
    assert text_objects(nulls).tolist() == [None] * ROWS
    empty = pa.chunked_array([], type=pa.string())
    assert text_objects(empty).tolist() == []
    assert column_to_numpy(empty).tolist() == []


def _frame_cases() -> dict[str, pa.Table]:
    n = ROWS
    few, unique = pa.array(_few(n)), pa.array(_unique(n))
    pdf = pd.DataFrame({"text": _unique(n), "label": _few(n), "x": np.arange(n)},
                       index=pd.Index([f"row{i}" for i in range(n)], name="key"))
    int_labels = pd.DataFrame({0: _unique(n), 1: _few(n)})
    return {
        "unique only": pa.table({"a": unique, "b": pa.array(_unique(n), pa.large_string())}),
        "few only": pa.table({"a": few}),
        "mixed": pa.table({"text": unique, "label": few, "x": np.arange(n), "bytes": _typed(_unique(n), pa.binary())}),
        "mixed, chunked": pa.table({"text": _chunked(unique), "label": _chunked(few)}),
        "from pandas, text index": pa.Table.from_pandas(pdf),
        "from pandas, int labels": pa.Table.from_pandas(int_labels),
    }


@pytest.mark.parametrize("name", list(_frame_cases()))
def test_frames_are_pyarrows_frames(name):
    table = _frame_cases()[name]
    got = block_to_pandas(table)
    pd.testing.assert_frame_equal(got, table.to_pandas())
    for column in got.columns:
        if got[column].dtype == object:
            values = got[column].to_numpy()
            repeats = values_repeat(table.column(str(column)))
            # shared where they repeat, one per row where not (pyarrow alone shared every column's)
            assert (_distinct_objects(values) <= 4) == repeats, column
    got["x" if "x" in got else got.columns[0]] = 0  # writable, as before


def test_datasets_round_trip_text_through_pandas_and_numpy():
    df = pd.DataFrame({"text": _unique(), "label": _few(), "x": np.arange(ROWS)})
    ds = bridge.from_pandas(df, override_num_blocks=2)
    pd.testing.assert_frame_equal(ds.to_pandas(), df)
    out = pd.concat(ds.iter_batches(batch_size=None, batch_format="pandas"), ignore_index=True)
    pd.testing.assert_frame_equal(out, df)
    batch = ds.take_batch(ROWS, batch_format="numpy")
    assert batch["text"].tolist() == df["text"].tolist() and batch["label"].tolist() == df["label"].tolist()
    mapped = ds.map_batches(lambda b: b.assign(n=b["text"].str.len().fillna(-1)), batch_format="pandas").to_pandas()
    assert mapped["n"].tolist() == df["text"].str.len().fillna(-1).tolist()


def test_frames_that_cannot_be_put_together_by_name_share_every_column_as_before():
    """Duplicate names, labels that are not their field names (None): pyarrow's conversion, all shared."""
    few, unique = pa.array(_few()), pa.array(_unique())
    dupes = pa.Table.from_arrays([few, unique, few], names=["a", "b", "a"])
    pd.testing.assert_frame_equal(block_to_pandas(dupes), dupes.to_pandas())
    df = pd.DataFrame({"x": _few(), "b": _unique()})
    df.columns = [None, "b"]
    table = pa.Table.from_pandas(df)
    got = block_to_pandas(table)
    assert list(got.columns) == [None, "b"]
    pd.testing.assert_frame_equal(got, table.to_pandas())


def test_numpy_text_keeps_none_for_null_under_pandas_string_inference():
    col = _chunked(pa.array(_few()))
    with pd.option_context("future.infer_string", True):
        got = column_to_numpy(col)
    assert got.dtype == object and got.tolist() == col.to_pylist()

