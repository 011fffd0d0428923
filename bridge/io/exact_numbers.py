"""Integer literals that a text reader would round: found cheaply, read exactly or refused.

``pyarrow.json`` and ``pyarrow.csv`` infer ``int64`` for integer literals, and
``double`` for a column once one literal is beyond ``int64`` (``2**63 + 5``,
``-2**63 - 1``, what ``write_json`` / ``write_csv`` write for a ``uint64`` column)
or next to a float literal.  A double holds every integer below ``2**53`` in
magnitude, and none of ``2**53 + 1``, ``2**63 + 5``, ...: those values would come
back changed (``9223372036854775813`` -> ``9.223372036854776e+18``), silently.

The rule of ``read_json`` / ``read_csv``:

* a column (or nested field) read as a float whose values all stay below
  ``2**53`` in magnitude is exactly its text (checked in Arrow, one pass: the
  fast path, no text is looked at again);
* otherwise the column's text is read again and its integer literals compared
  with the doubles: none changed, the floats stay; some changed and every value
  is an integer in ``[0, 2**64)``, the column is ``uint64`` (exact);
  otherwise :class:`FileReadError` names the file, column and value, with the
  option that reads it exactly (an explicit type).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from bridge.io.paths import FileReadError

#: Every integer of smaller magnitude is a float64 exactly; 2**53 + 1 is the first that is not.
FLOAT_EXACT = 2**53
_UINT64_END = 2**64
_INT64_MAX = 2**63 - 1
#: An integer literal as the CSV reader takes one (surrounding blanks allowed).
_INT_TEXT = re.compile(r"^\s*[+-]?[0-9]+\s*$")


def _float_leaves(arr: pa.Array) -> Iterable[pa.Array]:
    """The float arrays inside ``arr``: itself, its struct fields', its list items' (any depth)."""
    t = arr.type
    if pa.types.is_floating(t):
        yield arr
    elif pa.types.is_struct(t):
        for i in range(t.num_fields):
            yield from _float_leaves(arr.field(i))
    elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        yield from _float_leaves(arr.flatten())


def may_hold_rounded_ints(col: pa.ChunkedArray | pa.Array) -> bool:
    """Whether a float in ``col`` is ``2**53`` or more in magnitude: the only floats an integer
    literal can have been rounded to (a false alarm costs a second look at the text, nothing else)."""
    chunks = col.chunks if isinstance(col, pa.ChunkedArray) else [col]
    for chunk in chunks:
        for leaf in _float_leaves(chunk):
            if len(leaf) and pc.any(pc.greater_equal(pc.abs(leaf), float(FLOAT_EXACT))).as_py():
                return True
    return False


def has_floats(t: pa.DataType) -> bool:
    """Whether a column of type ``t`` holds floats anywhere (nested included)."""
    if pa.types.is_floating(t):
        return True
    if pa.types.is_struct(t):
        return any(has_floats(t.field(i).type) for i in range(t.num_fields))
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return has_floats(t.value_type)
    return False


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _changed_by_float(v: int) -> bool:
    try:
        return float(v) != v
    except OverflowError:  # beyond float64's range altogether
        return True


def _numbers(value: Any) -> Iterable[Any]:
    if isinstance(value, dict):
        for v in value.values():
            yield from _numbers(v)
    elif isinstance(value, list):
        for v in value:
            yield from _numbers(v)
    elif _is_int(value) or isinstance(value, float):
        yield value


def first_rounded(values: list[Any]) -> tuple[int, int] | None:
    """``(row, integer)`` of the first integer in ``values`` (Python values, nested too) that a
    float64 does not hold exactly, or ``None``."""
    for row, value in enumerate(values):
        for v in _numbers(value):
            if _is_int(v) and _changed_by_float(v):
                return row, v
    return None


def exact_column(values: list[Any], name: str, path: str, fmt: str, got: str | None,
                 hint: str) -> pa.Array | None:
    """``values`` (one column's, as Python parsed them) as an exact Arrow column: ``uint64`` when they
    are integers in ``[0, 2**64)`` and some beyond int64; ``None`` when reading them as floats changes
    none; raises where neither holds them all.

    ``got``: the type the reader inferred (for the message; ``None`` where it inferred none);
    ``hint``: how to read the column exactly.
    """
    present = [v for v in values if v is not None]
    if all(_is_int(v) and 0 <= v < _UINT64_END for v in present) and any(v > _INT64_MAX for v in present):
        # Integers beyond int64 (a written uint64 column): uint64, whether or not a float64 would
        # happen to hold them (2**63 and 10**19 it does; the type would still change).
        return pa.array(values, pa.uint64())
    found = first_rounded(values)
    if found is None:
        return None
    row, bad = found
    if got is None:
        why = "no integer type holds it with the column's other values, and a float64 would change it"
    else:
        try:
            shown = f"{float(bad)!r}"
        except OverflowError:
            shown = "infinity"
        why = f"the column reads as {got}, which would make it {shown}"
    msg = f"{fmt} file {path!r}, column {name!r}, row {row + 1}: the integer {bad} cannot be read exactly: {why}"
    raise FileReadError(msg, hint)


def int_text_values(text: pa.Array, valid: pa.Array) -> list[Any]:
    """A CSV column read again as strings -> Python values: ints for integer literals, floats for
    the rest, ``None`` where ``valid`` (the first read's validity) is false."""
    out: list[Any] = []
    for s, ok in zip(text.to_pylist(), valid.to_pylist()):
        if not ok or s is None:
            out.append(None)
        elif _INT_TEXT.match(s):
            out.append(int(s))
        else:
            out.append(float("nan"))  # a float literal (the first read parsed it): not an integer
    return out
