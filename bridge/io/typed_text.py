"""Typed reads of the text formats: ``read_csv(schema=)`` and ``read_json(schema=)``.

CSV and JSON carry no types: read without a schema, Arrow infers them from the
text (``uint8`` comes back as ``int64``, an unquoted ``007`` as the number ``7``).
Given the schema (``ds.schema()`` of what was written), every column comes back
as that type, exactly what ``write_csv`` / ``write_json`` wrote:

* each column is parsed as the nearest type the parser reads (its *parse type*)
  and then converted to the schema's type: ``float16`` through ``float32``,
  ``time64`` (and CSV's ``decimal256``) through strings, ``duration`` through its
  integer count, a dictionary through its value type, base64 text back to
  binary, lists of ``{"key", "value"}`` objects back to a map, nested lists back
  to fixed- and variable-shape tensors;
* JSON decimals are the exact decimal of their text, number literals
  (``{"price": 12.34}``) and strings (``"12.34"``) alike: ``0.1`` is
  ``Decimal("0.1")``, never a float64's ``0.1000000000000000055...``;
  a literal with more digits than the type holds raises naming file, column,
  row and value, with the type that holds it (see :func:`json_decimal_texts`);
* a value that does not fit raises :class:`FileReadError` naming the file, the
  column and both types (nothing is cut to fit);
* a schema column missing from a file raises naming both; columns of the file
  that the schema does not name keep their inferred types, after the others.
"""

from __future__ import annotations

import base64
import decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from bridge import tensor
from bridge.io.paths import FileReadError


def _is_list(t: pa.DataType) -> bool:
    return pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)


def csv_parse_type(t: pa.DataType) -> pa.DataType:
    """The type ``pyarrow.csv`` parses a column of type ``t`` as (converted afterwards)."""
    if pa.types.is_float16(t):
        return pa.float32()
    if pa.types.is_decimal256(t) or pa.types.is_time(t):
        return pa.string()
    if pa.types.is_duration(t):
        return pa.int64()
    if pa.types.is_dictionary(t):
        return csv_parse_type(t.value_type)
    return t


def json_parse_type(t: pa.DataType) -> pa.DataType:
    """The type ``pyarrow.json`` parses a column of type ``t`` as (converted afterwards)."""
    if tensor.is_tensor(t):
        return pa.null()  # inferred: nested lists of any depth, converted row by row
    if pa.types.is_float16(t):
        return pa.float32()
    if pa.types.is_decimal(t):
        # pyarrow.json reads number literals and strings as a decimal from their text, exactly (as a string
        # it refused number literals). It refuses more digits after the point than the scale, but checks a
        # literal's own digits for the precision: 12.340 failed decimal128(4, 2), and 1234.5 read as
        # decimal128(5, 2) gave 1234.50, a value no decimal128(5, 2) holds. So: the widest decimal of the
        # scale, then convert()'s safe cast, which refuses exactly the values the type does not hold.
        return pa.decimal256(76, t.scale)
    if (pa.types.is_time(t) or pa.types.is_date(t) or pa.types.is_binary(t)
            or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t)):
        return pa.string()
    if pa.types.is_timestamp(t):
        # As text, then Arrow's cast (read_csv's parser): pyarrow.json applied a "+09:00" offset to a column
        # without a zone and dropped it (a naive 00:00 became 15:00 the day before), and read a text without
        # one into a zoned column as UTC; the cast refuses both, as read_csv does.
        return pa.string()
    if pa.types.is_duration(t):
        return pa.int64()
    if pa.types.is_dictionary(t):
        return json_parse_type(t.value_type)
    if pa.types.is_large_string(t):
        return pa.string()
    if pa.types.is_map(t):
        return pa.list_(pa.struct([("key", json_parse_type(t.key_type)), ("value", json_parse_type(t.item_type))]))
    if _is_list(t):
        return pa.list_(json_parse_type(t.value_type))
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, json_parse_type(f.type)) for f in t])
    return t


class LiteralFloat(float):
    """A float parsed by Python's ``json`` that keeps its literal text (``json.loads(...,
    parse_float=LiteralFloat)``): a decimal column reads the text, not the float64 it rounds to."""

    __slots__ = ("text",)
    text: str

    def __new__(cls, text: str) -> LiteralFloat:
        obj = super().__new__(cls, text)
        obj.text = text
        return obj


def has_decimal(t: pa.DataType) -> bool:
    """Whether a column of type ``t`` holds decimals anywhere (nested included)."""
    if tensor.is_tensor(t):
        return False
    if pa.types.is_decimal(t):
        return True
    if pa.types.is_dictionary(t):
        return has_decimal(t.value_type)
    if pa.types.is_map(t):
        return has_decimal(t.key_type) or has_decimal(t.item_type)
    if _is_list(t):
        return has_decimal(t.value_type)
    if pa.types.is_struct(t):
        return any(has_decimal(f.type) for f in t)
    return False


class DecimalMisfit(Exception):
    """A decimal literal its column's type does not hold (see :func:`json_decimal_texts`)."""

    def __init__(self, label: str, text: str, t: pa.DataType, why: str, wider: str | None) -> None:
        super().__init__(label, text)
        self.label, self.text, self.type, self.why, self.wider = label, text, t, why, wider

    def error(self, fmt: str, path: str, row: int) -> FileReadError:
        """The :class:`FileReadError` for row ``row`` (1-based) of ``path``."""
        msg = (f"{fmt} file {path!r}, column {self.label!r}, row {row}: {self.text} is no {self.type} value: "
               f"{self.why} (nothing is rounded)")
        if self.wider is not None:
            hint = f"read {self.label!r} as {self.wider} (schema=), which holds it"
        else:
            hint = f"no decimal type holds it: read {self.label!r} as pyarrow.string() or pyarrow.float64() (rounded)"
        return FileReadError(msg, hint)


def _check_decimal(text: str, t: pa.DataType, label: str) -> None:
    """Raise :class:`DecimalMisfit` where the decimal ``text`` has more digits than ``t`` holds (text that is
    no decimal at all is left to Arrow, which refuses it naming the column)."""
    try:
        d = decimal.Decimal(text)
    except (decimal.InvalidOperation, ValueError):
        return
    if not d.is_finite():
        raise DecimalMisfit(label, text, t, "it is not a finite number", None)
    if not d:
        return
    _, digits, exp = d.as_tuple()
    assert isinstance(exp, int)
    n = len(digits)
    while n > 1 and digits[n - 1] == 0:  # 12.340 needs the scale of 12.34 (normalize() would round)
        n -= 1
        exp += 1
    scale, whole = -exp, n + exp  # digits after the point (< 0: zeros before it), digits before it
    if scale <= t.scale and whole <= t.precision - t.scale:
        return
    if scale > t.scale:
        why = f"it has {scale} digit(s) after the point, the type's scale is {t.scale}" if scale > 0 else \
            f"it needs scale {scale}, the type's scale is {t.scale}"
    else:
        why = f"it has {whole} digit(s) before the point, the type's precision {t.precision} leaves " \
              f"{t.precision - t.scale}"
    new_scale = max(t.scale, scale)
    precision = max(t.precision - t.scale, whole) + new_scale
    wider = None
    if precision <= 38 and not pa.types.is_decimal256(t):
        wider = f"pyarrow.decimal128({precision}, {new_scale})"
    elif precision <= 76:
        wider = f"pyarrow.decimal256({precision}, {new_scale})"
    raise DecimalMisfit(label, text, t, why, wider)


def json_decimal_texts(value: Any, t: pa.DataType, label: str) -> Any:
    """``value`` (one column's, as Python's ``json`` parsed it with ``parse_float=LiteralFloat``) with every
    number or string where ``t`` has a decimal as its literal text, checked: :class:`DecimalMisfit` for one
    with more digits than the decimal holds.  Arrow then casts the text to the decimal, exactly.

    ``label`` names the place (``"price"``, ``"s.q"``, ``"l[]"``) for the error.
    """
    if value is None or tensor.is_tensor(t):
        return value
    if pa.types.is_dictionary(t):
        return json_decimal_texts(value, t.value_type, label)
    if pa.types.is_decimal(t):
        if isinstance(value, LiteralFloat):
            text = value.text
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            text = str(value)
        elif isinstance(value, str):
            text = value
        else:
            return value  # a bool, an object, ...: Arrow refuses it, naming the column
        _check_decimal(text, t, label)
        return text
    if pa.types.is_struct(t) and isinstance(value, dict):
        out = dict(value)
        for f in t:
            if f.name in out:
                out[f.name] = json_decimal_texts(out[f.name], f.type, f"{label}.{f.name}")
        return out
    if pa.types.is_map(t) and isinstance(value, list):  # written as [{"key": k, "value": v}, ...]
        entry = pa.struct([("key", t.key_type), ("value", t.item_type)])
        return [json_decimal_texts(v, entry, label) for v in value]
    if _is_list(t) and isinstance(value, list):
        return [json_decimal_texts(v, t.value_type, f"{label}[]") for v in value]
    return value


def _time_from_text(col: pa.Array, t: pa.DataType) -> pa.Array:
    """``"HH:MM:SS[.fffffffff]"`` -> time32/time64: as a timestamp on 1970-01-01, then its offset."""
    stamps = pc.cast(pc.binary_join_element_wise("1970-01-01 ", col, ""), pa.timestamp("ns"))
    ns = pc.cast(stamps, pa.int64())
    per = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}[t.unit]
    whole = pc.divide(ns, per)
    if pc.all(pc.equal(pc.multiply(whole, per), ns)).as_py() not in (True, None):
        raise pa.ArrowInvalid(f"a time has more digits than {t} holds")
    return pc.cast(pc.cast(whole, pa.int64() if t.bit_width == 64 else pa.int32()), t)


def _from_zero(col: pa.Array) -> pa.Array:
    """``col`` whose offsets start at zero (a slice's do not), so ``col.offsets`` index ``col.values``."""
    return pa.concat_arrays([col]) if col.offset else col


def _fixed_tensor_from_lists(col: pa.Array, t: pa.DataType) -> pa.Array:
    """Nested lists of ``t``'s shape -> the fixed-shape tensor, in Arrow (rows of another shape raise)."""
    valid = col.is_valid().to_numpy(zero_copy_only=False)
    level = col.filter(col.is_valid())
    for depth, size in enumerate(t.shape):
        lengths = pc.list_value_length(level)
        if level.null_count or pc.all(pc.equal(lengths, size)).as_py() not in (True, None):
            raise pa.ArrowInvalid(f"a row is not of shape {tuple(t.shape)} (dimension {depth})")
        level = level.flatten()
    size = int(np.prod(t.shape))
    values = pc.cast(level, t.value_type).to_numpy(zero_copy_only=False).reshape(-1, size)
    flat = np.zeros((len(col), size), dtype=values.dtype)
    flat[valid] = values
    storage = pa.FixedSizeListArray.from_arrays(pa.array(flat.reshape(-1), t.value_type), size,
                                                mask=pa.array(~valid))
    return pa.ExtensionArray.from_storage(t, storage)


def _tensor_from_lists(col: pa.Array, t: pa.DataType) -> pa.Array:
    if tensor.is_fixed_tensor(t) and _is_list(col.type):
        return _fixed_tensor_from_lists(col, t)
    from bridge.arrow_values import object_column

    # Variable shapes: each row's shape is its own nesting, read row by row.
    dtype = t.value_type.to_pandas_dtype()
    rows = [None if v is None else np.asarray(v, dtype=dtype) for v in col.to_pylist()]
    return object_column(rows, t)


def convert(col: pa.Array, t: pa.DataType) -> pa.Array:
    """A parsed column (see the parse types above) -> type ``t``; raises ``pa.ArrowInvalid`` where a value does
    not fit."""
    if col.type == t:
        return col
    if tensor.is_tensor(t):
        return _tensor_from_lists(col, t)
    if pa.types.is_dictionary(t):
        return pc.cast(pc.dictionary_encode(convert(col, t.value_type)), t)
    if pa.types.is_null(col.type):
        return pa.nulls(len(col), t)
    if pa.types.is_time(t):
        return _time_from_text(col, t)
    if pa.types.is_duration(t):
        return pc.cast(pc.cast(col, pa.int64()), t)
    if pa.types.is_timestamp(t) and pa.types.is_string(col.type):
        # Through microseconds (nanoseconds for ns): the cast from text refuses more fraction digits than its
        # unit, also zeros ("12:30:15.123000", as write_json writes a ms value); then a safe cast to the unit.
        return pc.cast(pc.cast(col, pa.timestamp("ns" if t.unit == "ns" else "us", t.tz)), t, safe=True)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return pa.array([None if v is None else base64.b64decode(v, validate=True) for v in col.to_pylist()], t)
    if pa.types.is_map(t):
        col = _from_zero(col)
        keys = convert(col.values.field("key"), t.key_type)
        items = convert(col.values.field("value"), t.item_type)
        return pa.MapArray.from_arrays(col.offsets, keys, items, type=t, mask=col.is_null())
    if _is_list(t) and _is_list(col.type):
        col = _from_zero(col)
        values = convert(col.values, t.value_type)
        inner = pa.ListArray.from_arrays(col.offsets, values, mask=col.is_null()) \
            if values.type != col.type.value_type else col
        return pc.cast(inner, t)
    if pa.types.is_struct(t) and pa.types.is_struct(col.type):
        fields = [convert(col.field(f.name), f.type) for f in t]
        return pa.StructArray.from_arrays(fields, fields=list(t), mask=col.is_null())
    return pc.cast(col, t, safe=True)


def apply_schema(table: pa.Table, schema: pa.Schema, path: str, fmt: str,
                 columns: list[str] | None = None) -> pa.Table:
    """``table`` as parsed from ``path`` -> the schema's columns and types first, then the file's other columns.

    ``columns``: the projection (only those of the schema's columns are expected).
    """
    from bridge.arrow_values import empty_array

    if columns is not None:
        schema = pa.schema([f for f in schema if f.name in columns])
    missing = [f.name for f in schema if f.name not in table.column_names]
    if missing and table.num_columns:
        msg = f"{fmt} file {path!r} has no column {missing[0]!r}, which schema= names"
        raise FileReadError(msg, f"drop {missing[0]!r} from schema=, or check the file's header")
    arrays, names = [], []
    for field in schema:
        if field.name not in table.column_names:  # an empty file: no header, no rows
            arrays.append(empty_array(field.type))
            names.append(field.name)
            continue
        col = table.column(field.name).combine_chunks()
        try:
            arrays.append(convert(col, field.type))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, ValueError, OverflowError) as err:
            msg = f"{fmt} file {path!r}, column {field.name!r}: cannot read {col.type} as {field.type}: {err}"
            raise FileReadError(msg, f"fix schema= for {field.name!r} (read without schema= to see the "
                                     "inferred type)") from err
        names.append(field.name)
    for name in table.column_names:
        if name not in schema.names:
            arrays.append(table.column(name))
            names.append(name)
    return pa.Table.from_arrays(arrays, names=names)
