"""Batch formats: what user functions see, and how their results become blocks.

Formats:
  * ``"numpy"`` (default): ``dict[str, np.ndarray]``.  Numeric columns without
    nulls are zero-copy views of the block.  Tensor columns are ``(rows, *shape)``
    arrays.  Columns with nulls become object arrays holding ``None`` so that no
    null turns into a number (ints never become floats).
  * ``"pandas"``: a writable ``pandas.DataFrame`` (pandas imported only then) whose
    values are exact: integers and bools with nulls get masked dtypes, floats
    with nulls or NaN ``Float64``, nested columns ``ArrowDtype``, tensors one
    ndarray per row (:mod:`bridge.pandas_types`).
  * ``"pyarrow"``: the ``pyarrow.Table`` itself.

Going back (:func:`to_block`), a dict of arrays, a DataFrame, a Table or a
RecordBatch is accepted.  Rules, written here because users depend on them:
  * a 1-d array of a NumPy dtype -> the matching Arrow type;
  * an n-d array (n >= 2) -> ``arrow.fixed_shape_tensor`` with shape ``arr.shape[1:]``;
  * an object array of equal-shape ndarrays of rank >= 2 -> fixed-shape tensor;
    of unequal shapes -> ``raybridge.variable_shape_tensor``; of 1-d arrays -> a list column;
  * when the input block had a column of the same name whose type NumPy
    cannot hold (a timestamp with a time zone, a dictionary, a decimal, a
    large string), the value is cast back to that type.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from bridge import tensor
from bridge.arrow_values import (
    UNION_HINT,
    empty_array,
    fitted_array,
    has_union,
    infer_array,
    is_list_like,
    is_pickled_objects,
    object_column,
    refuse_unions,
    same_kind,
    same_values,
)
from bridge.block import Block, normalize_types, table_without_columns
from bridge.text_objects import is_text, text_objects

if TYPE_CHECKING:
    import pandas

BATCH_FORMATS = ("numpy", "pandas", "pyarrow")
_ALIASES = {"np": "numpy", "default": "numpy", "pd": "pandas", "arrow": "pyarrow", "pa": "pyarrow"}


def normalize_format(batch_format: str | None) -> str:
    """The canonical name of a batch format; ``None`` is the blocks' native format, Arrow (as in Ray Data)."""
    if batch_format is None:
        return "pyarrow"
    fmt = _ALIASES.get(batch_format, batch_format)
    if fmt not in BATCH_FORMATS:
        import difflib

        from bridge.errors import BridgeValueError

        msg = f"unknown batch_format {batch_format!r}"
        hint = f"use one of {', '.join(BATCH_FORMATS)}"
        if batch_format in ("torch", "tf", "tensorflow"):
            hint += ("; for torch tensors iterate with iter_torch_batches (map_batches takes batch_format='torch')"
                     if batch_format == "torch" else "; for tf tensors iterate with iter_tf_batches or to_tf")
        elif isinstance(batch_format, str):
            close = difflib.get_close_matches(batch_format.lower(), [*BATCH_FORMATS, *_ALIASES], n=1, cutoff=0.6)
            if close:
                hint = f"did you mean batch_format={_ALIASES.get(close[0], close[0])!r}? ({hint})"
        raise BridgeValueError(msg, hint)
    return fmt


# ---------------------------------------------------------------- block -> batch


def _numeric_view(arr: pa.Array) -> np.ndarray | None:
    """A zero-copy, read-only view of a numeric array without nulls (no pandas import)."""
    t = arr.type
    if arr.null_count or not (pa.types.is_integer(t) or pa.types.is_floating(t)):
        return None
    kind = "f" if pa.types.is_floating(t) else ("u" if pa.types.is_unsigned_integer(t) else "i")
    dtype = np.dtype(f"{kind}{t.bit_width // 8}")
    buf = arr.buffers()[1]
    if buf is None:
        return np.empty(0, dtype=dtype)
    return np.frombuffer(buf, dtype=dtype, count=len(arr), offset=arr.offset * dtype.itemsize)


def _dictionary_text_objects(col: pa.ChunkedArray | pa.Array) -> np.ndarray | None:
    """A dictionary column of text -> an object ndarray holding one object per dictionary value, taken by
    the indices (``None`` for a null row): what decoding it and converting the strings gives, without
    decoding.  ``None`` where a chunk's dictionary is longer than the chunk (a slice of a large
    dictionary: converting all of it would cost more than the rows) or there are no chunks."""
    chunks = col.chunks if isinstance(col, pa.ChunkedArray) else [col]
    if not chunks or any(len(c.dictionary) > len(c) for c in chunks):
        return None
    out = []
    for chunk in chunks:
        values = text_objects(chunk.dictionary)
        indices = chunk.indices
        if not indices.null_count:
            out.append(values.take(indices.to_numpy(zero_copy_only=False)))
            continue
        # (Not a fill with one past the dictionary's end: a dictionary as long as its index type counts
        # has no such index.)
        if not len(values):  # every row null
            out.append(np.full(len(indices), None, dtype=object))
            continue
        rows = values.take(indices.fill_null(0).to_numpy(zero_copy_only=False))
        rows[indices.is_null().to_numpy(zero_copy_only=False)] = None
        out.append(rows)
    return out[0] if len(out) == 1 else np.concatenate(out)


def column_to_numpy(col: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """One Arrow column -> one ndarray, zero-copy where Arrow allows."""
    if tensor.is_tensor(col.type):
        return tensor.tensor_to_numpy(col)
    if is_pickled_objects(col.type):  # (its storage is the pickles' bytes, which NumPy batches handed out)
        objects = np.empty(len(col), dtype=object)
        objects[:] = col.to_pylist()
        return objects
    if has_union(col.type):
        from bridge.errors import UnsupportedTypeError

        raise UnsupportedTypeError(f"NumPy has no union type: a column is {col.type}", UNION_HINT)
    if pa.types.is_run_end_encoded(col.type):
        # Decoded first, as a dictionary below: pyarrow's to_numpy of one holding a null gives floats.
        col = pc.run_end_decode(col)
    if pa.types.is_dictionary(col.type):
        if is_text(col.type.value_type):
            shared = _dictionary_text_objects(col)
            if shared is not None:
                return shared
        # Decoded first, so the values follow their own type's rules below (NumPy has no dictionary;
        # pyarrow's to_numpy of a dictionary of ints with nulls would give floats).
        col = pc.cast(col, col.type.value_type)
    if isinstance(col, pa.ChunkedArray):
        if col.num_chunks == 1:
            col = col.chunk(0)
        elif col.num_chunks == 0:
            from bridge.arrow_values import empty_array

            col = empty_array(col.type)
    if isinstance(col, pa.Array):
        view = _numeric_view(col)
        if view is not None:
            return view
    elif not col.null_count and (pa.types.is_integer(col.type) or pa.types.is_floating(col.type)):
        return np.concatenate([_numeric_view(c) for c in col.chunks])
    t = col.type
    if col.null_count and not pa.types.is_string(t) and not pa.types.is_large_string(t):
        if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t):
            values = col.fill_null(False if pa.types.is_boolean(t) else 0).to_numpy(zero_copy_only=False)
            out = values.astype(object)
            out[col.is_null().to_numpy(zero_copy_only=False)] = None
            return out
    if pa.types.is_time64(t) and t.unit == "ns":
        # datetime.time has no nanoseconds: the time since midnight as timedelta64[ns] instead.
        ints = pc.cast(col, pa.int64()).to_numpy(zero_copy_only=False) if not col.null_count else None
        if ints is not None:
            return ints.view("m8[ns]")
        values = pc.cast(col, pa.int64()).fill_null(0).to_numpy(zero_copy_only=False).view("m8[ns]").copy()
        values[col.is_null().to_numpy(zero_copy_only=False)] = np.timedelta64("NaT")
        return values
    if pa.types.is_struct(t) or pa.types.is_map(t):
        out = np.empty(len(col), dtype=object)
        out[:] = col.to_pylist()  # exact Python values (NumPy would make ints with nulls floats)
        return out
    if pa.types.is_fixed_size_list(t) and col.null_count and not inner_nulls(col):
        # The slots under a null row are nulls too: NumPy turned the whole child into floats for them
        # (int64 past 2**53 changed, ints came back as floats). The other rows' values, in their type.
        inner = column_to_numpy(pc.list_flatten(col))
        size = t.list_size
        out = np.empty(len(col), dtype=object)
        for j, i in enumerate(np.flatnonzero(col.is_valid().to_numpy(zero_copy_only=False))):
            out[i] = inner[j * size:(j + 1) * size]
        return out
    if is_list_like(t) and inner_nulls(col):
        # NumPy would turn an inner null of list<int> into NaN (and the ints into floats): rows
        # become object arrays holding None instead, so nothing changes on the way back.
        out = np.empty(len(col), dtype=object)
        for i, row in enumerate(col.to_pylist()):
            out[i] = None if row is None else _object_row(row)
        return out
    if is_text(t):
        return text_objects(col)
    return col.to_numpy(zero_copy_only=False)


def _object_row(values: list[Any]) -> np.ndarray:
    """A 1-D object array of ``values`` as they are (``np.array`` would make nested lists a 2-D array)."""
    out = np.empty(len(values), dtype=object)
    for j, v in enumerate(values):
        out[j] = v
    return out


def inner_nulls(col: pa.ChunkedArray | pa.Array) -> bool:
    """Whether a null lies anywhere below the rows of a list-like column, at any depth (structs' fields too)."""
    chunks = col.chunks if isinstance(col, pa.ChunkedArray) else [col]
    return any(_nulls_below(c) for c in chunks)


def _nulls_below(arr: pa.Array) -> bool:
    t = arr.type
    if is_list_like(t) or pa.types.is_map(t):
        inner = arr.flatten()  # a map's entries: a struct of key and item
        return bool(inner.null_count) or _nulls_below(inner)
    if pa.types.is_struct(t):
        return any(f.null_count or _nulls_below(f) for f in arr.flatten())
    if pa.types.is_dictionary(t):
        return bool(arr.dictionary.null_count) or _nulls_below(arr.dictionary)
    return False


def to_numpy_batch(block: Block) -> dict[str, np.ndarray]:
    refuse_unions(block.schema, "NumPy")
    return {name: column_to_numpy(block.column(i)) for i, name in enumerate(block.column_names)}


def to_pandas_batch(block: Block) -> pandas.DataFrame:
    """A block as a writable DataFrame whose values are exact (rules: :mod:`bridge.pandas_types`)."""
    from bridge.pandas_types import block_to_pandas

    return block_to_pandas(block)


def to_batch(block: Block, batch_format: str) -> Any:
    """A block in the requested format (``numpy``, ``pandas`` or ``pyarrow``)."""
    if batch_format == "pyarrow":
        return block
    if batch_format == "pandas":
        return to_pandas_batch(block)
    return to_numpy_batch(block)


# ---------------------------------------------------------------- batch -> block


class BatchTypeError(TypeError):
    """A user function returned something that is not a batch (wrapped by the caller).

    ``hint``: the fix, where it is particular to the value (the caller's own hint otherwise).
    """

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message if hint is None else f"{message}; {hint}")
        self.what, self.hint = message, hint

    def __reduce__(self) -> Any:
        return (type(self), (self.what, self.hint))  # raised in Ray tasks: keep both parts


def _ndarray_column(arr: np.ndarray, like: pa.DataType | None = None) -> pa.Array:
    arr = _arrow_ready(arr)
    if isinstance(arr, np.ma.MaskedArray) and arr.dtype.names is None:
        if arr.ndim == 1 or not np.ma.getmask(arr).any():
            # A masked element is a null (pa.array reads the mask); a tensor with none masked is its data.
            return pa.array(arr) if arr.ndim == 1 else tensor.fixed_tensor_array(np.ma.getdata(arr))
        masked = int(np.ma.getmaskarray(arr).sum())
        raise BatchTypeError(f"an n-d masked array with {masked} masked element(s) cannot become a tensor column "
                             "(a tensor element cannot be null): fill them first, e.g. arr.filled(0)")
    if arr.ndim == 0:
        raise BatchTypeError(f"a 0-d array ({arr.dtype}, one value) is not a column of rows",
                             "make it one: np.atleast_1d(x) for one row, or np.full(n, x) for n rows")
    if arr.dtype.names is not None:
        return _struct_column(arr)
    if arr.ndim >= 2:
        if tensor.is_tensor_dtype(arr.dtype):
            return tensor.fixed_tensor_array(arr)
        # Strings, times, objects: Arrow's tensor holds numbers only. One value per row as it is: a list
        # column of the row's values (2-d), a variable-shape tensor of each row (n-d; each row keeps its shape).
        if arr.ndim == 2 and arr.dtype != object:
            width = arr.shape[1]
            offsets = pa.array(np.arange(0, arr.shape[0] * width + 1, width or 1)[:arr.shape[0] + 1]
                               if width else np.zeros(arr.shape[0] + 1, dtype=np.int64), pa.int32())
            return pa.ListArray.from_arrays(offsets, _ndarray_column(np.ascontiguousarray(arr).reshape(-1)))
        return object_column(list(arr), like)
    if arr.dtype == object:
        return object_column(arr, like)
    if arr.dtype.kind in "US":
        return pa.array(arr.tolist(), type=pa.string() if arr.dtype.kind == "U" else pa.binary())
    values = tensor.numeric_array(arr)
    return pa.array(arr) if values is None else values


def _struct_column(arr: np.ndarray) -> pa.Array:
    """A 1-d structured array -> a struct column, one field per member, each by the rules of its dtype."""
    if arr.ndim != 1:
        raise BatchTypeError(f"a {arr.ndim}-d structured array ({arr.dtype}) has no Arrow type",
                             "give one row per record: arr.reshape(-1), or a column per field ({n: arr[n] ...})")
    names = list(arr.dtype.names or ())
    if not names:
        raise BatchTypeError(f"a structured array without fields ({arr.dtype}) has no values to hold",
                             "give it at least one field, or pass a column of the values themselves")
    if isinstance(arr, np.ma.MaskedArray):
        mask = np.ma.getmaskarray(arr)
        if not any(bool(mask[n].any()) for n in names):
            return _struct_column(np.ma.getdata(arr))
        raise BatchTypeError(f"a masked structured array ({arr.dtype}) cannot become a struct column as it is",
                             "fill it first (arr.filled()), or pass one masked column per field ({n: arr[n] ...})")
    children = [_ndarray_column(np.ascontiguousarray(arr[n])) for n in names]
    return pa.StructArray.from_arrays(children, names=names)


#: NumPy datetime64 / timedelta64 units Arrow has (datetime64[D] becomes ``date32``).
_ARROW_UNITS = {"M": frozenset({"s", "ms", "us", "ns", "D", "generic"}),
                "m": frozenset({"s", "ms", "us", "ns", "generic"})}


def _arrow_ready(arr: np.ndarray) -> np.ndarray:
    """``arr`` in a dtype Arrow reads as it is: same values, or a refusal that says what to do.

    Big-endian data is byte-swapped; a multiple unit (``datetime64[10s]``, which pyarrow read as
    ``[s]``: 10 s apart became 1 s apart) becomes its base unit.  Complex numbers and the units Arrow
    lacks (``datetime64[M]``: Arrow said only "Unsupported") are refused.
    """
    dtype = arr.dtype
    if not dtype.isnative:
        arr = arr.astype(dtype.newbyteorder("="))
    if dtype.kind == "c":
        raise BatchTypeError(f"a {dtype} (complex) array has no Arrow type",
                             "store its parts as two columns, e.g. {'z_re': z.real, 'z_im': z.imag}")
    if dtype.kind in "mM":
        unit, count = np.datetime_data(dtype)
        kind = "datetime64" if dtype.kind == "M" else "timedelta64"
        if unit in _ARROW_UNITS[dtype.kind]:
            return arr if count == 1 else arr.astype(f"{kind}[{unit}]")
        to = "datetime64[D]" if kind == "datetime64" and unit in ("Y", "M", "W") else f"{kind}[s]"
        raise BatchTypeError(f"a {dtype} array: Arrow has no such unit (it has s, ms, us, ns"
                             f"{' and D' if kind == 'datetime64' else ''})", f"convert it first, e.g. arr.astype('{to}')")
    return arr


def _to_arrow_column(name: str, value: Any, like: pa.DataType | None = None) -> pa.Array | pa.ChunkedArray:
    if isinstance(value, (pa.Array, pa.ChunkedArray)):
        return value
    if isinstance(value, np.ndarray):
        return _ndarray_column(value, like)
    if hasattr(value, "__array__") and not isinstance(value, (list, tuple)):
        # torch / tf tensors and pandas Series land here.
        if type(value).__module__.startswith("pandas"):
            return pa.Array.from_pandas(value)
        if hasattr(value, "detach"):
            return _ndarray_column(_torch_to_numpy(name, value))
        return _ndarray_column(np.asarray(value))
    if isinstance(value, (list, tuple)):
        if _is_torch_tensor(next((v for v in value if v is not None), None)):
            # A list column in a torch batch is a list of 1-d tensors, one per row (None for a null row):
            # as ndarrays its rows go back to the input column's type like a NumPy batch's rows do.
            value = [_torch_row(name, v) if _is_torch_tensor(v) else v for v in value]
        return object_column(value, like)
    msg = f"column {name!r} has a value of type {type(value).__name__}, not an array"
    raise BatchTypeError(msg)


def _is_torch_tensor(value: Any) -> bool:
    return hasattr(value, "detach") and hasattr(value, "__array__")


def _torch_to_numpy(name: str, value: Any, *, row: bool = False) -> Any:
    """A torch tensor's values as an ndarray, on the host.

    A dtype NumPy has no counterpart for (``bfloat16``, the ``float8`` types) is refused naming the
    column: Arrow has no such type either, and nothing is converted without a word.
    """
    value = value.detach().cpu()
    try:
        arr = np.asarray(value)
    except TypeError as err:
        dtype = str(value.dtype)
        floating = bool(getattr(value, "is_floating_point", lambda: False)())
        to = ".float()" if floating else ".to(torch.int64)"
        fix = f"[t{to} for t in batch[{name!r}]]" if row else f"batch[{name!r}]{to}"
        if floating:
            fix += f" (or .to(torch.float32): every {dtype.removeprefix('torch.')} value is a float32 value)"
        what = f"column {name!r} {'holds' if row else 'is'} a {dtype} tensor, a type Arrow (and NumPy) does not have"
        raise BatchTypeError(what, f"convert it in the function: {fix}") from err
    return arr


def _torch_row(name: str, value: Any) -> Any:
    """One row of a list of tensors: its ndarray (a 0-d tensor: its NumPy scalar)."""
    arr = _torch_to_numpy(name, value, row=True)
    return arr[()] if arr.ndim == 0 else arr


def _restore_type(col: pa.Array | pa.ChunkedArray, like: pa.DataType) -> pa.Array | pa.ChunkedArray:
    """Cast back to the input's type where NumPy could not carry it."""
    t = col.type
    if t == like:
        return col
    if len(col) == 0 and not tensor.is_tensor(t):
        return empty_array(like)  # nothing to convert: an empty column keeps the input's type
    if pa.types.is_time(like) and pa.types.is_duration(t) and like.unit == t.unit:
        # time64[ns] travels as timedelta64[ns] since midnight (datetime.time has no nanoseconds).
        return pc.cast(pc.cast(col, pa.int64()), like)
    if isinstance(like, pa.BaseExtensionType) and not isinstance(t, pa.BaseExtensionType) \
            and not tensor.is_tensor(like):
        # An extension type NumPy and pandas hold as its storage (arrow.json as text, arrow.bool8 as bool or
        # int8, floats of 0 / 1 where pandas met a null): wrapped again -- only from what its storage turns
        # into on the way out, so that a column the function changed (ints times 10, text into a bool8
        # column's place) stays what it returned.
        if not _holds_storage_of(col, like.storage_type):
            return col
        storage = col
        if storage.type != like.storage_type:
            try:
                storage = pc.cast(storage, like.storage_type, safe=True)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
                return col
        if isinstance(storage, pa.ChunkedArray):
            return pa.chunked_array([pa.ExtensionArray.from_storage(like, c) for c in storage.chunks], like)
        return pa.ExtensionArray.from_storage(like, storage)
    if pa.types.is_run_end_encoded(like) and not pa.types.is_run_end_encoded(t):
        # NumPy and pandas hold its values: encoded again (the values' own restoration first).
        values = _restore_type(col, like.value_type)
        if values.type != like.value_type:
            return col
        return pc.run_end_encode(values, run_end_type=like.run_end_type)
    restorable = (
        (pa.types.is_timestamp(like) and pa.types.is_timestamp(t) and like.tz and not t.tz)
        or (pa.types.is_dictionary(like) and not pa.types.is_dictionary(t)
            and (like.value_type == t or (_stringy(like.value_type) and _stringy(t))))
        or (pa.types.is_dictionary(like) and pa.types.is_dictionary(t) and (
            like.value_type == t.value_type or (_stringy(like.value_type) and _stringy(t.value_type))
            or (_binary(like.value_type) and _binary(t.value_type))))
        or (pa.types.is_fixed_size_binary(like) and pa.types.is_binary(t))
        or (pa.types.is_decimal(like) and (pa.types.is_decimal(t) or pa.types.is_null(t)))
        or (pa.types.is_large_string(like) and pa.types.is_string(t))
        or (pa.types.is_string(like) and pa.types.is_large_string(t))
        or (pa.types.is_large_binary(like) and pa.types.is_binary(t))
        or (pa.types.is_date(like) and (pa.types.is_timestamp(t) or pa.types.is_date(t)))
        or (pa.types.is_time(like) and pa.types.is_time(t))
        or (pa.types.is_null(t))
        or (pa.types.is_list(like) and pa.types.is_list(t))
        or (pa.types.is_large_list(like) and (pa.types.is_list(t) or pa.types.is_large_list(t)))
    )
    if not restorable:
        return col
    try:
        if pa.types.is_timestamp(like) and pa.types.is_timestamp(t):
            # NumPy held UTC instants without the zone: reattach the zone.
            return pc.cast(col, pa.timestamp(t.unit, like.tz)).cast(like)
        if pa.types.is_dictionary(like):
            return pc.cast(col, like.value_type).dictionary_encode().cast(like)
        if is_list_like(like) and not same_kind(t, like):
            return col  # items the function made of another kind (floats from ints): theirs
        out = pc.cast(col, like, safe=True)
        if pa.types.is_date(like) and pa.types.is_timestamp(t) and not pc.cast(out, t).equals(col):
            return col  # times of day (Arrow's cast to a date drops them even when "safe")
        if is_list_like(like) and not same_values(pc.cast(out, t), col):
            return col  # items a "safe" cast still changes (float64 1.1 into a list of float32)
        return out
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, pa.ArrowCapacityError):
        return col


def _holds_storage_of(col: pa.Array | pa.ChunkedArray, storage: pa.DataType) -> bool:
    """Whether ``col`` is what NumPy or pandas make of an extension column of ``storage`` on the way out."""
    t = col.type
    if t == storage:
        return True
    if _stringy(storage):
        return _stringy(t)
    if _binary(storage) or pa.types.is_fixed_size_binary(storage):
        return _binary(t)
    if storage == pa.int8():  # (arrow.bool8: NumPy gives bools, pandas int8, or floats where a row is null)
        if pa.types.is_boolean(t):
            return True
        if pa.types.is_floating(t) and col.null_count:
            return bool(pc.all(pc.is_in(pc.drop_null(col), value_set=pa.array([0.0, 1.0], t))).as_py())
    return False


def _stringy(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t)


def _binary(t: pa.DataType) -> bool:
    return pa.types.is_binary(t) or pa.types.is_large_binary(t)


def _named_column(name: str, value: Any, like: pa.DataType | None) -> pa.Array | pa.ChunkedArray:
    """:func:`_to_arrow_column`, with Arrow's refusal turned into one that names the column and its values' types."""
    try:
        return _to_arrow_column(name, value, like)
    except (pa.ArrowTypeError, pa.ArrowInvalid) as err:
        na = _pandas_na()
        if na is not None and isinstance(value, (list, tuple, np.ndarray)) and value.__class__ is not str:
            # pandas' missing value inside a row (``list(df["x"])`` of an Int64 column holds ``pd.NA``): pyarrow
            # takes it at the top level only. It is a null, at any depth.
            cleaned = [_na_to_none(v, na) for v in value]
            if any(a is not b for a, b in zip(cleaned, value)):
                try:
                    return _to_arrow_column(name, cleaned, like)
                except (pa.ArrowTypeError, pa.ArrowInvalid):
                    pass
        try:
            kinds = sorted({type(v).__name__ for v in list(value[:10_000])})
        except Exception:  # noqa: BLE001 - only for the message: a value that cannot be sliced says nothing more
            kinds = []
        found = f" (its values are of types {', '.join(kinds)})" if len(kinds) > 1 else ""
        msg = (f"column {name!r} cannot become one Arrow column{found}: {err}. Give it one type per column; "
               "for a missing value in a column of strings or objects use None, not float('nan')")
        raise BatchTypeError(msg) from err


def _pandas_na() -> Any:
    """``pandas.NA`` where pandas is imported (a value can hold it only then), else ``None``."""
    pd = sys.modules.get("pandas")
    return getattr(pd, "NA", None) if pd is not None else None


def _na_to_none(value: Any, na: Any) -> Any:
    """``value`` with every ``pandas.NA`` in it (in lists, tuples, dicts, object arrays) as ``None``;
    ``value`` itself where it holds none."""
    if value is na:
        return None
    if isinstance(value, (list, tuple)) or (isinstance(value, np.ndarray) and value.dtype == object):
        items = [_na_to_none(v, na) for v in value]
        if all(a is b for a, b in zip(items, value)):
            return value
        return items if not isinstance(value, tuple) else tuple(items)
    if isinstance(value, dict):
        pairs = {k: _na_to_none(v, na) for k, v in value.items()}
        return value if all(pairs[k] is v for k, v in value.items()) else pairs
    return value


def to_block(batch: Any, like: pa.Schema | None = None) -> Block:
    """A user function's result -> a block.  Raises :class:`BatchTypeError` on anything else."""
    if isinstance(batch, (pa.Table, pa.RecordBatch)):
        table = normalize_types(batch if isinstance(batch, pa.Table) else pa.Table.from_batches([batch]))
        if like is not None and like.metadata and table.schema.metadata == like.metadata:
            # The input's pandas metadata, kept by set_column / drop_columns: made true of the columns returned.
            from bridge.pandas_types import fitted_metadata

            return fitted_metadata(table, like)
        return table
    if isinstance(batch, Mapping):
        names = list(batch.keys())
        like_types = {f.name: f.type for f in like} if like is not None else {}
        columns = [_named_column(str(k), v, like_types.get(str(k))) for k, v in batch.items()]
        lengths = {str(k): len(c) for k, c in zip(names, columns)}
        if len(set(lengths.values())) > 1:
            msg = f"the columns of the returned batch have different lengths: {lengths}"
            raise BatchTypeError(msg)
        if like is not None:
            columns = [
                _restore_type(c, like.field(str(k)).type) if str(k) in like.names else c
                for k, c in zip(names, columns)
            ]
        return pa.Table.from_arrays(columns, names=[str(k) for k in names])
    mod = type(batch).__module__
    if mod.startswith("pandas") and hasattr(batch, "columns"):
        from bridge.pandas_types import keeps_index, pandas_to_block

        try:
            block = pandas_to_block(batch, like, preserve_index=keeps_index(batch, like))
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
            # pyarrow's "Byte-swapped arrays not supported" / "Unsupported numpy type": big-endian columns are
            # turned around (as from_pandas does), one Arrow has no type for (complex) is named.
            native = _native_frame(batch)
            if native is batch:
                raise
            block = pandas_to_block(native, like, preserve_index=keeps_index(native, like))
        return restore_types(block, like)
    if hasattr(batch, "__arrow_c_stream__"):
        return normalize_types(pa.table(batch))
    msg = (
        f"a batch must be a dict of column name -> array, a pandas.DataFrame or a pyarrow.Table; "
        f"got {type(batch).__name__}"
    )
    raise BatchTypeError(msg)


def keeps_frame_index(indexes: Sequence[Any]) -> bool:
    """Whether the index of frames with these ``indexes`` (in order) is kept, as column(s) that
    ``to_pandas`` restores: ``from_pandas`` of them, ``from_modin`` of a frame's row partitions.

    Dropped only where it carries nothing: every frame has an unnamed ``RangeIndex`` of step 1
    starting at 0, or the frames' ranges follow one another from 0 (pieces of one frame).  A frame
    indexed ``2, 3, ...`` (``df.iloc[2:]``) has labels a user joins on: they come back, as any other
    index does.  All frames are treated alike so that their blocks share columns.
    """
    import pandas as pd

    if not all(isinstance(i, pd.RangeIndex) and i.name is None and i.step == 1 for i in indexes):
        return True
    if all(i.start == 0 for i in indexes):
        return False
    start = 0
    for i in indexes:
        if i.start != start and len(i):
            return True
        start = i.stop if len(i) else start
    return False


def frame_to_block(df: Any, like: pa.Schema | None = None, *, keep_index: bool | None = None) -> Block:
    """One DataFrame -> one block, keeping a non-default index.

    ``like``: the Arrow schema the frame was made from, where the caller knows it
    (default: the one ``to_pandas`` left in ``df.attrs``); its types come back exactly.
    ``keep_index``: whether the index becomes column(s); ``None``: unless it is an unnamed
    ``RangeIndex`` of step 1 (a piece of a larger default-indexed frame has one starting anywhere).
    """
    import pandas as pd

    from bridge.pandas_types import pandas_to_block, schema_of, table_from_pandas

    idx = df.index
    default = isinstance(idx, pd.RangeIndex) and idx.name is None and idx.step == 1 if keep_index is None \
        else not keep_index
    like = like if like is not None else _still_describes(df, schema_of(df))
    if like is not None:
        # A frame this library made (to_pandas, to_dask, to_modin): its Arrow types come back exactly.
        return restore_types(pandas_to_block(df, like, preserve_index=not default), like)
    try:
        return table_from_pandas(df, preserve_index=not default)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError) as err:
        try:
            native = _native_frame(df)
        except BatchTypeError as bad:
            from bridge.errors import UnsupportedTypeError

            raise UnsupportedTypeError(f"cannot convert the DataFrame to Arrow: {bad.what}", bad.hint) from err
        if native is not df:
            return frame_to_block(native, keep_index=not default)
        try:
            return to_block(df.reset_index(drop=default))
        except (BatchTypeError, pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
            pass
        from bridge.errors import BridgeError

        msg = f"cannot convert the DataFrame to Arrow: {err}"
        raise BridgeError(msg, "mixed-type object columns need one type; cast them with df.astype(...)") from err


def _still_describes(df: Any, schema: pa.Schema | None) -> pa.Schema | None:
    """The schema ``to_pandas`` left in ``df.attrs``, less the timestamp columns the user has since made
    naive or zone-aware (``tz_localize``): pandas copies ``attrs`` through edits, and restoring the old
    type read a naive wall time as UTC and put the old zone back (12:00 became 14:00 Berlin).  Other
    columns keep the recorded type where their values allow it, as before."""
    if schema is None:
        return None
    import pandas as pd

    dtypes = {str(c): t for c, t in zip(df.columns, df.dtypes)}

    def changed(field: pa.Field) -> bool:
        dtype = dtypes.get(field.name)
        if dtype is None or not pa.types.is_timestamp(field.type):
            return False
        aware = isinstance(dtype, pd.DatetimeTZDtype)
        naive = isinstance(dtype, np.dtype) and dtype.kind == "M"
        return (aware or naive) and aware != (field.type.tz is not None)

    kept = [f for f in schema if not changed(f)]
    return schema if len(kept) == len(schema) else pa.schema(kept, metadata=schema.metadata)


def _native_frame(df: Any) -> Any:
    """``df`` with big-endian columns in Arrow's byte order (``df`` itself if none); a column Arrow has
    no type for (sparse, complex, ``datetime64[M]``) raises :class:`BatchTypeError` naming it."""
    import pandas as pd

    fixes = {}
    for name, dt in zip(df.columns, df.dtypes):
        if isinstance(dt, pd.SparseDtype):
            raise BatchTypeError(f"column {name!r} is sparse ({dt}): Arrow has no sparse type",
                                 "make it dense first: df = df.sparse.to_dense()")
        if isinstance(dt, np.dtype):
            try:
                ready = _arrow_ready(np.empty(0, dt))
            except BatchTypeError as err:
                raise BatchTypeError(f"column {name!r}: {err.what}", err.hint) from None
            if ready.dtype != dt:
                fixes[name] = ready.dtype
    return df.astype(fixes) if fixes else df


def restore_types(block: Block, like: pa.Schema | None) -> Block:
    """Cast pandas' lossy stand-ins back to the input column's type where the values allow.

    pandas holds an integer column with nulls as float64 and a boolean one as object; each
    batch would otherwise come back with whatever types its own values suggested, and blocks
    of one Dataset would disagree.  A cast that would lose or change a value is skipped.
    """
    if like is None:
        return block
    for i, field in enumerate(block.schema):
        if field.name not in like.names:
            continue
        want = like.field(field.name).type
        if block.num_rows == 0 and field.type != want:
            block = block.set_column(i, field.name, empty_array(want))  # no values: the input's type
            continue
        if field.type == want or tensor.is_tensor(want) or tensor.is_tensor(field.type):
            continue
        col = _restore_type(block.column(i), want)
        if col.type == field.type and pa.types.is_floating(field.type) and pa.types.is_integer(want) \
                and col.null_count:
            # An integer column with nulls that pandas turned into floats (a float column
            # without nulls is the user's own choice and stays float).
            try:
                col = pc.cast(col, want, safe=True)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
                continue
        block = block.set_column(i, field.name, col)
    return block


def rows_to_block(rows: list[Mapping[str, Any]], like: pa.Schema | None = None) -> Block:
    """A list of row dicts -> a block (columns in first-seen order, missing keys null)."""
    if not rows:
        from bridge.block import empty_table

        return empty_table(like) if like is not None else pa.table({})
    names: dict[str, None] = {}
    for r in rows:
        if not isinstance(r, Mapping):
            msg = f"a row must be a dict of column name -> value; got {type(r).__name__}"
            raise BatchTypeError(msg)
        for k in r:
            names.setdefault(k, None)
    if not names:
        # Every row is {}: rows without columns, each one kept (a table of no arrays has no rows).
        return table_without_columns(len(rows))
    data = {k: [r.get(k) for r in rows] for k in names}
    columns = {}
    for k, values in data.items():
        first = next((v for v in values if v is not None), None)
        if isinstance(first, np.ndarray) or (isinstance(first, np.generic)):
            if isinstance(first, np.generic):
                columns[k] = pa.array(values)
            elif first.ndim >= 1 and first.dtype.kind in "iuf" and all(
                    isinstance(v, np.ndarray) and v.shape == first.shape and v.dtype == first.dtype for v in values):
                # One ndarray per row, all of one shape: a tensor column (rows -> (n, *shape)), as Ray Data
                # makes of from_items([np.array(...)]) and of map() returning arrays.
                columns[k] = tensor.fixed_tensor_array(np.stack([np.asarray(v) for v in values]))
            else:
                columns[k] = object_column(values)
        else:
            columns[k] = _from_pylist(values, like.field(k).type if like is not None and k in like.names else None,
                                      name=k)
    return to_block(columns, like)


def _from_pylist(values: list[Any], like: pa.DataType | None, name: str = "") -> pa.Array:
    if like is not None and not tensor.is_tensor(like):
        fitted = fitted_array(values, like)  # the input column's type, where it changes no value
        if fitted is not None:
            return fitted
    try:
        return infer_array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as err:
        # One column of ints and strings (or of values pyarrow cannot mix): the column and the kinds.
        kinds = sorted({type(v).__name__ for v in values if v is not None})
        raise BatchTypeError(f"column {name!r} holds values of kinds no one Arrow type holds together "
                             f"({', '.join(kinds)}): {str(err).splitlines()[0]}",
                             "give a column one kind of value per row (e.g. str(x) for all, or None for "
                             "missing); exact numbers mixing ints and floats: decimal.Decimal") from None
    except OverflowError:
        # pyarrow infers int64 for Python ints: those in [2**63, 2**64) fit uint64 when none is negative.
        ints = [v for v in values if v is not None]
        if all(type(v) is int and 0 <= v < 2**64 for v in ints):
            return pa.array(values, pa.uint64())
        big = next((v for v in ints if type(v) is int and not -2**63 <= v < 2**64), None)
        raise BatchTypeError(f"column {name!r} holds integers no 64-bit type holds together"
                             + (f" (e.g. {big})" if big is not None else " (negatives with values >= 2**63)"),
                             "store them as decimal.Decimal (exact) or str") from None


def _python_rows(table: Block) -> list[dict[str, Any]]:
    """``table.to_pylist()``; a value no Python type holds (a timestamp or date past year 9999, a duration
    past ``timedelta``'s range) raises :class:`~bridge.errors.UnsupportedTypeError` naming its column (a bare
    ``OverflowError`` from pyarrow before, as from Ray Data)."""
    try:
        return table.to_pylist()
    except OverflowError as err:
        from bridge.errors import UnsupportedTypeError

        for field in table.schema:
            try:
                table.column(field.name).to_pylist()
            except OverflowError:
                msg = f"rows as Python values: column {field.name!r} ({field.type}) holds a value Python's " \
                      f"datetime types cannot hold ({err})"
                hint = "take such rows as Arrow or NumPy (ds.take_batch(batch_format='pyarrow'), " \
                       "ds.iter_batches(batch_format='numpy')), or cast the column to int64 first"
                raise UnsupportedTypeError(msg, hint) from err
        raise


def block_to_rows(block: Block) -> list[dict[str, Any]]:
    """A block -> row dicts of Python values; tensor columns give ndarrays per row."""
    if block.num_columns == 0:
        return [{} for _ in range(block.num_rows)]  # pyarrow's to_pylist() of such a table is []
    tensor_cols = [f.name for f in block.schema if tensor.is_tensor(f.type)]
    if not tensor_cols:
        return _python_rows(block)
    plain = _python_rows(block.drop_columns(tensor_cols)) if block.num_columns > len(tensor_cols) else [
        {} for _ in range(block.num_rows)]
    arrays = {c: column_to_numpy(block.column(c)) for c in tensor_cols}
    order = block.column_names
    out = []
    for i, row in enumerate(plain):
        for c in tensor_cols:
            row[c] = arrays[c][i]
        out.append({k: row[k] for k in order})
    return out
