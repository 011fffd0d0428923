"""Tensor columns of Parquet files, read as this library's tensor types (Ray Data's included).

Ray Data writes a tensor column as an Arrow extension type of its own, and Parquet keeps only
the storage and the field's extension metadata:

===========================================  ==========================================  ===================
Ray Data's type (``ARROW:extension:name``)   storage in the file                         metadata
===========================================  ==========================================  ===================
``ray.data.arrow_tensor``                    ``list<T>``, one flat list per row          the shape, ``[2, 2]``
``ray.data.arrow_tensor_v2``                 ``large_list<T>``, one flat list per row    the shape
``ray.data.arrow_variable_shaped_tensor``    ``struct<data: large_list<T>,               ``ndim``, ``2``
                                             shape: list<int64>>``
===========================================  ==========================================  ===================

pyarrow restores these types only in a process that has imported ``ray.data`` (which registers
them); anywhere else it reads the storage, a fixed tensor as flat lists with its shape gone.
Either way this module reads such a column as ``arrow.fixed_shape_tensor`` (a fixed shape) or
``raybridge.variable_shape_tensor`` (shapes per row), the types of :mod:`bridge.tensor`, with the
same values and shapes.  The metadata is JSON since Ray 2.55 (before 2.49 too); Ray 2.49-2.54 wrote
it with cloudpickle, which is read here only as plain numbers: an unpickler that refuses every
global, so a file cannot make it run code.

A column whose files hold several shapes (Ray Data writes ragged tensors one block per file, each
block with a fixed shape of its own) is unified by :mod:`bridge.io.parquet_schema` into one
variable-shape tensor column; :func:`convert_column` then converts each file's column to it.
A tensor of strings, a damaged shape or a null element is refused rather than read another way.
"""

from __future__ import annotations

import dataclasses
import io
import json
import pickle
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from bridge.errors import UnsupportedTypeError
from bridge.io.paths import FileReadError
from bridge.tensor import VariableShapeTensorType, is_fixed_tensor, is_tensor, is_variable_tensor

RAY_FIXED_NAMES = ("ray.data.arrow_tensor", "ray.data.arrow_tensor_v2")
RAY_VARIABLE_NAME = "ray.data.arrow_variable_shaped_tensor"
_EXT_NAME = b"ARROW:extension:name"
_EXT_META = b"ARROW:extension:metadata"


@dataclasses.dataclass(frozen=True)
class TensorSource:
    """How one file stores one tensor column.

    ``type`` is the column's type as this library's tensor type (``None`` where it has none:
    ``problem`` says why); ``storage`` is the plain Arrow type the column is scanned as; ``ray`` is
    Ray Data's extension name where Ray Data wrote the column.
    """

    type: pa.DataType | None
    storage: pa.DataType
    ray: str | None = None
    problem: str | None = None


def fixed_type(value_type: pa.DataType, shape: list[int]) -> pa.DataType:
    """The fixed-shape tensor type :func:`bridge.tensor.fixed_tensor_array` gives (its identity permutation spelled out)."""
    return pa.fixed_shape_tensor(value_type, list(shape), permutation=list(range(len(shape))))


def file_tensors(schema: pa.Schema, path: str) -> tuple[pa.Schema, dict[str, TensorSource]]:
    """``schema`` (one file's) with Ray Data's tensor columns typed as this library's, and every tensor column's source.

    A Ray Data column this library cannot hold (a tensor of strings) keeps its storage type; its
    source says why (:func:`refuse` raises that where the column is read).
    """
    fields = list(schema)
    sources: dict[str, TensorSource] = {}
    for i, field in enumerate(fields):
        source = _source(field, path)
        if source is None:
            continue
        sources[field.name] = source
        if source.ray is not None:
            fields[i] = pa.field(field.name, source.type or source.storage, field.nullable, _own_metadata(field.metadata))
    if not any(s.ray for s in sources.values()):
        return schema, sources
    return pa.schema(fields, metadata=schema.metadata), sources


def _own_metadata(metadata: dict[bytes, bytes] | None) -> dict[bytes, bytes] | None:
    """A field's metadata without Ray Data's extension keys (the column is now another type)."""
    if not metadata:
        return None
    kept = {k: v for k, v in metadata.items() if k not in (_EXT_NAME, _EXT_META)}
    return kept or None


def _source(field: pa.Field, path: str) -> TensorSource | None:
    t = field.type
    if isinstance(t, pa.BaseExtensionType) and t.extension_name in (*RAY_FIXED_NAMES, RAY_VARIABLE_NAME):
        return _ray_source(field.name, t.extension_name, t.storage_type, t.__arrow_ext_serialize__(), path)
    if is_tensor(t):
        return TensorSource(t, t.storage_type)
    name = (field.metadata or {}).get(_EXT_NAME)
    if name is not None and not isinstance(t, pa.BaseExtensionType):
        text = name.decode("utf-8", "replace")
        if text in (*RAY_FIXED_NAMES, RAY_VARIABLE_NAME):
            return _ray_source(field.name, text, t, (field.metadata or {}).get(_EXT_META, b""), path)
    return None


def _ray_source(column: str, name: str, storage: pa.DataType, raw: bytes, path: str) -> TensorSource:
    """A Ray Data tensor column: its storage and the parameter in its extension metadata."""
    param = _parameter(raw)
    where = f"column {column!r} of {path!r} (Ray Data's {name}, stored as {storage})"
    if name == RAY_VARIABLE_NAME:
        data_t = _struct_child(storage, "data")
        shape_t = _struct_child(storage, "shape")
        if not (isinstance(param, int) and not isinstance(param, bool) and param >= 0):
            return TensorSource(None, storage, name, f"{where}: its number of dimensions {raw!r} cannot be read")
        if data_t is None or shape_t is None or not _is_list(data_t) or not _is_list(shape_t) \
                or not pa.types.is_integer(shape_t.value_type):
            return TensorSource(None, storage, name, f"{where}: not the struct<data, shape> Ray Data writes")
        value_type = data_t.value_type
        if not _holdable(value_type):
            return TensorSource(None, storage, name, f"{where}: a tensor holds numbers or bools, not {value_type}")
        return TensorSource(VariableShapeTensorType(value_type, param), storage, name)
    if not (isinstance(param, list) and all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in param)):
        return TensorSource(None, storage, name, f"{where}: its shape {raw!r} cannot be read")
    if not _is_list(storage):
        return TensorSource(None, storage, name, f"{where}: not the list of values Ray Data writes")
    value_type = storage.value_type
    if not _holdable(value_type):
        return TensorSource(None, storage, name, f"{where}: a tensor holds numbers or bools, not {value_type}")
    return TensorSource(fixed_type(value_type, param), storage, name)


def _struct_child(t: pa.DataType, name: str) -> pa.DataType | None:
    if not pa.types.is_struct(t) or t.get_field_index(name) < 0:
        return None
    return t.field(name).type


def _is_list(t: pa.DataType) -> bool:
    return pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)


def _holdable(t: pa.DataType) -> bool:
    """Whether this library's tensor types hold values of ``t`` (numbers and bools; see ``is_tensor_dtype``)."""
    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)


class _NoGlobals(pickle.Unpickler):
    """Reads a pickle of plain values only: every class or function it names is refused."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"refused {module}.{name}")


def _parameter(raw: bytes) -> Any:
    """The shape (a list) or ``ndim`` (an int) Ray Data wrote as JSON, or as cloudpickle (Ray 2.49-2.54); else ``None``."""
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        pass
    try:
        value = _NoGlobals(io.BytesIO(raw)).load()
    except Exception:  # noqa: BLE001 - a damaged pickle fails in many ways; each means "not readable"
        return None
    return list(value) if isinstance(value, tuple) else value


def refuse(column: str, source: TensorSource) -> UnsupportedTypeError:
    """The error for reading a tensor column that this library cannot hold."""
    return UnsupportedTypeError(
        f"read_parquet: {source.problem}",
        f"leave the column out with columns=[...], or read it with ray.data.read_parquet and convert "
        f"{column!r} to numbers",
    )


def convert_column(col: pa.ChunkedArray, source: TensorSource, target: pa.DataType, column: str,
                   path: str) -> pa.ChunkedArray:
    """One file's tensor column (scanned as ``source.storage``) as ``target``, this library's tensor type.

    ``target`` is ``source.type`` or a type it unifies to (:func:`bridge.io.parquet_schema.unify_tensor_types`):
    a fixed shape whose values widen, or a variable-shape tensor of the same number of dimensions.
    """
    chunks = [_convert(c.storage if isinstance(c, pa.ExtensionArray) else c, source, target, column, path)
              for c in col.chunks]
    return pa.chunked_array(chunks, type=target)


def _damaged(column: str, path: str, detail: str) -> FileReadError:
    return FileReadError(f"read_parquet: tensor column {column!r} of {path!r} is damaged: {detail}",
                         f"re-write {path!r}, or leave the column out with columns=[...]")


def _convert(arr: pa.Array, source: TensorSource, target: pa.DataType, column: str, path: str) -> pa.Array:
    assert source.type is not None
    if is_fixed_tensor(target):
        return _as_fixed(arr, source.type, target, column, path)
    assert is_variable_tensor(target)
    data, shapes, valid = _rows(arr, source.type, column, path)
    if data.type.value_type != target.value_type:
        data = data.cast(pa.large_list(target.value_type))
    nulls = not bool(valid.all())
    shape = pa.FixedSizeListArray.from_arrays(pa.array(shapes.reshape(-1), pa.int64()), target.ndim,
                                              mask=pa.array(~valid) if nulls else None)
    storage = pa.StructArray.from_arrays([data, shape], names=["data", "shape"],
                                         mask=pa.array(~valid) if nulls else None)
    return pa.ExtensionArray.from_storage(target, storage)


def _as_fixed(arr: pa.Array, src: pa.DataType, target: pa.DataType, column: str, path: str) -> pa.Array:
    """Flat rows of ``src``'s shape (a list each) -> ``target``, a fixed-shape tensor of that shape."""
    shape = list(src.shape)
    size = int(np.prod(shape)) if shape else 1
    if not pa.types.is_fixed_size_list(arr.type):
        _check_lengths(arr, np.full(len(arr), size, dtype=np.int64), column, path, f"the shape {tuple(shape)} needs")
    mask = arr.is_null() if arr.null_count else None
    if mask is not None:  # a null row takes its ``size`` places in the values, as zeros (False)
        zero = False if pa.types.is_boolean(arr.type.value_type) else 0
        arr = arr.fill_null(pa.scalar([zero] * size, type=arr.type))
    values = arr.flatten()
    if values.null_count:
        raise _null_element(column, path)
    if values.type != target.value_type:
        values = values.cast(target.value_type)
    storage = pa.FixedSizeListArray.from_arrays(values, type=target.storage_type, mask=mask)  # (a 0 in the shape too)
    return pa.ExtensionArray.from_storage(target, storage)


def _null_element(column: str, path: str) -> UnsupportedTypeError:
    return UnsupportedTypeError(f"read_parquet: tensor column {column!r} of {path!r} has a null element inside a "
                                f"tensor; a tensor holds numbers or bools only",
                                "leave the column out with columns=[...], or fill the nulls and re-write the file")


def _check_lengths(lists: pa.Array, want: np.ndarray, column: str, path: str, what: str) -> None:
    """Every valid row of ``lists`` holds ``want[row]`` values."""
    lengths = pc.list_value_length(lists).fill_null(0).to_numpy(zero_copy_only=False)
    valid = lists.is_valid().to_numpy(zero_copy_only=False)
    bad = np.flatnonzero(valid & (lengths != want))
    if len(bad):
        i = int(bad[0])
        raise _damaged(column, path, f"row {i} holds {int(lengths[i])} values where {what} {int(want[i])}")


def _rows(arr: pa.Array, src: pa.DataType, column: str, path: str) -> tuple[pa.Array, np.ndarray, np.ndarray]:
    """A tensor column's rows as (data: ``large_list<T>``, null at a null row; shapes ``(rows, ndim)``; valid)."""
    valid = arr.is_valid().to_numpy(zero_copy_only=False)
    if is_fixed_tensor(src):
        shape = list(src.shape)
        size = int(np.prod(shape)) if shape else 1
        data = arr.cast(pa.large_list(arr.type.value_type))
        _check_lengths(data, np.full(len(arr), size, dtype=np.int64), column, path, f"the shape {tuple(shape)} needs")
        shapes = np.zeros((len(arr), len(shape)), dtype=np.int64)
        shapes[valid] = shape
    else:
        ndim = src.ndim
        children = dict(zip([arr.type.field(i).name for i in range(arr.type.num_fields)], arr.flatten()))
        data, shape_lists = children["data"], children["shape"]
        if not pa.types.is_large_list(data.type):
            data = data.cast(pa.large_list(data.type.value_type))
        if np.any(valid & ~data.is_valid().to_numpy(zero_copy_only=False)) or \
                np.any(valid & ~shape_lists.is_valid().to_numpy(zero_copy_only=False)):
            raise _damaged(column, path, "a row has no data or no shape")
        _check_lengths(shape_lists, np.full(len(arr), ndim, dtype=np.int64), column, path,
                       f"a shape of {ndim} dimensions needs")
        flat = shape_lists.flatten()
        if flat.null_count:
            raise _damaged(column, path, "a shape has a null dimension")
        shapes = np.zeros((len(arr), ndim), dtype=np.int64)
        shapes[valid] = flat.to_numpy(zero_copy_only=False).astype(np.int64).reshape(-1, ndim)
        if (shapes < 0).any():
            raise _damaged(column, path, "a shape has a negative dimension")
        _check_lengths(data, np.prod(shapes, axis=1).astype(np.int64), column, path, "its shape needs")
    if data.flatten().null_count:
        raise _null_element(column, path)
    return data, shapes, valid


def needs_conversion(source: TensorSource, target: pa.DataType) -> bool:
    """Whether a file's column (``source``) must be converted after the scan to be read as ``target``."""
    return source.type is not None and (source.ray is not None or source.type != target)


__all__ = ["RAY_FIXED_NAMES", "RAY_VARIABLE_NAME", "TensorSource", "convert_column", "file_tensors", "fixed_type",
           "needs_conversion", "refuse"]
