"""Python and NumPy values -> Arrow arrays, back to the input column's type where the values fit it.

The low floor under both batch conversions (:mod:`bridge.batch` for NumPy
batches and rows, :mod:`bridge.pandas_types` for pandas frames): an object
array of per-row values -- ndarrays of a tensor or list column, Python ints
with ``None``, Decimals, dicts -- becomes the Arrow type its input column had
(``like``) where every value fits it, else the type its values suggest.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from bridge import tensor


def empty_array(t: pa.DataType) -> pa.Array:
    """An array of no rows of any type, extension types included."""
    if isinstance(t, pa.ExtensionType):
        return pa.ExtensionArray.from_storage(t, pa.array([], type=t.storage_type))
    return pa.array([], type=t)


def is_list_like(t: pa.DataType) -> bool:
    return pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)


def object_column(values: Any, like: pa.DataType | None = None) -> pa.Array:
    items = list(values)
    if not items and like is not None:
        return empty_array(like)
    first = next((v for v in items if v is not None), None)
    if like is not None and isinstance(first, np.ndarray):
        # Rows of an input list or tensor column: back to that very type where the rows fit it.
        if tensor.is_fixed_tensor(like):
            fixed = tensor.fixed_tensor_array_like(items, like)
            if fixed is not None:
                return fixed
        elif is_list_like(like) and all(v is None or (isinstance(v, np.ndarray) and v.ndim == 1) for v in items):
            try:
                return pa.array([None if v is None else v.tolist() for v in items], type=like)
            except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OverflowError):
                pass
    if like is not None and not tensor.is_tensor(like) and not isinstance(first, np.ndarray):
        # Python objects (ints with None, Decimals, dicts...): the input column's type says what they were.
        try:
            return pa.array(items, type=like)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OverflowError):
            pass
    if isinstance(first, np.ndarray):
        arrays = [v for v in items if v is not None]
        if all(a.ndim == 1 for a in arrays) and first.ndim == 1:
            return pa.array([None if v is None else v for v in items])
        if len(arrays) == len(items) and all(a.shape == first.shape for a in arrays):
            return tensor.fixed_tensor_array(np.stack(arrays))
        return tensor.variable_tensor_array(items)
    return pa.array(items)
