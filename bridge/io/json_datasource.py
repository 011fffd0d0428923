"""JSON files through ``pyarrow.json``: newline-delimited JSON (one object per line).

A file holding one JSON array of objects is read too (through the ``json``
module, so only for small files).
"""

from __future__ import annotations

import copy
import dataclasses
import json
import re
import sys
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.json as pajson

from bridge.io.file_datasource import FileDatasource, FileFormat
from bridge.io.paths import FileReadError


@dataclasses.dataclass
class JSONFormat(FileFormat):
    read_options: Any = None
    parse_options: Any = None
    schema: pa.Schema | None = None
    #: ``True``: JSON lines only; ``False``: one JSON document per file; ``None``: either, by the first byte.
    lines: bool | None = None

    name = "JSON"
    extensions = ("json", "jsonl", "ndjson", "json.gz", "jsonl.gz")
    inflation = 0.7
    hint = "read_json expects JSON lines: one object per line, e.g. {\"a\": 1}"

    def read(self, fs: pafs.FileSystem, path: str, columns: list[str] | None) -> Iterator[pa.Table]:
        with fs.open_input_stream(path) as f:
            data = f.read()
        table = self._parse(data, path)
        if self.schema is not None:
            from bridge.io.typed_text import apply_schema

            try:
                table = apply_schema(table, self.schema, path, "JSON", columns)
            except FileReadError:
                _raise_decimal_misfit(data, path, self.schema)  # a decimal too wide for its type: say which
                raise
        if columns is not None:
            table = table.select([c for c in columns if c in table.column_names])
        yield table

    def _parse_options(self) -> Any:
        if self.schema is None:
            return self.parse_options
        from bridge.io.typed_text import json_parse_type

        fields = [pa.field(f.name, json_parse_type(f.type)) for f in self.schema]
        explicit = pa.schema([f for f in fields if not pa.types.is_null(f.type)])
        options = copy.copy(self.parse_options) if self.parse_options is not None else pajson.ParseOptions()
        options.explicit_schema = explicit
        return options

    def _parse(self, data: bytes, path: str) -> pa.Table:
        if not data.strip():
            # An empty file is what write_json leaves for a Dataset without rows: no rows, and
            # no columns unless parse_options gives an explicit_schema.
            schema = getattr(self.parse_options, "explicit_schema", None)
            from bridge.block import empty_table

            return empty_table(schema or pa.schema([]))
        is_array = data.lstrip()[:1] == b"["
        if self.lines is True and is_array:
            msg = f"read_json(lines=True): {path!r} holds a JSON array, not one object per line"
            raise FileReadError(msg, "pass lines=False (or leave lines unset) to read a file holding one document")
        if self.lines is False or is_array:
            return _document_table(data, path, self.schema, lines=self.lines)
        parse_options = self._parse_options()
        explicit = getattr(parse_options, "explicit_schema", None)
        try:
            table = self._read_lines(data, parse_options)
        except pa.ArrowInvalid:
            # pyarrow.json refuses a decimal literal with more digits than its type holds, naming neither
            # the column nor the row: find them (one more pass over the text, only on this error path).
            _raise_decimal_misfit(data, path, self.schema if self.schema is not None else explicit)
            _raise_kind_change(sys.exc_info()[1], data, path, self.schema if self.schema is not None else explicit)
            raise
        if _invalid_nested(table) is not None:
            table = self._read_again_typed(data, parse_options, table.schema, path)
        if self.schema is None:
            _check_decimals(table, data, path, explicit)  # parse_options' own explicit_schema
        return _exact_integers(table, data, path, explicit)

    def _read_again_typed(self, data: bytes, parse_options: Any, schema: pa.Schema, path: str) -> pa.Table:
        """``data`` read once more with the types pyarrow inferred given as its explicit schema.

        Inferring, pyarrow 26's JSON reader builds list columns whose offsets overrun their values
        where a list holds a null before the item's type is known (``[null, {"a": 1}]``): the values
        came back shifted into other rows, the null gone.  Given the types it reads them right.
        """
        options = copy.copy(parse_options) if parse_options is not None else pajson.ParseOptions()
        options.explicit_schema = schema
        table = self._read_lines(data, options)
        bad = _invalid_nested(table)
        if bad is not None:
            msg = f"read_json: pyarrow's JSON reader built an invalid column {bad[0]!r} of {path!r}: {bad[1]}"
            raise FileReadError(msg, "pass schema= with the column's type, e.g. schema=ds.schema() of the "
                                     "Dataset that wrote it")
        return table

    def _read_lines(self, data: bytes, parse_options: Any) -> pa.Table:
        kwargs = {}
        if self.read_options is not None:
            kwargs["read_options"] = self.read_options
        if parse_options is not None:
            kwargs["parse_options"] = parse_options
        try:
            return pajson.read_json(pa.BufferReader(data), **kwargs)
        except pa.ArrowInvalid as err:
            if "straddl" not in str(err) or self.read_options is None:
                raise
            # A record longer than the read_options' block_size: read the file as one block (the
            # whole file is in memory already), as Ray Data falls back to.
            wide = pajson.ReadOptions(use_threads=self.read_options.use_threads, block_size=len(data) + 1)
            return pajson.read_json(pa.BufferReader(data), **{**kwargs, "read_options": wide})


def _invalid_nested(table: pa.Table) -> tuple[str, str] | None:
    """The first list or struct column of ``table`` whose arrays do not hold together (name, why), else
    ``None``: a full validation, of the nested columns only (flat ones pyarrow builds right)."""
    for name, column in zip(table.column_names, table.columns):
        if pa.types.is_nested(column.type):
            try:
                column.validate(full=True)
            except pa.ArrowInvalid as err:
                return name, str(err)
    return None


#: An integer literal of 16 digits or more (2**53, the first integer a double may round, has 16): a run
#: of digits not after a digit, ``.`` or an exponent's ``e`` and not before one (a false match in a
#: string only costs the exact second look).
_LONG_INT = re.compile(rb"(?<![0-9.eE])[0-9]{16,}(?![0-9.eE])")


def _exact_integers(table: pa.Table, data: bytes, path: str, explicit: pa.Schema | None) -> pa.Table:
    """``table`` with no integer literal of the text rounded (see :mod:`bridge.io.exact_numbers`).

    Only float columns ``pyarrow.json`` inferred (not those an explicit schema types) whose values
    reach ``2**53``, in a text holding an integer literal of 16 digits or more, are looked at again,
    through Python's ``json`` (exact integers).
    """
    from bridge.io.exact_numbers import has_floats, may_hold_rounded_ints

    named = set(explicit.names) if explicit is not None else set()
    suspects = [f.name for f in table.schema if f.name not in named and has_floats(f.type)
                and may_hold_rounded_ints(table.column(f.name))]
    if not suspects or not _LONG_INT.search(data):
        return table  # no integer literal long enough to have been rounded: floats such as 1e+20 are exact
    rows = _json_objects(data)
    if len(rows) != table.num_rows:  # pragma: no cover - pyarrow and json disagree on the rows
        msg = f"read_json: {path!r} reads as {table.num_rows} rows with pyarrow and {len(rows)} with json"
        raise FileReadError(msg, "check the file for lines holding more or fewer than one object")
    for name in suspects:
        values = [r.get(name) if isinstance(r, dict) else None for r in rows]
        col = _exact_column(values, name, path, str(table.schema.field(name).type))
        if col is not None:
            table = table.set_column(table.schema.get_field_index(name), name, col)
    return table


def _check_decimals(table: pa.Table, data: bytes, path: str, explicit: pa.Schema | None) -> None:
    """Refuse a decimal that ``pyarrow.json`` read with more digits than its type holds, where
    ``parse_options.explicit_schema`` types it (``schema=`` reads decimals through a wider type and a
    safe cast instead, see :func:`bridge.io.typed_text.json_parse_type`).

    pyarrow checks a literal's own digits, not those it has at the type's scale: ``1234.5`` read as
    ``decimal128(5, 2)`` gave ``1234.50``, six digits, which no ``decimal128(5, 2)`` holds (Arrow's full
    validation finds them, in the columns holding decimals only)."""
    from bridge.io.typed_text import has_decimal

    for field in explicit or ():
        if not has_decimal(field.type) or field.name not in table.column_names:
            continue
        try:
            table.column(field.name).validate(full=True)
        except pa.ArrowInvalid as err:
            _raise_decimal_misfit(data, path, explicit)
            msg = f"JSON file {path!r}, column {field.name!r}: a value does not fit {field.type}: {err}"
            raise FileReadError(msg, f"widen {field.name!r}'s decimal type in parse_options.explicit_schema") from err


def _raise_decimal_misfit(data: bytes, path: str, explicit: pa.Schema | None) -> None:
    """Raise :class:`FileReadError` naming file, column, row and value for the first decimal literal of
    the JSON-lines ``data`` that ``explicit`` types with fewer digits than it has; return if none."""
    from bridge.io.typed_text import DecimalMisfit, LiteralFloat, has_decimal, json_decimal_texts

    fields = [f for f in explicit or () if has_decimal(f.type)]
    if not fields:
        return
    try:
        rows = _json_objects(data, parse_float=LiteralFloat)
    except ValueError:  # not JSON throughout (json.JSONDecodeError, bad UTF-8): pyarrow's error says so
        return
    for i, row in enumerate(rows):
        for field in fields:
            try:
                json_decimal_texts(row.get(field.name) if isinstance(row, dict) else None, field.type, field.name)
            except DecimalMisfit as misfit:
                raise misfit.error("JSON", path, i + 1) from None


#: pyarrow.json's refusal of a value of another JSON kind than its column's ("row" counts from the start
#: of one of its blocks, not of the file).
_KIND_CHANGE = re.compile(r"Column\((/[^)]*)\) changed from (\w+) to (\w+)")

_KINDS = {"number": (int, float), "string": (str,), "array": (list,), "object": (dict,), "boolean": (bool,)}


def _raise_kind_change(err: BaseException | None, data: bytes, path: str, explicit: pa.Schema | None) -> None:
    """Raise :class:`FileReadError` naming the column, the line and the kinds for pyarrow's "Column(/a)
    changed from number to string in row N" (its row counts within a block, and its hint was none); return
    where ``err`` is another error."""
    match = _KIND_CHANGE.search(str(err))
    if match is None:
        return
    keys, was, got = match.group(1).strip("/").split("/"), match.group(2), match.group(3)
    name = ".".join(keys)
    typed = explicit.field(keys[0]).type if explicit is not None and keys[0] in explicit.names else None
    line = _first_line_of_kind(data, keys, got)
    where = f" on line {line}" if line is not None else ""
    said = f"schema= reads it as {typed}" if typed is not None else f"the rows before hold {_a(was)}"
    msg = f"read_json: column {name!r} of {path!r} holds {_a(got)}{where} where {said}"
    at = "" if line is None else f" on line {line}"
    if typed is not None:
        hint = f"fix the value{at}, or give {keys[0]!r} a type for {got}s in schema= if that is what the column holds"
    else:
        hint = (f"a JSON column is read as values of one kind: make every {name!r} value {_a(was)} or every one "
                f"{_a(got)} (a number in quotes is read as text); the first {got} is{at or ' in the file'}")
    raise FileReadError(msg, hint) from err


def _a(kind: str) -> str:
    return f"an {kind}" if kind[:1] in "aeiou" else f"a {kind}"


def _first_line_of_kind(data: bytes, keys: list[str], kind: str) -> int | None:
    """The 1-based line of the first JSON-lines row whose value at ``keys`` is of JSON ``kind``, if any."""
    types = _KINDS.get(kind)
    if types is None:
        return None
    first = keys[0].encode()
    for number, raw in enumerate(data.splitlines(), start=1):
        if first not in raw:  # (cheap: only lines naming the column are parsed)
            continue
        try:
            value: Any = json.loads(raw)
        except ValueError:
            return None  # a value spanning lines: the line cannot be told this way
        for key in keys:
            value = value.get(key) if isinstance(value, dict) else None
        if isinstance(value, types) and not (kind == "number" and isinstance(value, bool)):
            return number
    return None


def _json_objects(data: bytes, parse_float: Any = None) -> list[Any]:
    """Every JSON value of a JSON-lines text, in order (a value may span lines)."""
    text = data.decode("utf-8")
    decoder = json.JSONDecoder(parse_float=parse_float)
    out: list[Any] = []
    i, n = 0, len(text)
    while True:
        while i < n and text[i] in " \t\r\n":
            i += 1
        if i >= n:
            return out
        value, i = decoder.raw_decode(text, i)
        out.append(value)


def _exact_column(values: list[Any], name: str, path: str, got: str | None) -> pa.Array | None:
    from bridge.io.exact_numbers import exact_column

    hint = (f"read {name!r} with an exact type: parse_options=pyarrow.json.ParseOptions(explicit_schema="
            f"pyarrow.schema([({name!r}, pyarrow.decimal128(38, 0))])) for integers (a decimal with digits "
            f"after the point, e.g. pyarrow.decimal128(38, 6), where floats share the column), or "
            f"pyarrow.int64() / pyarrow.uint64() where every value fits one")
    return exact_column(values, name, path, "JSON", got, hint)


def _document_table(data: bytes, path: str, schema: pa.Schema | None = None, lines: bool | None = False) -> pa.Table:
    """One JSON document: an array of objects is one row each, an object is one row.

    Where ``schema`` types a column (or a nested field) as a decimal, its numbers are read as their
    literal text (Python's ``json`` would make them float64, rounding ``0.1``), which
    :func:`bridge.io.typed_text.apply_schema` then casts exactly; a literal the decimal does not hold
    raises naming file, column, row and value."""
    from bridge.io.typed_text import DecimalMisfit, LiteralFloat, has_decimal, json_decimal_texts

    decimals = [f for f in schema or () if has_decimal(f.type)]
    try:
        doc = json.loads(data, parse_float=LiteralFloat if decimals else None)
    except json.JSONDecodeError as err:
        if lines is not False:  # a file starting with "[" that is no JSON document: pyarrow's error, as before
            raise
        msg = f"read_json(lines=False): {path!r} is not one JSON document: {err}"
        raise FileReadError(msg, "pass lines=True (or leave lines unset) for JSON lines: one object per line") \
            from err
    rows = doc if isinstance(doc, list) else [doc]
    bad = next((r for r in rows if not isinstance(r, dict)), None)
    if bad is not None:
        msg = f"read_json: {path!r} holds a {type(bad).__name__} where a row (a JSON object) was expected"
        raise FileReadError(msg, "each row must be an object such as {\"a\": 1}")
    for i, row in enumerate(rows):
        for field in decimals:
            if field.name in row:
                try:
                    row[field.name] = json_decimal_texts(row[field.name], field.type, field.name)
                except DecimalMisfit as misfit:
                    raise misfit.error("JSON", path, i + 1) from None
    return _rows_table(rows, path)


def _rows_table(rows: list[Any], path: str) -> pa.Table:
    """Objects -> a table with every key any of them has (``pa.Table.from_pylist`` takes the first
    object's keys only: a key the first lacked was dropped from every row), null where one is missing.

    Integers are kept exact: a column of them beyond ``int64`` is ``uint64`` where every value fits
    one, and one that no Arrow type infers exactly raises (see :mod:`bridge.io.exact_numbers`)."""
    if not rows:
        return pa.table({})
    try:
        return pa.Table.from_struct_array(pa.array(rows))
    except (OverflowError, pa.ArrowInvalid) as err:
        first = err
    # One column at a time, to find the one Arrow refused and read it exactly, or say which it is.
    names = list(dict.fromkeys(k for r in rows for k in r))
    arrays = []
    for name in names:
        values = [r.get(name) for r in rows]
        try:
            arrays.append(pa.array(values))
            continue
        except (OverflowError, pa.ArrowInvalid):
            pass
        col = _exact_column(values, name, path, None)
        if col is None and all(v is None or isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
            # Numbers a float64 holds exactly (1.5 beside 2**63): exact_column found none it would change.
            col = pa.array([None if v is None else float(v) for v in values], pa.float64())
        if col is None:
            raise first
        arrays.append(col)
    return pa.Table.from_arrays(arrays, names=names)


class JSONDatasource(FileDatasource):
    """JSON-lines files (see :func:`bridge.read_json`)."""

    #: Parsing runs in Arrow's C++ (bridge.execution.driver_read): 16 files, 1.6M rows of 4 columns,
    #: iterated on 2 cores, one process alternating: 0.99-1.37 s through Ray tasks, 0.80-1.15 s here.
    reads_in_driver = True

    def __init__(self, paths: Any, *, read_options: Any = None, parse_options: Any = None,
                 schema: pa.Schema | None = None, lines: bool | None = None, **kwargs: Any) -> None:
        if schema is not None and getattr(parse_options, "explicit_schema", None) is not None:
            from bridge.errors import BridgeError

            raise BridgeError("read_json: pass schema= or parse_options.explicit_schema, not both",
                              "schema= alone: it also converts the types JSON text cannot name")
        if lines not in (None, True, False):
            from bridge.errors import BridgeTypeError

            raise BridgeTypeError(f"read_json(lines=...) must be True, False or None; got {lines!r}",
                                  "lines=True for one object per line, False for one document per file")
        super().__init__(JSONFormat(read_options, parse_options, schema, lines), paths, what="read_json",
                         **kwargs)
