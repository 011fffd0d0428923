"""Arrow columns -> the arrays a training framework takes; the rules shared by torch and tf.

Each column becomes one :class:`TrainingColumn`:

=================================  ==========================================================
Arrow type                         becomes
=================================  ==========================================================
int8..int64, uint8..uint64         ``dense`` ndarray of the same dtype (framework rules narrow it)
float16/32/64, bool                ``dense`` ndarray of the same dtype
timestamp[unit, tz]                ``dense`` int64: ``unit`` since the Unix epoch (UTC)  *
date32 / date64                    ``dense`` int64 days / milliseconds since the epoch   *
duration[unit]                     ``dense`` int64 in the column's unit                  *
time32/64[unit]                    ``dense`` int64 ``unit`` since midnight               *
arrow.fixed_shape_tensor           ``dense`` ``(rows, *shape)`` ndarray (no copy where Arrow allows)
string / binary (any width)        ``strings``: a Python list of ``str`` / ``bytes``
dictionary<values>                 decoded, then as its value type
run_end_encoded<values>            decoded, then as its value type
list / large_list of numbers       ``ragged``: flat values + row lengths (tf: ``RaggedTensor``)
variable-shape tensor              ``ragged`` list of ndarrays (torch: list of tensors)
decimal, struct, map, null         ``UnsupportedTypeError`` naming the column, with the cast to use
any column with nulls              ``UnsupportedTypeError`` naming the column and the null
                                   count, unless ``fill_nulls`` gives it a value
=================================  ==========================================================

``*``: torch and tf have no such type; the first batch of each such column gives a
:class:`~bridge.errors.ConversionWarning` naming the column, its type and the rule (once per
column and type in a process).
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from bridge import tensor
from bridge.batch import column_to_numpy
from bridge.errors import BridgeError, BridgeValueError, ConversionWarning, UnsupportedTypeError

#: (framework, column, type) already warned about: one warning per column and framework, not one per batch.
_warned_time_like: set[tuple[str, str, str]] = set()


@dataclasses.dataclass
class TrainingColumn:
    name: str
    #: "dense" | "strings" | "ragged" | "tensor_list"
    kind: str
    value: Any
    #: For "ragged": row lengths (int64 ndarray) of the flat ``value``.
    row_lengths: np.ndarray | None = None


def fill_column(col: pa.ChunkedArray, name: str, fill_nulls: Any, framework: str) -> pa.ChunkedArray:
    """``col`` with its nulls filled by its ``fill_nulls`` value; an error naming the column where there is none
    or the column cannot hold it (2.9 in int64, 300 in int8)."""
    if not col.null_count:
        return col
    value = fill_nulls.get(name) if isinstance(fill_nulls, dict) else fill_nulls
    if value is None:
        msg = (f"{framework}: column {name!r} ({col.type}) has {col.null_count} null(s) in this batch; "
               f"{framework} tensors cannot hold nulls")
        raise UnsupportedTypeError(msg, null_hint(name, col.type, framework))
    try:
        fill = value if pa.types.is_dictionary(col.type) else _exact_scalar(value, col.type)
        return pc.fill_null(col, fill)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OverflowError, ValueError) as err:
        msg = f"{framework}: cannot fill the nulls of column {name!r} ({col.type}) with {value!r}: {err}"
        example = _fill_example(col.type)
        hint = null_hint(name, col.type, framework) if example is None else \
            f"pass a fill value of the column's type that it holds exactly, e.g. fill_nulls={{{name!r}: {example}}}"
        raise UnsupportedTypeError(msg, hint) from err


def _fill_example(t: pa.DataType) -> str | None:
    """A ``fill_nulls`` value (as Python source) that a column of type ``t`` takes and that the column's
    tensor then holds, or ``None`` where no value makes the column usable (null, decimal, struct types)."""
    if pa.types.is_dictionary(t):
        t = t.value_type
    if pa.types.is_boolean(t):
        return "False"
    if pa.types.is_integer(t) or pa.types.is_floating(t) or _is_time_like(t):
        return "0"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "''"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return "b''"
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        inner = t.value_type
        if not (pa.types.is_integer(inner) or pa.types.is_floating(inner) or pa.types.is_boolean(inner)):
            return None
        if pa.types.is_fixed_size_list(t):
            return f"[{'False' if pa.types.is_boolean(inner) else '0'}] * {t.list_size}"
        return "[]"
    return None


def list_nulls_hint(name: str) -> str:
    """The hint of a null inside a list column's rows (``fill_nulls`` fills null rows, not elements)."""
    return (f"fill them inside the lists first, e.g. ds.map_batches(lambda t: t.set_column(t.schema.get_field_index("
            f"{name!r}), {name!r}, pa.array([None if r is None else [0 if v is None else v for v in r] for r in "
            f"t[{name!r}].to_pylist()], t[{name!r}].type)), batch_format='pyarrow'), or drop those rows")


def null_hint(name: str, t: pa.DataType, framework: str) -> str:
    """The hint of a nulls error: a ``fill_nulls`` value that works for a column of type ``t``, or what to do
    where no fill value would."""
    drop_rows = f"ds.filter(expr=pc.field({name!r}).is_valid())"
    example = _fill_example(t)
    if example is not None:
        return (f"pass fill_nulls={{{name!r}: {example}}} (or one value for every column), or drop/fill them first "
                f"with {drop_rows}")
    if pa.types.is_null(t):
        return (f"a column of type null holds nothing but nulls and no fill_nulls value fills it: drop it "
                f"(ds.drop_columns([{name!r}])) or cast it to the type its values should have")
    if tensor.is_fixed_tensor(t):
        return f"fill_nulls cannot fill a tensor row: drop those rows first with {drop_rows}"
    return (f"fill_nulls would not help: {framework} has no tensor type for {t}; cast the column first "
            f"(e.g. a decimal to float64) or drop it (ds.drop_columns([{name!r}]))")


def check_integer_cast(values: np.ndarray, lo: int, hi: int, *, name: str, target: str, where: str,
                       module: str, error: type[BridgeError] = BridgeValueError) -> None:
    """Raise ``error`` where ``dtypes`` casting ``values`` to the integer type ``target`` (which holds
    ``lo..hi``) would change a value: wrap it, cut its fraction, or turn NaN into a number.

    Free where the values' own type fits in ``lo..hi`` (a widening cast); else one min and one max
    (and, from floats, one test that the values are whole).  ``module``: ``torch`` / ``tf``, for the hint.
    """
    kind = values.dtype.kind
    if kind not in "iuf" or values.size == 0:
        return
    short = target.rsplit(".", 1)[-1]
    src = values.dtype.name
    low: float
    high: float
    if kind in "iu":
        info = np.iinfo(values.dtype)
        if lo <= info.min and info.max <= hi:
            return
        low, high = int(values.min()), int(values.max())
    else:
        low, high = float(values.min()), float(values.max())  # NaN if any value is NaN
    if kind == "f" and math.isnan(low):
        msg = (f"{where}: column {name!r} ({src}) holds nan, which {short} cannot hold; dtypes={target} would "
               f"make some number of it")
        raise error(msg, f"fill or drop the NaNs first, or keep a float dtype for {name!r} ({module}.{src})")
    if low < lo or high > hi:
        bad, edge = (low, f"below {short}'s smallest value ({lo})") if low < lo else \
            (high, f"above {short}'s largest value ({hi})")
        if kind == "u" and bad > np.iinfo(np.int64).max:
            wide = "uint64"  # (float64 would round it, and the cast to it is refused too)
        else:
            wide = "int64" if kind in "iu" and bad <= np.iinfo(np.int64).max and short != "int64" else "float64"
        msg = f"{where}: column {name!r} ({src}) holds {bad!r}, {edge}; dtypes={target} would wrap it"
        raise error(msg, f"pass a wider dtype for {name!r}, e.g. dtypes={{{name!r}: {module}.{wide}}}, "
                         f"or leave {name!r} out of dtypes")
    if kind == "f":
        flat = values.reshape(-1)
        whole = np.trunc(flat) == flat
        if not whole.all():
            bad = flat[int(np.flatnonzero(~whole)[0])].item()
            msg = (f"{where}: column {name!r} ({src}) holds {bad!r}, not a whole number; dtypes={target} would "
                   f"cut it to {int(bad)}")
            raise error(msg, f"keep a float dtype for {name!r} ({module}.{src}), or round the column first "
                             f"(ds.map_batches)")


def check_bool_cast(values: np.ndarray, *, name: str, target: str, where: str, module: str,
                    error: type[BridgeError] = BridgeValueError) -> None:
    """Raise ``error`` where ``dtypes`` casting numbers to the bool type ``target`` would change a value: a
    number other than 0 and 1 (2 and -7 became ``True``, 0.5 too; NaN as well)."""
    if values.dtype.kind not in "iuf" or values.size == 0:
        return
    flat = values.reshape(-1)
    bad = (flat != 0) & (flat != 1)  # (NaN too)
    if bad.any():
        value = flat[int(np.flatnonzero(bad)[0])].item()
        msg = (f"{where}: column {name!r} ({values.dtype.name}) holds {value!r}, which is neither 0 nor 1; "
               f"dtypes={target} would make it {bool(value)}")
        raise error(msg, f"make the column bool first where a test is meant, e.g. ds.map_batches(lambda t: "
                         f"t.set_column(t.schema.get_field_index({name!r}), {name!r}, pc.not_equal(t[{name!r}], 0)), "
                         f"batch_format='pyarrow'), or keep {module}.{values.dtype.name}")


#: Mantissa bits of the float dtypes ``dtypes`` may name: every integer up to 2**(bits + 1) is exact in them.
FLOAT_MANTISSA_BITS = {"float16": 10, "bfloat16": 7, "float32": 23, "float64": 52, "float8_e4m3fn": 3,
                       "float8_e4m3fnuz": 3, "float8_e5m2": 2, "float8_e5m2fnuz": 2, "float8_e8m0fnu": 0,
                       "float8_e4m3b11fnuz": 3}

#: Float dtypes without inf: a value past the largest becomes the largest (torch's ``float8_e4m3fn``: 1000.0
#: and inf become 448.0; tf's NaN) or NaN (the ``fnuz`` types), and inf itself becomes another value.
FLOATS_WITHOUT_INF = frozenset({"float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu",
                                "float8_e4m3b11fnuz"})

#: Float dtypes holding positive numbers only (powers of two): a negative value or zero becomes a positive one.
FLOATS_WITHOUT_SIGN = frozenset({"float8_e8m0fnu"})


def check_float_cast(values: np.ndarray, convert: Callable[[np.ndarray], np.ndarray], largest: float, *, name: str,
                     target: str, where: str, module: str, error: type[BridgeError] = BridgeValueError,
                     as_float: str | None = None) -> None:
    """Raise ``error`` where ``dtypes`` casting ``values`` to the float type ``target`` would change a value
    more than rounding a float to the nearest float of ``target`` does: an integer the type does not hold
    (2**53 + 1 in float64 became 2**53, 16777217 in float32 16777216, 17 in float8_e4m3fn 16: another
    integer, an id that names another row), a value past the type's largest (``largest``), which became inf
    (or, in a type without inf, the largest value or NaN: 1000.0 became 448.0 in torch's float8_e4m3fn), inf in
    a type without inf, or a negative number or zero in a type without them (float8_e8m0fnu).

    ``convert``: the framework's cast of an array, given back as float64 values.  Free where
    the values' own type fits the target (a widening cast); else one min and one max, and the cast of the
    values past the exact range only.  ``module``: ``torch`` / ``tf``, for the hint.  ``as_float``: the
    float type that judges a complex ``target`` (its parts' type: ``float32`` for ``complex64``).
    """
    kind = values.dtype.kind
    short = as_float or target.rsplit(".", 1)[-1]
    if kind not in "iuf" or values.size == 0 or short not in FLOAT_MANTISSA_BITS:
        return
    src = values.dtype.name
    flat = values.reshape(-1)
    if short in FLOATS_WITHOUT_SIGN:
        _check_positive(flat, convert, name=name, src=src, short=short, target=target, where=where,
                        module=module, error=error)
    if kind in "iu":
        exact = 2 ** (FLOAT_MANTISSA_BITS[short] + 1)
        info = np.iinfo(values.dtype)
        if -exact <= int(info.min) and int(info.max) <= exact:
            return
        if -exact <= int(flat.min()) and int(flat.max()) <= exact:
            return
        far = flat[(flat > exact) | (flat < -exact)] if info.min < 0 else flat[flat > exact]
        with np.errstate(all="ignore"):
            conv = convert(far)
        # Compared as integers (NumPy compares an int64 with a float64 as floats: 2**53 + 1 == 2**53).
        inside = np.isfinite(conv) & (conv >= float(info.min)) & (conv < float(info.max) + 1.0)
        with np.errstate(all="ignore"):
            back = np.where(inside, conv, 0.0).astype(values.dtype)
        bad = ~inside | (back != far)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            value, became = int(far[i]), float(conv[i])
            shown = f"{int(became)}" if math.isfinite(became) else str(became)
            wider = f"pass {module}.float64 (exact for every integer up to 2**53), " if short != "float64" else ""
            msg = (f"{where}: column {name!r} ({src}) holds {value}, which {short} cannot hold exactly; "
                   f"dtypes={target} would make it {shown}")
            keep = src if kind == "i" or value > np.iinfo(np.int64).max else "int64"
            raise error(msg, f"keep an integer dtype for {name!r} ({module}.{keep}), {wider}or leave {name!r} "
                             f"out of dtypes")
        return
    keeps_inf = short not in FLOATS_WITHOUT_INF
    if keeps_inf and float(np.finfo(values.dtype).max) <= largest:  # (a float: no cast of largest to float16)
        return
    # The common case in two reductions, nothing copied (fmin / fmax pass NaN over, as fast as min / max):
    # every value within the target's range.
    low, high = float(np.fmin.reduce(flat)), float(np.fmax.reduce(flat))
    if math.isnan(low) or max(-low, high) <= largest:
        return  # (NaN: every value is NaN, which every float type holds)
    with np.errstate(all="ignore"):
        far = flat[(flat > largest) | (flat < -largest)]  # (inf too: a type with inf keeps it, as judged below)
        conv = convert(far)
        # Past the largest value by more than half a step there: IEEE types round that to inf, types without
        # inf to their largest value (or NaN); inf itself must stay inf.
        half_step = 2.0 ** (math.floor(math.log2(largest)) - FLOAT_MANTISSA_BITS[short] - 1)
        bad = np.where(np.isfinite(far), ~np.isfinite(conv) | (np.abs(conv - far) > half_step), conv != far)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        value, became = far[i].item(), float(conv[i])
        msg = (f"{where}: column {name!r} ({src}) holds {value!r}, past {short}'s largest value ({largest:g}); "
               f"dtypes={target} would make it {became!r}")
        wider = f"{module}.complex128" if as_float else f"{module}.{src}"  # (a complex target: a complex type)
        raise error(msg, f"pass a wider {'complex' if as_float else 'float'} dtype for {name!r} ({wider}), or "
                         f"scale or clip the column first (ds.map_batches)")


def _check_positive(flat: np.ndarray, convert: Callable[[np.ndarray], np.ndarray], *, name: str, src: str,
                    short: str, target: str, where: str, module: str, error: type[BridgeError]) -> None:
    """A target of positive numbers only (:data:`FLOATS_WITHOUT_SIGN`): a value of ``flat`` at or below zero is
    refused (float8_e8m0fnu made -1000.0 1024.0 and 0.0 5.9e-39)."""
    with np.errstate(all="ignore"):
        bad = flat <= 0
    if bad.any():
        value = flat[int(np.flatnonzero(bad)[0])]
        with np.errstate(all="ignore"):
            became = float(convert(np.asarray([value]))[0])
        msg = (f"{where}: column {name!r} ({src}) holds {value.item()!r}, and {short} holds no negative number "
               f"and no zero; dtypes={target} would make it {became!r}")
        raise error(msg, f"keep a signed float dtype for {name!r} ({module}.float32), or leave {name!r} out of "
                         f"dtypes")


def _exact_scalar(value: Any, t: pa.DataType) -> pa.Scalar:
    """``value`` as a scalar of type ``t``, or ``ValueError`` where it would become another number
    (``pa.scalar(2.9, pa.int64())`` truncates to 2, ``pa.scalar(1e40, pa.float32())`` is inf); a float
    column takes its nearest value (0.1 in float32), as any float written to it would."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not (pa.types.is_integer(t) or pa.types.is_floating(t)):
        return _exact_other(value, t)
    scalar = pa.scalar(value, type=t)
    back = scalar.as_py()
    if pa.types.is_floating(t):
        changed = math.isinf(back) and not math.isinf(value)
    else:
        changed = back != value
    if changed:
        raise ValueError(f"as {t} it would be {back!r}")
    return scalar


def _exact_other(value: Any, t: pa.DataType) -> pa.Scalar:
    """:func:`_exact_scalar` for the other values and types: ``pa.scalar(value, type=t)`` truncates without a
    word (1.5 into ``timestamp[s]`` is 1 s, a datetime's microseconds into ``timestamp[s]`` are dropped,
    ``Decimal("2.5")`` into int64 is 2, ``[9.5]`` into ``list<int64>`` is ``[9]``).  So the value is also
    taken as the type pyarrow infers for it and cast to ``t`` with Arrow's safe cast, which refuses a
    cast that changes a value; a number into a time-like type, which Arrow does not cast, must be whole."""
    scalar = pa.scalar(value, type=t)
    if getattr(value, "nanoseconds" if hasattr(value, "components") else "nanosecond", 0):
        # A pandas Timestamp / Timedelta with nanoseconds: pyarrow infers microseconds for it (below, its
        # nanoseconds would pass unseen); only a nanosecond unit holds it.
        if getattr(t, "unit", None) != "ns":
            raise ValueError(f"as {t} it would be {scalar.as_py()!r}")
        return scalar
    if pa.types.is_date(t) and isinstance(value, datetime.datetime) and (value.time() != datetime.time(0)
                                                                         or value.tzinfo is not None):
        raise ValueError(f"as {t} it would be {scalar.as_py()!r} (the time of day dropped)")
    if pa.types.is_decimal(t):
        return scalar  # (pyarrow refuses a decimal that loses digits itself; an int cast safely may not fit)
    try:
        inferred = pa.scalar(value)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError, ValueError, OverflowError):
        return scalar  # (nothing to compare with, e.g. an int beyond int64 for a uint64 list: as pyarrow takes it)
    if inferred.type == t or not inferred.is_valid:
        return scalar
    try:
        exact = inferred.cast(t, safe=True)
    except pa.ArrowNotImplementedError:
        whole = not isinstance(value, (float, np.floating)) or float(value).is_integer()
        if isinstance(value, decimal.Decimal):
            whole = value == value.to_integral_value()
        if not whole:
            raise ValueError(f"as {t} it would be {scalar.as_py()!r}") from None
        return scalar
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        raise ValueError(f"as {t} it would be {scalar.as_py()!r}") from None
    if not exact.equals(scalar):
        raise ValueError(f"as {t} it would be {scalar.as_py()!r}")
    return scalar


def _int64_meaning(t: pa.DataType) -> tuple[str, str]:
    """What the int64 of a time-like type counts, and the rule's name."""
    if pa.types.is_timestamp(t):
        return f"{t.unit} since the Unix epoch (UTC)", "timestamps -> int64"
    if pa.types.is_date32(t):
        return "days since the Unix epoch", "dates -> int64"
    if pa.types.is_date64(t):
        return "milliseconds since the Unix epoch", "dates -> int64"
    if pa.types.is_duration(t):
        return t.unit, "durations -> int64"
    return f"{t.unit} since midnight", "times of day -> int64"


def _time_like_to_int64(col: pa.ChunkedArray, name: str, framework: str) -> np.ndarray:
    t = col.type
    key = (framework, name, str(t))
    if key not in _warned_time_like:
        _warned_time_like.add(key)
        meaning, rule = _int64_meaning(t)
        warnings.warn(f"{framework}: column {name!r} ({t}) is handed over as int64 {meaning} "
                      f"(rule: {rule}; {framework} has no such type)", ConversionWarning, stacklevel=4)
    storage = pa.int32() if pa.types.is_date32(t) or pa.types.is_time32(t) else pa.int64()
    return np.asarray(column_to_numpy(col.cast(storage))).astype(np.int64, copy=False)


def _is_time_like(t: pa.DataType) -> bool:
    return pa.types.is_timestamp(t) or pa.types.is_date(t) or pa.types.is_duration(t) or pa.types.is_time(t)


#: (framework, column) pairs already warned about as a pandas index handed over as a feature.
_warned_index: set[tuple[str, str]] = set()


def training_column(block: pa.Table, name: str, *, fill_nulls: Any = None, framework: str = "torch",
                    column: pa.ChunkedArray | None = None) -> TrainingColumn:
    """One column of ``block`` by the rules of the module docstring (``column``: that column, if at hand)."""
    col = block.column(name) if column is None else column
    t = col.type
    if name.startswith("__index_level_") and (framework, name) not in _warned_index:
        _warned_index.add((framework, name))
        warnings.warn(f"{framework}: column {name!r} is the index of a pandas frame given to from_pandas (a "
                      "filtered or sampled frame's row labels), handed over as a feature like any column; "
                      "drop it with ds.drop_columns([...]) or pass from_pandas(df.reset_index(drop=True))",
                      ConversionWarning, stacklevel=4)
    if not col.null_count and col.num_chunks and (pa.types.is_floating(t) or pa.types.is_integer(t)):
        # The common case, first and cheapest: a zero-copy view of one chunk's values
        # (several chunks, from a batch that straddles two blocks: one concatenation).
        return TrainingColumn(name, "dense", col.chunk(0).to_numpy() if col.num_chunks == 1 else col.to_numpy())
    if tensor.is_fixed_tensor(t):
        if col.null_count:
            msg = f"{framework}: tensor column {name!r} has {col.null_count} null row(s)"
            raise UnsupportedTypeError(msg, "drop those rows first: ds.filter(expr=pc.field(...).is_valid())")
        return TrainingColumn(name, "dense", tensor.tensor_to_numpy(col))
    if tensor.is_variable_tensor(t):
        return TrainingColumn(name, "tensor_list", list(tensor.tensor_to_numpy(col)))
    if pa.types.is_dictionary(t):
        col = col.cast(t.value_type)
        t = col.type
    elif pa.types.is_run_end_encoded(t):
        col = pc.run_end_decode(col)
        t = col.type
    col = fill_column(col, name, fill_nulls, framework)
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t):
        return TrainingColumn(name, "dense", column_to_numpy(col))
    if _is_time_like(t):
        return TrainingColumn(name, "dense", _time_like_to_int64(col, name, framework))
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) or pa.types.is_large_binary(t) \
            or pa.types.is_fixed_size_binary(t):
        return TrainingColumn(name, "strings", col.to_pylist())
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        inner = t.value_type
        if pa.types.is_integer(inner) or pa.types.is_floating(inner) or pa.types.is_boolean(inner):
            arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
            if isinstance(arr, pa.ChunkedArray):  # no chunks at all
                arr = pa.array([], type=t)
            lengths = pc.list_value_length(arr).fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
            values = pc.list_flatten(arr)
            if values.null_count:
                msg = f"{framework}: list column {name!r} holds {values.null_count} null element(s)"
                raise UnsupportedTypeError(msg, list_nulls_hint(name))
            return TrainingColumn(name, "ragged", column_to_numpy(values), row_lengths=lengths)
    msg = f"{framework}: column {name!r} has type {t}, which has no tensor equivalent"
    hint = "cast it first, e.g. ds.map_batches(lambda t: t.set_column(...), batch_format='pyarrow'), or drop it"
    if pa.types.is_decimal(t):
        hint = f"cast it to float64: ds.map_batches(lambda t: t.set_column(t.schema.get_field_index({name!r}), " \
               f"{name!r}, t[{name!r}].cast('float64')), batch_format='pyarrow')"
    raise UnsupportedTypeError(msg, hint)


def refuse_text_cast(name: str, want: Any, where: str, *, every_column: bool) -> None:
    """A ``dtypes`` cast of text column ``name`` to ``want`` (a number type): torch would leave the text as it
    is without a word (its strings stay lists), tf fails in its Cast kernel naming no column."""
    msg = f"{where}: dtypes asks for column {name!r} as {want}, but it holds text, which is not cast to numbers"
    if every_column:
        hint = (f"pass dtypes as a dict naming only the number columns, e.g. dtypes={{'x': {want}}}; "
                f"or turn {name!r} into numbers first (a vocabulary lookup in map_batches), or drop it")
    else:
        hint = f"leave {name!r} out of dtypes (text comes as strings), or turn it into numbers first in map_batches"
    raise BridgeValueError(msg, hint)


def check_dtype_columns(dtypes: Any, names: list[str], where: str, what: str = "dtypes") -> None:
    """A ``dtypes`` (or ``fill_nulls``: ``what``) key naming no column (torch's or tf's) would be ignored: the cast
    or fill asked for would never happen."""
    if not isinstance(dtypes, dict):
        return
    unknown = [k for k in dtypes if k not in names]
    if unknown:
        raise BridgeValueError(f"{where}: {what} names {unknown} but the data has no such column (columns: {names})",
                               "name the columns as ds.schema() does, or drop those keys")
