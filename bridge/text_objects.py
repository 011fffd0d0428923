"""String and binary columns -> Python objects, one object per distinct value where values repeat.

NumPy and pandas hold text as an object array: one Python ``str`` (``bytes``)
per row.  Making those objects is most of the cost of a text column's
conversion, and what it costs depends on how often values repeat:

- pyarrow's ``to_numpy`` makes one object per row: a column of a few labels
  over millions of rows makes millions of objects where a few, shared by
  their rows, would do (several times faster).
- pyarrow's ``to_pandas`` shares them (``deduplicate_objects=True``, its
  default) through a hash table of every value seen: for values that hardly
  repeat (ids, sentences) the table outgrows the CPU's caches and the
  conversion takes several times as long as one object per row.

So both conversions ask :func:`values_repeat`, which counts the distinct
values among 4,096 rows spread over the column, and share objects only where
the sample repeats (the threshold, and the figures behind it: section "Text
columns to pandas and NumPy" of integration/bench/RESULTS.md).  Either way
the values are the same: only how many Python objects hold them differs.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

#: Rows sampled (evenly spread) to decide whether a column's values repeat.
SAMPLE_ROWS = 4096
#: Columns shorter than this are converted as they are: a few hundred microseconds either way.
MIN_ROWS = 8192
#: A sample with at most this share of distinct values repeats: its objects are shared.
_REPEATING = 0.95


def is_text(t: pa.DataType) -> bool:
    """String or binary, plain or large: text NumPy and pandas hold as Python objects.  (Views are left to
    pyarrow's conversion: Arrow 26 has no ``take`` for them.)"""
    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) \
        or pa.types.is_large_binary(t)


def _sample(col: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """:data:`SAMPLE_ROWS` rows evenly spread over ``col``, taken chunk by chunk (a ``take`` on a chunked
    array of strings joins its chunks first: a copy of the whole column)."""
    rows = np.linspace(0, len(col) - 1, SAMPLE_ROWS).astype(np.int64)
    if isinstance(col, pa.Array):
        return col.take(pa.array(rows))
    parts, start = [], 0
    for chunk in col.chunks:
        lo, hi = np.searchsorted(rows, [start, start + len(chunk)])
        if hi > lo:
            parts.append(chunk.take(pa.array(rows[lo:hi] - start)))
        start += len(chunk)
    return pa.chunked_array(parts, type=col.type)


def values_repeat(col: pa.Array | pa.ChunkedArray) -> bool:
    """Whether a text column is long enough and its values repeat enough that sharing one Python
    object per distinct value pays (see the module docstring)."""
    if len(col) < MIN_ROWS:
        return False
    sample = _sample(col)
    valid = len(sample) - sample.null_count
    return bool(valid) and pc.count_distinct(sample).as_py() <= _REPEATING * valid


def text_objects(col: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """A text column -> a writable object ndarray of ``str`` / ``bytes``, ``None`` for null: what
    ``col.to_numpy(zero_copy_only=False)`` gives, with one object per distinct value where values repeat
    (through pyarrow's pandas conversion, which shares them: ``to_numpy`` imports pandas for text too)."""
    if values_repeat(col):
        shared = col.to_pandas(deduplicate_objects=True)
        if shared.dtype == object:  # (not pandas' ``str`` dtype, which ``future.infer_string`` gives: NaN for null)
            return shared.to_numpy()
    return col.to_numpy(zero_copy_only=False)
