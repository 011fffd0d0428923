"""Rows as Python values of values no Python type holds: a timestamp or date past year 9999, a duration past
``timedelta``'s range.  pyarrow's ``to_pylist`` raised a bare ``OverflowError`` (Ray Data's ``take_all``
too); the error now names the column and says how to read such rows.  Arrow and NumPy batches keep them."""

from __future__ import annotations

import datetime

import numpy as np
import pyarrow as pa
import pytest

import bridge
from bridge.errors import UnsupportedTypeError

FAR_US = 300_000_000_000_000_000  # year 11476 in microseconds since 1970


def _far(t: pa.DataType, value: int) -> pa.Array:
    storage = pa.int32() if t == pa.date32() else pa.int64()
    return pa.array([0, value], storage).view(t)


@pytest.mark.parametrize(("t", "value"), [
    (pa.timestamp("us"), FAR_US), (pa.timestamp("s", tz="UTC"), FAR_US // 10**6), (pa.date32(), 3_000_000),
    (pa.date64(), FAR_US // 1000), (pa.duration("s"), 10**15)])
def test_rows_of_values_past_pythons_range_raise_naming_the_column(t, value):
    ds = bridge.from_arrow(pa.table({"id": [1, 2], "far": _far(t, value)}))
    for rows in (ds.take_all, lambda: list(ds.iter_rows()), lambda: ds.take(2)):
        with pytest.raises(UnsupportedTypeError, match=r"column 'far' \(.*\) holds a value Python's") as err:
            rows()
        assert "batch_format='pyarrow'" in err.value.hint
    storage = pa.int32() if t == pa.date32() else pa.int64()
    assert ds.take_batch(batch_format="pyarrow")["far"].cast(storage).to_pylist() == [0, value]  # kept exact


def test_rows_before_the_far_value_and_numpy_batches_still_read():
    ds = bridge.from_arrow(pa.table({"t": _far(pa.timestamp("us"), FAR_US)}))
    assert ds.take(1) == [{"t": datetime.datetime(1970, 1, 1)}]
    values = ds.take_batch(batch_format="numpy")["t"]
    assert values.dtype == np.dtype("datetime64[us]") and int(values.view("int64")[1]) == FAR_US


def test_aggregate_result_past_pythons_range_names_its_column():
    ds = bridge.from_arrow(pa.table({"t": _far(pa.timestamp("us"), FAR_US)}))
    with pytest.raises(UnsupportedTypeError, match=r"column 'max\(t\)'"):
        ds.aggregate(bridge.Max("t"))


def test_rows_with_a_tensor_column_beside_a_far_value():
    t = pa.table({"t": _far(pa.timestamp("us"), FAR_US)})
    ds = bridge.from_arrow(t).add_column("x", lambda b: np.zeros((len(b["t"]), 2, 2)))
    with pytest.raises(UnsupportedTypeError, match="column 't'"):
        ds.take_all()
