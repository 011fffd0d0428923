"""Types a target has no place for are refused naming the column, with a hint that works.

Found by a survey of types the fidelity matrix does not cover: a union column in NumPy or pandas
raised pyarrow's "No known equivalent Pandas block for Arrow data of type sparse_union<...>"
(inside a Ray traceback, no column named; Dask and Modin failed making an empty frame), and
``write_parquet`` of a column Parquet cannot hold said "the block of part-00000.parquet" without
naming the column, its hint ending "or use write_parquet" -- the call that had just failed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import bridge
from bridge.arrow_values import empty_array
from bridge.errors import UnsupportedTypeError

SPARSE = pa.UnionArray.from_sparse(pa.array([0, 1], pa.int8()), [pa.array([1, 2]), pa.array(["a", "b"])], ["i", "s"])
DENSE = pa.UnionArray.from_dense(pa.array([0, 1], pa.int8()), pa.array([0, 0], pa.int32()),
                                 [pa.array([1]), pa.array(["a"])], ["i", "s"])

TARGETS: dict[str, Callable[[Any], Any]] = {
    "to_pandas": lambda ds: ds.to_pandas(),
    "to_numpy": lambda ds: ds.to_numpy(),
    "to_numpy_column": lambda ds: ds.to_numpy(column="u"),
    "numpy_batches": lambda ds: ds.map_batches(lambda b: b).to_arrow(),
    "pandas_batches": lambda ds: ds.map_batches(lambda df: df, batch_format="pandas").to_arrow(),
    "iter_batches": lambda ds: next(iter(ds.iter_batches())),
    "to_dask": lambda ds: ds.to_dask().compute(),
}


@pytest.mark.parametrize("target", sorted(TARGETS))
@pytest.mark.parametrize("union", [SPARSE, DENSE], ids=["sparse", "dense"])
def test_a_union_column_is_refused_by_name(union: pa.Array, target: str) -> None:
    if target == "to_dask":
        pytest.importorskip("dask.dataframe")
    ds = bridge.from_arrow(pa.table({"x": [1, 2], "u": union}))
    with pytest.raises(UnsupportedTypeError, match=r"(?s)union.*'u'.*Hint: use batch_format='pyarrow'"):
        TARGETS[target](ds)


@pytest.mark.parametrize("union", [SPARSE, DENSE], ids=["sparse", "dense"])
def test_unions_stay_where_arrow_holds_them(union: pa.Array) -> None:
    t = pa.table({"x": [1, 2], "u": union})
    ds = bridge.from_arrow(t)
    assert ds.to_arrow().equals(t)
    assert ds.map_batches(lambda b: b, batch_format="pyarrow").to_arrow().equals(t)
    assert empty_array(union.type).type == union.type
    assert ds.filter(expr="x > 1").to_arrow().column("u").to_pylist() == union.to_pylist()[1:]


@pytest.mark.parametrize("column", [
    pa.array([pa.MonthDayNano([1, 2, 3])]),
    pc.run_end_encode(pa.array([1]), run_end_type=pa.int32()),
    SPARSE.slice(0, 1),
], ids=["interval", "run_end_encoded", "union"])
def test_write_parquet_names_the_column_parquet_cannot_hold(tmp_path: Any, column: pa.Array) -> None:
    ds = bridge.from_arrow(pa.table({"x": [7], "bad": column, "y": ["z"]}))
    with pytest.raises(UnsupportedTypeError) as info:
        ds.write_parquet(str(tmp_path / "out"))
    text = str(info.value)
    assert "column 'bad'" in text and str(column.type) in text
    assert "use write_parquet" not in text  # (the call that failed)
    assert "drop_columns" in text


def test_write_csv_hint_still_offers_parquet(tmp_path: Any) -> None:
    ds = bridge.from_arrow(pa.table({"x": [7], "bad": pa.array([pa.MonthDayNano([1, 2, 3])])}))
    with pytest.raises(UnsupportedTypeError, match=r"(?s)'bad'.*write_parquet"):
        ds.write_csv(str(tmp_path / "out"))


@pytest.mark.parametrize("mode", ["sparse", "dense"])
def test_an_empty_union_keeps_its_childrens_not_null_and_codes(mode: str) -> None:
    t = pa.union([pa.field("a", pa.int64(), nullable=False), pa.field("b", pa.list_(pa.field("v", pa.int8(), False)))],
                 mode, type_codes=[3, 7])
    empty = empty_array(t)
    empty.validate(full=True)
    assert empty.type == t and len(empty) == 0
    assert not empty.type.field(0).nullable
