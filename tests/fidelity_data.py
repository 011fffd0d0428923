"""The fidelity matrix's data: >= 30 Arrow types, each plain, with nulls and empty.

Every column holds values at the edges of its type (integer limits, NaN and
+-inf, 2**53 + 1, nanoseconds, inner nulls).  ``table(variant)`` gives one
table per variant with one column per type, so a path runs once per variant
and every column is one cell of the matrix (see tests/test_fidelity.py).
"""

from __future__ import annotations

import datetime as dt
import decimal

import numpy as np
import pyarrow as pa

from bridge import tensor

VARIANTS = ("plain", "nulls", "empty")


def _ints(t: pa.DataType) -> list:
    info = np.iinfo(t.to_pandas_dtype())
    return [int(info.min), 0, 1, int(info.max)]


def _column_values() -> dict[str, tuple[pa.DataType, list]]:
    """name -> (type, four non-null values)."""
    nan, inf = float("nan"), float("inf")
    ts = [dt.datetime(1970, 1, 1), dt.datetime(2024, 2, 29, 12, 30, 15, 123456),
          dt.datetime(1900, 1, 1), dt.datetime(2262, 4, 11)]
    cols: dict[str, tuple[pa.DataType, list]] = {}
    for t in (pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64()):
        cols[str(t)] = (t, _ints(t))
    cols["int64_2p53"] = (pa.int64(), [2**53 + 1, -(2**53) - 1, 2**62 + 3, 7])
    cols["float16"] = (pa.float16(), [np.float16(1.5), np.float16(nan), np.float16(inf), np.float16(-inf)])
    cols["float32"] = (pa.float32(), [1.5, nan, inf, -inf])
    cols["float64"] = (pa.float64(), [0.1, nan, inf, -inf])
    cols["bool"] = (pa.bool_(), [True, False, True, False])
    cols["string"] = (pa.string(), ["007", "", "ünï", "a\nb"])
    cols["large_string"] = (pa.large_string(), ["x", "", "007", "z"])
    cols["binary"] = (pa.binary(), [b"\x00\xff", b"", b"abc", b"\n"])
    cols["decimal128"] = (pa.decimal128(20, 4), [decimal.Decimal("1234567890123456.7891"), decimal.Decimal("0"),
                                                  decimal.Decimal("-1.5"), decimal.Decimal("0.0001")])
    cols["decimal256"] = (pa.decimal256(40, 2), [decimal.Decimal("12345678901234567890123456789012345678.91"),
                                                 decimal.Decimal("0"), decimal.Decimal("-1.50"),
                                                 decimal.Decimal("0.01")])
    cols["date32"] = (pa.date32(), [dt.date(1970, 1, 1), dt.date(2024, 2, 29), dt.date(1, 1, 1), dt.date(9999, 12, 31)])
    for unit in ("s", "ms", "us"):
        cols[f"timestamp_{unit}"] = (pa.timestamp(unit), ts)
    cols["timestamp_ns"] = (pa.timestamp("ns"), [0, 1, 1_700_000_000_123_456_789, -1])
    cols["timestamp_us_utc"] = (pa.timestamp("us", "UTC"), [t.replace(tzinfo=dt.timezone.utc) for t in ts])
    cols["timestamp_us_ny"] = (pa.timestamp("us", "America/New_York"), [t.replace(tzinfo=dt.timezone.utc) for t in ts])
    cols["duration_us"] = (pa.duration("us"), [dt.timedelta(0), dt.timedelta(days=3, microseconds=7),
                                               dt.timedelta(seconds=-1), dt.timedelta(days=10_000)])
    cols["time64_ns"] = (pa.time64("ns"), [0, 1, 86_399_999_999_999, 12_345_678_901])
    cols["list_int64"] = (pa.list_(pa.int64()), [[1, 2], [], [2**53 + 1], [3, 4, 5]])
    cols["large_list_float64"] = (pa.large_list(pa.float64()), [[0.5], [nan], [], [inf, 1.0]])
    cols["fixed_size_list_int32"] = (pa.list_(pa.int32(), 2), [[1, 2], [3, 4], [-1, 0], [2**31 - 1, 5]])
    cols["struct"] = (pa.struct([("a", pa.int64()), ("b", pa.string())]),
                      [{"a": 1, "b": "x"}, {"a": 2**53 + 1, "b": ""}, {"a": 0, "b": "z"}, {"a": -1, "b": "w"}])
    cols["map"] = (pa.map_(pa.string(), pa.int64()), [[("k", 1)], [], [("a", 2), ("b", 3)], [("z", 2**62)]])
    cols["dictionary"] = (pa.dictionary(pa.int32(), pa.string()), ["b", "a", "b", "c"])  # dictionary [b, a, c]: not sorted
    cols["list_struct"] = (pa.list_(pa.struct([("x", pa.int32())])), [[{"x": 1}], [], [{"x": 2}, {"x": 3}], [{"x": 4}]])
    cols["dictionary_int64"] = (pa.dictionary(pa.int32(), pa.int64()), [2**53 + 1, 0, 2**53 + 1, -(2**62)])
    cols["list_list_int64"] = (pa.list_(pa.list_(pa.int64())), [[[1, 2**53 + 1]], [], [[], [3]], [[4], [5, 6]]])
    return cols


#: Columns whose null variant puts the null inside the value (a list's element) as well as a null row.
_INNER_NULL = {"list_int64": [1, None], "large_list_float64": [None, 1.0], "struct": {"a": None, "b": "q"},
               # two levels down: NumPy batches once read past the first level's nulls
               "list_struct": [{"x": None}, {"x": 2**31 - 1}], "list_list_int64": [[None, 2**53 + 1]]}


def _fixed_tensor(rows: int, with_null: bool) -> pa.Array:
    arr = np.arange(rows * 6, dtype=np.float32).reshape(rows, 2, 3)
    storage = pa.FixedSizeListArray.from_arrays(pa.array(arr.reshape(-1)), 6,
                                                mask=pa.array([with_null and i == 1 for i in range(rows)], pa.bool_()))
    return pa.ExtensionArray.from_storage(pa.fixed_shape_tensor(pa.float32(), [2, 3]), storage)


def _variable_tensor(rows: int, with_null: bool) -> pa.Array:
    items: list = [np.arange(i + 1, dtype=np.int16).reshape(1, i + 1) for i in range(rows)]
    if with_null and rows > 1:
        items[1] = None
    if not rows:
        return pa.ExtensionArray.from_storage(
            tensor.VariableShapeTensorType(pa.int16(), 2),
            pa.array([], type=tensor.VariableShapeTensorType(pa.int16(), 2).storage_type))
    return tensor.variable_tensor_array(items)


def _bool_tensor(rows: int, with_null: bool) -> pa.Array:
    arr = (np.arange(rows * 4).reshape(rows, 2, 2) % 3) == 0
    storage = pa.FixedSizeListArray.from_arrays(pa.array(arr.reshape(-1)), 4,
                                                mask=pa.array([with_null and i == 1 for i in range(rows)], pa.bool_()))
    return pa.ExtensionArray.from_storage(pa.fixed_shape_tensor(pa.bool_(), [2, 2]), storage)


TYPE_NAMES = [*_column_values(), "fixed_tensor", "variable_tensor", "bool_tensor"]


def table(variant: str) -> pa.Table:
    """One column per type; ``variant`` is ``plain`` (4 rows), ``nulls`` (5 rows, one null each) or ``empty``."""
    arrays, names = [], []
    for name, (t, values) in _column_values().items():
        vals = list(values)
        if variant == "nulls":
            vals = [*vals, None]
            if name in _INNER_NULL:
                vals[0] = _INNER_NULL[name]
        elif variant == "empty":
            vals = []
        arrays.append(pa.array(vals, type=t))
        names.append(name)
    rows = {"plain": 4, "nulls": 5, "empty": 0}[variant]
    arrays.append(_fixed_tensor(rows, variant == "nulls"))
    names.append("fixed_tensor")
    arrays.append(_variable_tensor(rows, variant == "nulls"))
    names.append("variable_tensor")
    arrays.append(_bool_tensor(rows, variant == "nulls"))
    names.append("bool_tensor")
    return pa.Table.from_arrays(arrays, names=names)
