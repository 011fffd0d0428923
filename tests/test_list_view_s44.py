"""Arrow list views (``list_view``, ``large_list_view``) come in as large lists holding the very same rows.

pyarrow 26's cast of a list view to a list lost values without a word: ``[[1, 2], [5], [3]]`` became
``[[1, 2], [5], []]``, a view whose offsets are out of order became other rows' lists, and the invalid offsets
it left crashed the worker of a later ``take`` (a group aggregation).  Ingest now rebuilds the rows from the
views (``bridge.block.normalize_types``)."""

from __future__ import annotations

import pyarrow as pa
import pytest

import bridge
from bridge.block import normalize_types

PLAIN = pa.array([[1, 2], None, [3], [], [4, 5, 6]], pa.list_view(pa.int64()))
OUT_OF_ORDER = pa.ListViewArray.from_arrays(pa.array([3, 0, 1], pa.int32()), pa.array([2, 1, 2], pa.int32()),
                                            pa.array([10, 11, 12, 13, 14]))
NESTED = pa.array([[["a"], None, ["b", "c"]], None, [[]]], pa.list_view(pa.list_view(pa.string_view())))
IN_STRUCT = pa.StructArray.from_arrays([PLAIN, pa.array(range(5))], ["a", "b"],
                                       mask=pa.array([False, False, True, False, False]))
IN_MAP = pa.array([[("k", [1, 2]), ("j", [])], None], pa.map_(pa.string(), pa.list_view(pa.int64())))
LARGE = pa.array([[1.5], None, [2.5, float("nan")]], pa.large_list_view(pa.float64()))


@pytest.mark.parametrize("arr", [PLAIN, OUT_OF_ORDER, NESTED, IN_STRUCT, IN_MAP, LARGE, PLAIN.slice(2, 3)],
                         ids=["plain", "out_of_order", "nested", "in_struct", "in_map", "large", "sliced"])
def test_list_views_keep_every_row(arr):
    table = normalize_types(pa.table({"x": arr}))
    col = table.column("x")
    col.validate(full=True)
    assert "view" not in str(col.type)
    assert col.to_pylist() == arr.to_pylist() or (arr is LARGE and repr(col.to_pylist()) == repr(arr.to_pylist()))


def test_list_views_in_chunks_keep_their_chunks():
    table = normalize_types(pa.table({"x": pa.chunked_array([PLAIN.slice(0, 2), PLAIN.slice(2)]), "y": range(5)}))
    assert table.column("x").num_chunks == 2 and table.column("x").to_pylist() == PLAIN.to_pylist()
    assert table.column("y").to_pylist() == list(range(5))


def test_a_dataset_of_list_views_gives_its_rows_and_groups_them():
    ds = bridge.from_arrow(pa.table({"g": [1, 1, 2], "l": OUT_OF_ORDER}))
    assert [r["l"] for r in ds.take_all()] == [[13, 14], [10], [11, 12]]
    got = {r["g"]: r["unique(l)"] for r in ds.groupby("g").aggregate(bridge.Unique("l")).take_all()}
    assert got == {1: [[13, 14], [10]], 2: [[11, 12]]}  # (a take of the invalid lists crashed the worker)
