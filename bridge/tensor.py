"""N-dimensional array columns.

Arrays of one shape per column use Arrow's canonical
``arrow.fixed_shape_tensor`` extension type: the values are one contiguous
buffer, so a column of ``(rows, *shape)`` comes back to NumPy without a copy.

Arrays whose shape varies row to row use ``raybridge.variable_shape_tensor``,
laid out like Arrow's canonical variable-shape tensor:
``struct<data: large_list<T>, shape: fixed_size_list<int64>[ndim]>``.
It converts back to an object array of ndarrays, each with its own shape.
"""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa

from bridge.errors import UnsupportedTypeError


def is_fixed_tensor(t: pa.DataType) -> bool:
    return isinstance(t, pa.FixedShapeTensorType)


class VariableShapeTensorType(pa.ExtensionType):
    """Tensors of one dtype and rank whose shape varies per row."""

    def __init__(self, value_type: pa.DataType, ndim: int) -> None:
        self._value_type = value_type
        self._ndim = ndim
        storage = pa.struct(
            [("data", pa.large_list(value_type)), ("shape", pa.list_(pa.int64(), ndim))]
        )
        super().__init__(storage, "raybridge.variable_shape_tensor")

    @property
    def value_type(self) -> pa.DataType:
        return self._value_type

    @property
    def ndim(self) -> int:
        return self._ndim

    def __arrow_ext_serialize__(self) -> bytes:
        return json.dumps({"ndim": self._ndim}).encode()

    @classmethod
    def __arrow_ext_deserialize__(cls, storage_type: pa.DataType, serialized: bytes) -> VariableShapeTensorType:
        ndim = json.loads(serialized.decode())["ndim"]
        return cls(storage_type.field("data").type.value_type, ndim)

    def __reduce__(self) -> tuple:
        return (VariableShapeTensorType, (self._value_type, self._ndim))


try:
    pa.register_extension_type(VariableShapeTensorType(pa.int8(), 1))
except pa.ArrowKeyError:  # already registered in this process
    pass


def is_variable_tensor(t: pa.DataType) -> bool:
    return isinstance(t, VariableShapeTensorType)


def is_tensor(t: pa.DataType) -> bool:
    return is_fixed_tensor(t) or is_variable_tensor(t)


def numeric_array(arr: np.ndarray) -> pa.Array | None:
    """A 1-D integer or float ndarray -> an Arrow array of its values, sharing its memory; ``None`` otherwise.

    What ``pa.array(arr)`` makes (no nulls, NaN stays a value; a strided view is
    copied, as there), without its question to pandas whether ``arr`` is a pandas
    object: pyarrow imports pandas to ask, on the first ``pa.array`` call in a
    process, which puts that import on every fresh worker's first output
    (measured in ``integration/bench/RESULTS.md``, "An actor pool's first output").
    """
    dtype = arr.dtype
    if arr.ndim != 1 or dtype.kind not in "iuf" or not dtype.isnative or isinstance(arr, np.ma.MaskedArray):
        return None  # (a masked array's mask is its nulls: pa.array reads it)
    if not arr.flags.c_contiguous:
        arr = np.ascontiguousarray(arr)
    return pa.Array.from_buffers(pa.from_numpy_dtype(dtype), len(arr), [None, pa.py_buffer(arr)])


def pooled_empty(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """A writable, uninitialised ndarray in Arrow's memory pool.

    For copies made over and over (a batch's own memory, a batch across two blocks): the pool
    keeps the pages it freed and hands them out again, where a fresh NumPy or torch allocation of
    a few MB comes from ``malloc``, which gives such sizes back to the system on ``free`` and
    faults every page in again on the next one (measured in integration/bench/RESULTS.md,
    "Torch batches that own their memory").
    """
    dtype = np.dtype(dtype)
    count = int(np.prod(shape))
    buf = pa.allocate_buffer(count * dtype.itemsize)
    return np.frombuffer(buf, dtype=dtype, count=count).reshape(shape)


def _order(t: pa.FixedShapeTensorType) -> list[int]:
    """A fixed-shape tensor type's permutation (the identity where it has none)."""
    return list(t.permutation) if t.permutation is not None else list(range(len(t.shape)))


def logical_shape(t: pa.FixedShapeTensorType) -> list[int]:
    """A fixed-shape tensor type's row shape as its rows read (``t.shape`` is in memory order; see
    :func:`_fixed_values`)."""
    return [int(t.shape[int(a)]) for a in np.argsort(_order(t))]


def _cells(t: pa.FixedShapeTensorType) -> int:
    """Values per row of a fixed-shape tensor type."""
    return int(np.prod(t.shape)) if len(t.shape) else 1


def _joined_values(col: pa.ChunkedArray) -> np.ndarray | None:
    """The chunks of a numeric fixed-shape tensor column joined by Arrow (one copy, into its pool), as a
    writable ndarray over that new buffer; ``None`` where the result is not such a plain buffer."""
    t = col.type
    if pa.types.is_boolean(t.value_type) or _order(t) != sorted(_order(t)):
        return None
    joined = pa.concat_arrays(col.chunks)
    values = joined.storage.values
    buf = values.buffers()[1]
    if buf is None or not buf.is_mutable or values.offset or values.null_count or len(values) != len(joined) * _cells(t):
        return None
    dtype = np.dtype(values.type.to_pandas_dtype())
    return np.frombuffer(buf, dtype=dtype, count=len(values)).reshape([len(joined), *t.shape])


def _fixed_values(col: pa.ExtensionArray) -> np.ndarray:
    """A fixed-shape tensor array -> ``(rows, *shape)`` ndarray, a null row read as zeros (False).

    Zero-copy for numbers without nulls; bools (bit-packed in Arrow, which pyarrow's
    ``to_numpy_ndarray`` refuses) are unpacked."""
    t = col.type
    perm = _order(t)
    if not pa.types.is_boolean(t.value_type) and not col.null_count and perm == sorted(perm) \
            and not col.storage.values.offset:
        # (pyarrow's to_numpy_ndarray reads the values from the start of the child array: a child that is
        # itself a slice, as FixedSizeListArray.from_arrays of a sliced array makes, gave other rows' values)
        return col.to_numpy_ndarray()
    storage = col.storage
    if storage.null_count:
        zero = False if pa.types.is_boolean(t.value_type) else 0
        storage = storage.fill_null(pa.scalar([zero] * _cells(t), type=t.storage_type))
    # pyarrow writes ``shape`` in memory order and reads logical dimension i from memory dimension
    # argsort(permutation)[i] (its to_numpy_ndarray fails on a permuted tensor; this does not).
    flat = storage.flatten().to_numpy(zero_copy_only=False).reshape([len(col), *t.shape])
    return flat.transpose([0, *[1 + int(a) for a in np.argsort(perm)]])


def is_tensor_dtype(dtype: np.dtype) -> bool:
    """Whether a fixed-shape tensor holds values of ``dtype``: numbers and bools (Arrow's tensor takes no
    strings, times or objects: pyarrow made such a column, then could not read it back)."""
    return dtype.kind in "biuf" and dtype.names is None


def fixed_tensor_array(arr: np.ndarray) -> pa.ExtensionArray:
    """``(rows, *shape)`` ndarray -> ``arrow.fixed_shape_tensor`` array (no copy if contiguous; bools are
    bit-packed, as Arrow holds them, and come back as bools).

    Numbers and bools only (:func:`is_tensor_dtype`): any other dtype raises ``UnsupportedTypeError``."""
    if not is_tensor_dtype(arr.dtype):
        raise UnsupportedTypeError(f"a tensor column holds numbers or bools; got a {arr.dtype} array of shape "
                                   f"{arr.shape}", "store such rows as a list column (one list per row)")
    arr = np.ascontiguousarray(arr)
    if arr.dtype == np.bool_ and arr.shape[0] and arr.size:
        shape = list(arr.shape[1:])
        t = pa.fixed_shape_tensor(pa.bool_(), shape, permutation=list(range(len(shape))))
        flat = pa.array(arr.reshape(-1), type=pa.bool_())
        return pa.ExtensionArray.from_storage(t, pa.FixedSizeListArray.from_arrays(flat, int(np.prod(shape))))
    if arr.shape[0] == 0:
        t = pa.fixed_shape_tensor(pa.from_numpy_dtype(arr.dtype), list(arr.shape[1:]))
        return pa.ExtensionArray.from_storage(t, pa.array([], type=t.storage_type))
    shape = list(arr.shape[1:])
    size = int(np.prod(shape))
    values = numeric_array(arr.reshape(-1)) if size else None
    if values is None:
        return pa.FixedShapeTensorArray.from_numpy_ndarray(arr)
    # The type pyarrow's from_numpy_ndarray gives a C-ordered array: the identity permutation spelled out.
    t = pa.fixed_shape_tensor(values.type, shape, permutation=list(range(len(shape))))
    return pa.ExtensionArray.from_storage(t, pa.FixedSizeListArray.from_arrays(values, size))


def fixed_tensor_array_like(items: list[np.ndarray | None], like: pa.DataType) -> pa.ExtensionArray | None:
    """Rows of ``like``'s shape (``None`` for a null row) -> an array of the fixed-shape tensor type ``like``.

    ``None`` when a row has another shape (the caller falls back to a variable-shape tensor).
    """
    shape = tuple(like.shape)
    value_type = like.value_type
    if not all(a is None or (isinstance(a, np.ndarray) and a.shape == shape) for a in items):
        return None
    size = int(np.prod(shape)) if shape else 1
    np_dtype = value_type.to_pandas_dtype()
    flat = np.zeros((len(items), size), dtype=np_dtype)
    for i, a in enumerate(items):
        if a is not None:
            flat[i] = a.reshape(-1)
    values = pa.array(flat.reshape(-1), type=value_type)
    mask = pa.array([a is None for a in items], pa.bool_())
    storage = pa.FixedSizeListArray.from_arrays(values, size, mask=mask)
    return pa.ExtensionArray.from_storage(like, storage)


def variable_tensor_array(arrays: list[np.ndarray | None]) -> pa.ExtensionArray:
    """A list of ndarrays of one rank and dtype but different shapes -> variable-shape tensor array."""
    first = next(a for a in arrays if a is not None)
    ndim = first.ndim
    value_type = pa.from_numpy_dtype(first.dtype)
    data = pa.array(
        [None if a is None else np.ascontiguousarray(a).ravel() for a in arrays],
        type=pa.large_list(value_type),
    )
    shape = pa.array([None if a is None else list(a.shape) for a in arrays], type=pa.list_(pa.int64(), ndim))
    mask = pa.array([a is None for a in arrays])
    storage = pa.StructArray.from_arrays([data, shape], names=["data", "shape"], mask=mask)
    return pa.ExtensionArray.from_storage(VariableShapeTensorType(value_type, ndim), storage)


def tensor_to_numpy(col: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """A tensor column -> ``(rows, *shape)`` ndarray, or an object array of ndarrays if shapes vary."""
    if isinstance(col, pa.ChunkedArray):
        if col.num_chunks == 1:
            col = col.chunk(0)
        elif col.num_chunks == 0:
            # (pa.array([], type) fails on a tensor type with its permutation spelled out)
            col = pa.ExtensionArray.from_storage(col.type, pa.array([], type=col.type.storage_type)) \
                if isinstance(col.type, pa.BaseExtensionType) else pa.array([], type=col.type)
        elif is_fixed_tensor(col.type) and not col.null_count:
            # One copy into an array of its own (writable: a consumer may keep it as it is).
            joined = _joined_values(col)
            if joined is not None:
                return joined
            parts = [_fixed_values(c) for c in col.chunks if len(c)]
            return np.concatenate(parts, out=pooled_empty((len(col), *parts[0].shape[1:]), parts[0].dtype))
        else:
            col = pa.concat_arrays(col.chunks)
    if is_fixed_tensor(col.type):
        if col.null_count:
            values = _fixed_values(col)
            out = np.empty(len(col), dtype=object)
            for i, valid in enumerate(col.is_valid().to_pylist()):
                out[i] = values[i] if valid else None
            return out
        return _fixed_values(col)
    storage = col.storage
    data = storage.field("data")
    shape = storage.field("shape")
    out = np.empty(len(col), dtype=object)
    shapes = shape.to_pylist()
    for i in range(len(col)):
        if not storage[i].is_valid:
            out[i] = None
            continue
        out[i] = data[i].values.to_numpy(zero_copy_only=False).reshape(shapes[i])
    return out
