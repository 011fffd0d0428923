"""Run-end encoded columns through NumPy, pandas, Dask and torch: decoded, values exact, encoded again.

pyarrow's own NumPy / pandas conversion of a run-end encoded int64 column holding a null gives
float64 (``2**53 + 1`` became ``2**53``, the null NaN), bypassing the rules every other column
follows; torch refused the column.  Decoded first, the values follow their own type's rules;
coming back, the column is encoded again as the input's (or the frame's carried schema's) type.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import bridge
from bridge.batch import column_to_numpy


def _ree(values: list[Any], value_type: pa.DataType, run_end_type: pa.DataType = pa.int32()) -> pa.Array:
    return pc.run_end_encode(pa.array(values, value_type), run_end_type=run_end_type)


CASES = {
    "int64_null": _ree([1, None, 2**53 + 1, 2**53 + 1], pa.int64()),
    "int64": _ree([1, 1, 2], pa.int64(), pa.int16()),
    "string_null": _ree(["a", None, "b", "b"], pa.string(), pa.int64()),
    "float_nan_null": _ree([1.5, float("nan"), None, None], pa.float64()),
    "bool_null": _ree([True, None, True, False], pa.bool_()),
    "empty": _ree([], pa.int64()),
}

PATHS: dict[str, Callable[[pa.Table], pa.Table]] = {
    "numpy_batches": lambda t: bridge.from_arrow(t).map_batches(lambda b: b).to_arrow(),
    "pandas_batches": lambda t: bridge.from_arrow(t).map_batches(lambda df: df, batch_format="pandas").to_arrow(),
    "pandas": lambda t: bridge.from_pandas(bridge.from_arrow(t).to_pandas()).to_arrow(),
    "dask": lambda t: bridge.from_dask(bridge.from_arrow(t).to_dask()).to_arrow(),
}


def _as_text(values: list[Any]) -> list[str]:
    return [repr(v) for v in values]  # (nan and None apart, exact ints)


@pytest.mark.parametrize("path", sorted(PATHS))
@pytest.mark.parametrize("case", sorted(CASES))
def test_round_trip_exact(case: str, path: str) -> None:
    if path == "dask":
        pytest.importorskip("dask.dataframe")
    arr = CASES[case]
    got = PATHS[path](pa.table({"c": arr})).column("c")
    assert got.type == arr.type
    assert _as_text(got.to_pylist()) == _as_text(arr.to_pylist())


def test_numpy_of_ints_with_a_null_is_exact() -> None:
    out = column_to_numpy(CASES["int64_null"])
    assert out.dtype == object and out.tolist() == [1, None, 2**53 + 1, 2**53 + 1]
    assert bridge.from_arrow(pa.table({"c": CASES["int64"]})).to_numpy()["c"].dtype == "int64"


def test_to_pandas_gives_a_masked_integer_column() -> None:
    df = bridge.from_arrow(pa.table({"c": CASES["int64_null"]})).to_pandas()
    assert str(df["c"].dtype) == "Int64"
    assert df["c"].tolist()[2] == 2**53 + 1


def test_torch_decodes_it() -> None:
    torch = pytest.importorskip("torch")
    batch = next(iter(bridge.from_arrow(pa.table({"c": CASES["int64"]})).iter_torch_batches(batch_size=3)))
    assert batch["c"].dtype == torch.int64 and batch["c"].tolist() == [1, 1, 2]
    ds = bridge.from_arrow(pa.table({"c": CASES["int64_null"]}))
    filled = next(iter(ds.iter_torch_batches(batch_size=4, fill_nulls=0)))
    assert filled["c"].tolist() == [1, 0, 2**53 + 1, 2**53 + 1]
