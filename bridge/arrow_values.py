"""Python and NumPy values -> Arrow arrays, back to the input column's type where the values fit it.

The low floor under both batch conversions (:mod:`bridge.batch` for NumPy
batches and rows, :mod:`bridge.pandas_types` for pandas frames): an object
array of per-row values -- ndarrays of a tensor or list column, Python ints
with ``None``, Decimals, dicts -- becomes the Arrow type its input column had
(``like``) where every value fits it, else the type its values suggest.
"""

from __future__ import annotations

import datetime
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from bridge import tensor


def register_pandas_extension_types() -> None:
    """Make pandas' Arrow extension types (``pandas.interval``, ``pandas.period``) known to this process
    where pandas is loaded.  pandas registers them when it first converts such a column; a driver that
    only fetched blocks Ray workers made (``from_dask``, ``from_modin``) had not, so pyarrow read those
    columns as their storage and an Interval came back as a dict.  Called before blocks are fetched."""
    import sys

    if "pandas" in sys.modules and "pandas.core.arrays.arrow.extension_types" not in sys.modules:
        try:
            import pandas.core.arrays.arrow.extension_types  # noqa: F401 - registers on import
        except ImportError:  # pragma: no cover - another pandas layout: nothing to register
            pass


def empty_array(t: pa.DataType) -> pa.Array:
    """An array of no rows of any type, extension types included."""
    if isinstance(t, pa.BaseExtensionType):  # (pyarrow's own fixed_shape_tensor too: pa.array fails on a
        return pa.ExtensionArray.from_storage(t, empty_array(t.storage_type))  # permuted one)
    if pa.types.is_union(t):  # (pa.array builds no union; from_sparse / from_dense drop a child's "not null")
        children = [empty_array(t.field(i).type) for i in range(t.num_fields)]
        buffers = [None, pa.py_buffer(b"")] + ([pa.py_buffer(b"")] if t.mode == "dense" else [])
        return pa.Array.from_buffers(t, 0, buffers, children=children)
    return pa.array([], type=t)


def is_list_like(t: pa.DataType) -> bool:
    return pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)


_CONVERSION_ERRORS = (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OverflowError)


def fitted_array(items: list[Any], like: pa.DataType) -> pa.Array | None:
    """``pa.array(items, type=like)`` where that keeps every value, else ``None``.

    pyarrow's conversion to a given type changes values without a word: floats into an int type
    are truncated (``0.5`` -> ``0``), a struct drops the fields the type lacks, a datetime into a
    date loses its time, an int into a timestamp becomes microseconds since 1970.  So the result is
    compared with what the values say by themselves (``pa.array(items)``): kept where, cast back,
    it is those values; the caller then uses the values' own type.
    """
    try:
        inferred: pa.Array | None = pa.array(items)
    except _CONVERSION_ERRORS:
        inferred = None  # only the type reads them (ints in [2**63, 2**64) for uint64, ...)
    if inferred is not None and inferred.type == like:
        return inferred  # the common case (an int column stays int): one conversion
    try:
        typed = pa.array(items, type=like)
    except _CONVERSION_ERRORS:
        return None
    if inferred is None:
        return typed  # nothing to compare with
    t = inferred.type
    if t == typed.type or pa.types.is_null(t):
        return typed
    if not same_kind(t, like):
        return None  # floats stay floats even when whole (1.0 is not stored as the int 1), ints stay ints
    if (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)) and (
            pa.types.is_temporal(like) or pa.types.is_boolean(like) and not pa.types.is_boolean(t)):
        return None  # a number is not a time (nor a flag)
    if pa.types.is_struct(t) and pa.types.is_struct(like) and not (
            {t.field(i).name for i in range(t.num_fields)} <= {like.field(i).name for i in range(like.num_fields)}):
        return None  # fields the type lacks would be dropped
    try:
        back = typed.cast(t, safe=False)
    except _CONVERSION_ERRORS:
        return typed  # no way back to compare (a map, an extension type): as pyarrow read it
    return typed if same_values(back, inferred) else None


def _kind(t: pa.DataType) -> str | None:
    """What a value of type ``t`` is, whatever its width, unit, zone or encoding (``None``: not known).

    The input column's type is kept only for values of its kind: a row map returning ``float(x)`` for an
    int column once gave int64 blocks wherever every value was whole (and float64 blocks elsewhere)."""
    if pa.types.is_dictionary(t):
        return _kind(t.value_type)
    for kind, test in _KINDS:
        if test(t):
            return kind
    return None


def same_kind(t: pa.DataType, like: pa.DataType) -> bool:
    """Whether values of type ``t`` are values of ``like``'s kind (:func:`_kind`), at every level: the items
    of a list and the fields of a struct too (a list of floats is not a list of ints, even when every float
    is whole).  Kinds not known, and a map against its list of entries, are not told apart."""
    kind = _kind(like)
    if kind is None or pa.types.is_null(t):
        return True  # (null: no value to be of another kind -- a list whose rows are all empty is list<null>)
    if _kind(t) != kind:
        return False
    t = t.value_type if pa.types.is_dictionary(t) else t
    like = like.value_type if pa.types.is_dictionary(like) else like
    if pa.types.is_map(t) or pa.types.is_map(like):
        return True
    if kind == "list":
        return same_kind(t.value_type, like.value_type)
    if kind == "struct":
        theirs = {like.field(i).name: like.field(i).type for i in range(like.num_fields)}
        return all(same_kind(t.field(i).type, theirs[t.field(i).name])
                   for i in range(t.num_fields) if t.field(i).name in theirs)
    return True


_KINDS: tuple[tuple[str, Any], ...] = (
    ("int", pa.types.is_integer), ("float", pa.types.is_floating), ("decimal", pa.types.is_decimal),
    ("bool", pa.types.is_boolean),
    ("str", lambda t: pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)),
    ("bytes", lambda t: pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t)
     or pa.types.is_binary_view(t)),
    ("timestamp", pa.types.is_timestamp), ("date", pa.types.is_date), ("time", pa.types.is_time),
    ("duration", pa.types.is_duration),
    # A map reads back as a list of (key, value) structs: one kind with lists.
    ("list", lambda t: is_list_like(t) or pa.types.is_list_view(t) or pa.types.is_large_list_view(t)
     or pa.types.is_map(t)),
    ("struct", pa.types.is_struct),
)


def same_values(a: pa.Array | pa.ChunkedArray, b: pa.Array | pa.ChunkedArray) -> bool:
    """Whether ``a`` and ``b`` hold the same values, NaN equal to NaN -- in lists and structs too
    (``Array.equals`` says a list holding a NaN differs from itself)."""
    if isinstance(a, pa.ChunkedArray) and isinstance(b, pa.ChunkedArray) \
            and [len(c) for c in a.chunks] == [len(c) for c in b.chunks]:
        return all(same_values(x, y) for x, y in zip(a.chunks, b.chunks))  # (no copy of the whole column)
    if isinstance(a, pa.ChunkedArray):
        a = a.combine_chunks()
    if isinstance(b, pa.ChunkedArray):
        b = b.combine_chunks()
    if a.equals(b):
        return True
    if a.type != b.type or len(a) != len(b) or a.null_count != b.null_count:
        return False
    if a.null_count and not a.is_null().equals(b.is_null()):
        return False
    t = a.type
    if pa.types.is_floating(t):
        x, y = a.to_numpy(zero_copy_only=False), b.to_numpy(zero_copy_only=False)
        return bool(np.array_equal(x, y, equal_nan=True))
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        if not pc.list_value_length(a).equals(pc.list_value_length(b)):
            return False
        return same_values(a.flatten(), b.flatten())
    if pa.types.is_struct(t):
        return all(same_values(x, y) for x, y in zip(a.flatten(), b.flatten()))
    return False


def infer_array(items: list[Any]) -> pa.Array:
    """``pa.array(items)`` (pyarrow's inference from Python values), where that changes no value.

    pyarrow makes a ``date32`` column of dates and datetimes (the times dropped), a ``binary`` column
    of bytes and str (the text turned into bytes): ``pa.ArrowInvalid`` for both, which the callers report
    naming the column and the kinds.  It reads pandas ``Timestamp`` / ``Timedelta`` values as
    microseconds: where one holds nanoseconds, the column is of nanoseconds.
    """
    arr = pa.array(items)
    t = arr.type
    if not (pa.types.is_date(t) or pa.types.is_binary(t) or pa.types.is_large_binary(t)
            or pa.types.is_timestamp(t) or pa.types.is_duration(t)):
        return arr
    kinds = set(map(type, items))  # (one fast pass; the scans below only where a kind calls for them)
    if pa.types.is_date(t) and any(issubclass(k, datetime.datetime) for k in kinds):
        raise pa.ArrowInvalid("dates and datetimes in one column: a date column would drop the times")
    if (pa.types.is_binary(t) or pa.types.is_large_binary(t)) and any(issubclass(k, str) for k in kinds):
        raise pa.ArrowInvalid("bytes and str in one column: a binary column would hold the text as bytes")
    wide = _nanosecond_type(t, items, kinds)
    if wide is None:
        return arr
    try:
        return pa.array(items, wide)
    except (pa.ArrowInvalid, OverflowError):
        raise pa.ArrowInvalid("a value holds nanoseconds and another lies outside the years 1677-2262, which "
                              "nanoseconds reach: no one Arrow type holds both exactly") from None


def _nanosecond_type(t: pa.DataType, values: Any, kinds: set[type] | None = None) -> pa.DataType | None:
    """The nanosecond type of an inferred timestamp or duration type ``t`` of microseconds where one of the
    Python ``values`` (pandas ``Timestamp`` / ``Timedelta``) holds nanoseconds, else ``None``."""
    if not (pa.types.is_timestamp(t) or pa.types.is_duration(t)) or t.unit == "ns":
        return None
    if kinds is not None and not any(k.__name__ in ("Timestamp", "Timedelta") for k in kinds):
        return None  # (datetime and timedelta hold microseconds at most)
    if not any(getattr(v, "nanosecond", 0) or getattr(v, "nanoseconds", 0) for v in values if v is not None):
        return None
    return pa.timestamp("ns", t.tz) if pa.types.is_timestamp(t) else pa.duration("ns")


#: Ray Data's extension type for Python objects Arrow has no type for (each value pickled).
PICKLED_OBJECTS = "ray.data.arrow_pickled_object"


def is_pickled_objects(t: pa.DataType) -> bool:
    """Whether ``t`` is Ray Data's column of pickled Python objects (``from_ray_data`` of ``complex``, classes)."""
    return isinstance(t, pa.BaseExtensionType) and t.extension_name == PICKLED_OBJECTS


def object_column(values: Any, like: pa.DataType | None = None) -> pa.Array:
    items = list(values)
    if not items and like is not None:
        return empty_array(like)
    if like is not None and is_pickled_objects(like):  # the objects a Ray Data column held, as it held them
        from ray.data._internal.object_extensions.arrow import ArrowPythonObjectArray

        return ArrowPythonObjectArray.from_objects(items)
    first = next((v for v in items if v is not None), None)
    if like is not None and isinstance(first, np.ndarray):
        # Rows of an input list or tensor column: back to that very type where the rows fit it.
        if tensor.is_fixed_tensor(like):
            fixed = tensor.fixed_tensor_array_like(items, like)
            if fixed is not None:
                return fixed
        elif is_list_like(like) and all(v is None or (isinstance(v, np.ndarray) and v.ndim == 1) for v in items):
            fitted = fitted_array([None if v is None else v.tolist() for v in items], like)
            if fitted is not None:
                return fitted
    if like is not None and not tensor.is_tensor(like) and not isinstance(first, np.ndarray):
        # Python objects (ints with None, Decimals, dicts...): the input column's type says what they
        # were, where it holds the values unchanged.
        fitted = fitted_array(items, like)
        if fitted is not None:
            return fitted
    if isinstance(first, np.ndarray):
        arrays = [v for v in items if v is not None]
        if all(a.ndim == 1 for a in arrays) and first.ndim == 1:
            if first.dtype.kind in "Mm" and all(a.dtype == first.dtype for a in arrays):
                # (pyarrow's inference made lists of datetime64[ns] arrays lists of microseconds)
                try:
                    return pa.array(items, pa.list_(pa.from_numpy_dtype(first.dtype)))
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError, TypeError):
                    pass
            lists = pa.array([None if v is None else v for v in items])
            if first.dtype == object and pa.types.is_list(lists.type):  # (pandas Timestamps: see infer_array)
                wide = _nanosecond_type(lists.type.value_type, (x for a in arrays for x in a))
                if wide is not None:
                    return pa.array([None if v is None else v for v in items], pa.list_(wide))
            return lists
        if len(arrays) == len(items) and all(a.shape == first.shape for a in arrays):
            stacked = np.stack(arrays)
            if tensor.is_tensor_dtype(stacked.dtype):  # (strings, times: each row its own, below)
                return tensor.fixed_tensor_array(stacked)
        return tensor.variable_tensor_array(items)
    try:
        return infer_array(items)
    except (OverflowError, pa.ArrowInvalid):
        if all(v is None or (isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) and v >= 0)
               for v in items):
            return pa.array(items, pa.uint64())  # ints past int64 with None (a uint64 column's nulls in NumPy)
        raise


def refuse_unions(schema: pa.Schema, target: str) -> None:
    """Raise :class:`~bridge.errors.UnsupportedTypeError` naming the first column of ``schema`` that is or holds a
    union (NumPy and pandas have no such type: pyarrow's conversion fails without naming it)."""
    for field in schema:
        if has_union(field.type):
            from bridge.errors import UnsupportedTypeError

            msg = f"{target} has no union type: column {field.name!r} is {field.type}"
            raise UnsupportedTypeError(msg, UNION_HINT)


#: What to do with a union column where the target has no union type.
UNION_HINT = ("use batch_format='pyarrow' (Arrow holds unions), or drop the column (ds.drop_columns([...])) or "
              "split it into one column per member in a batch_format='pyarrow' map_batches step first")


def has_union(t: pa.DataType) -> bool:
    """Whether ``t`` is a union or holds one (in a list, struct, map or extension storage)."""
    if pa.types.is_union(t):
        return True
    if isinstance(t, pa.BaseExtensionType):
        return has_union(t.storage_type)
    return any(has_union(t.field(i).type) for i in range(t.num_fields))
