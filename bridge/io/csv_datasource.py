"""CSV files through ``pyarrow.csv``: one read task per group of files, types inferred by Arrow.

A row with the wrong number of columns raises :class:`FileReadError` naming the
file and the line; ``on_bad_lines="skip"`` drops such rows and warns with the
count and the first bad line of each file (``"warn"`` is an alias).
"""

from __future__ import annotations

import copy
import dataclasses
import warnings
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.fs as pafs

from bridge.errors import BridgeError
from bridge.io.file_datasource import FileDatasource, FileFormat
from bridge.io.paths import FileReadError

ON_BAD_LINES = ("error", "skip", "warn")


class BadLinesSkippedWarning(UserWarning):
    """Rows of a CSV file were dropped because ``on_bad_lines="skip"``."""


@dataclasses.dataclass
class CSVFormat(FileFormat):
    read_options: Any = None
    parse_options: Any = None
    convert_options: Any = None
    on_bad_lines: str = "error"
    schema: pa.Schema | None = None

    name = "CSV"
    extensions = ("csv", "csv.gz", "csv.bz2", "csv.zst", "tsv", "tsv.gz", "tsv.bz2", "tsv.zst")
    inflation = 1.0
    hint = "check the delimiter (parse_options=pyarrow.csv.ParseOptions(delimiter=...)) and the header"

    def __post_init__(self) -> None:
        if self.on_bad_lines not in ON_BAD_LINES:
            msg = f"read_csv(on_bad_lines=...) must be one of {ON_BAD_LINES}; got {self.on_bad_lines!r}"
            raise BridgeError(msg, 'pass on_bad_lines="skip" to drop malformed rows, "error" to stop on them')

    def read(self, fs: pafs.FileSystem, path: str, columns: list[str] | None) -> Iterator[pa.Table]:
        bad: list[Any] = []
        skip = self.on_bad_lines != "error"

        def on_invalid_row(row: Any) -> str:
            bad.append(row)
            return "skip" if skip else "error"

        parse = copy.copy(self.parse_options) if self.parse_options is not None else pcsv.ParseOptions()
        if self.parse_options is None and path.lower().endswith((".tsv", ".tsv.gz", ".tsv.bz2", ".tsv.zst")):
            parse.delimiter = "\t"  # a .tsv file's fields are tab-separated (it is read by default)
        parse.invalid_row_handler = on_invalid_row
        # One task reads serially: row numbers are then known, and Ray already runs tasks in parallel.
        read = copy.copy(self.read_options) if self.read_options is not None else pcsv.ReadOptions()
        read.use_threads = False
        if self.convert_options is not None:
            convert = copy.copy(self.convert_options)
        else:
            # Rule (as pandas): an empty unquoted field is null, a quoted "" is an empty string;
            # write_csv quotes every string, so nulls and "" both survive a round trip.  "nan" is
            # NaN, not null (write_csv writes NaN so; Arrow's default list of null spellings has it).
            convert = pcsv.ConvertOptions(strings_can_be_null=True, quoted_strings_can_be_null=False,
                                          null_values=_NULL_SPELLINGS)
        if self.schema is not None:
            from bridge.io.typed_text import csv_parse_type

            convert.column_types = {**{f.name: csv_parse_type(f.type) for f in self.schema},
                                    **dict(convert.column_types or {})}
            if self.convert_options is None:
                # Typed: only an empty unquoted field is null (what write_csv writes), so "nan" is NaN.
                convert.null_values = [""]
            if len(self.schema) == 1 and self.parse_options is None:
                # One column: a null row is written as an empty line, which is a row, not padding.
                parse.ignore_empty_lines = False
        if columns is not None:
            convert.include_columns = columns
        try:
            with fs.open_input_stream(path) as f:
                head = f.read(_PROBE_BYTES)  # (one read of the file's start serves both looks at it)
        except OSError:
            head = b""  # (the read below says what is wrong with the file)
        _refuse_binary(head, path, read)
        try:
            if self.parse_options is None and parse.ignore_empty_lines and _one_column(head, read, parse):
                # Untyped too: one column's null row is an empty line (as write_csv writes it), not padding.
                parse.ignore_empty_lines = False
            with fs.open_input_stream(path) as f:
                table = pcsv.read_csv(f, read_options=read, parse_options=parse, convert_options=convert)
        except pa.ArrowInvalid as err:
            if self.schema is not None and "conversion error" in str(err):
                raise self._conversion_error(fs, path, read, err, parse) from err
            if bad and not skip:
                row = bad[-1]
                line = f"line {row.number}" if row.number is not None else "a line"
                msg = (f"CSV file {path!r}, {line}: expected {row.expected_columns} columns, "
                       f"got {row.actual_columns}: {row.text!r}")
                raise FileReadError(msg, 'fix that row, or pass on_bad_lines="skip" to drop such rows') from err
            raise
        table = self._exact_integers(fs, path, table, read, parse, convert)
        if bad:
            first = bad[0]
            warnings.warn(
                f"read_csv: skipped {len(bad)} bad line(s) in {path!r} (first: line {first.number}: "
                f"expected {first.expected_columns} columns, got {first.actual_columns}: {first.text!r})",
                BadLinesSkippedWarning,
                stacklevel=2,
            )
        if self.schema is not None:
            from bridge.io.typed_text import apply_schema

            table = apply_schema(table, self.schema, path, "CSV", columns)
        yield table


    def _exact_integers(self, fs: pafs.FileSystem, path: str, table: pa.Table, read: Any, parse: Any,
                        convert: Any) -> pa.Table:
        """``table`` with no integer literal of the file rounded (see :mod:`bridge.io.exact_numbers`).

        Only float columns Arrow inferred (not typed by ``schema=`` or ``column_types``) whose values
        reach ``2**53`` are looked at again: the file is read once more with those columns as text.
        """
        from bridge.io.exact_numbers import exact_column, int_text_values, may_hold_rounded_ints

        typed = set(dict(convert.column_types or {}))
        suspects = [f.name for f in table.schema if f.name not in typed and pa.types.is_floating(f.type)
                    and may_hold_rounded_ints(table.column(f.name))]
        if not suspects:
            return table
        again = copy.copy(convert)
        again.column_types = {**dict(convert.column_types or {}), **{n: pa.string() for n in suspects}}
        again.include_columns = suspects
        quiet = copy.copy(parse)  # the rows the first read skipped, skipped again without counting them twice
        quiet.invalid_row_handler = lambda row: "skip" if self.on_bad_lines != "error" else "error"
        with fs.open_input_stream(path) as f:
            text = pcsv.read_csv(f, read_options=read, parse_options=quiet, convert_options=again)
        for name in suspects:
            first = table.column(name)
            values = int_text_values(text.column(name), first.is_valid())
            hint = (f"read {name!r} with an exact type: schema= naming it pyarrow.decimal128(38, 0) for "
                    f"integers (a decimal with digits after the point, e.g. pyarrow.decimal128(38, 6), where "
                    f"floats share the column), or pyarrow.int64() / pyarrow.uint64() where every value fits one")
            col = exact_column(values, name, path, "CSV", str(first.type), hint)
            if col is not None:
                table = table.set_column(table.schema.get_field_index(name), name, col)
        return table

    def _conversion_error(self, fs: pafs.FileSystem, path: str, read: Any, err: pa.ArrowInvalid,
                          parse: Any) -> FileReadError:
        """Arrow's "In CSV column #1: ... conversion error to uint8" -> an error naming the column."""
        import re

        match = re.search(r"column #(\d+)", str(err))
        name = None
        if match:
            with fs.open_input_stream(path) as f:
                probe = copy.copy(parse)
                probe.invalid_row_handler = None
                names = pcsv.open_csv(f, read_options=read, parse_options=probe).schema.names
            index = int(match.group(1))
            name = names[index] if index < len(names) else None
        schema = self.schema
        want = schema.field(name).type if schema is not None and name in schema.names else None
        what = f"column {name!r}" if name else "a column"
        msg = f"CSV file {path!r}, {what}: a value does not fit schema= type {want}: {err}"
        return FileReadError(msg, f"fix schema= for {name!r} (read without schema= to see the inferred type)")


#: Arrow's default null spellings except those of NaN, which a float column reads as NaN.
_NULL_SPELLINGS = [v for v in pcsv.ConvertOptions().null_values if v.lower().lstrip("-") != "nan"]

#: Bytes of a file's start read to learn whether it has one column.
_PROBE_BYTES = 64 * 1024


#: The first bytes of binary files, what they are and what reads them.
_MAGIC = (
    (b"PAR1", "a Parquet file", "bridge.read_parquet(path)"),
    (b"ARROW1", "an Arrow IPC file", "pyarrow.ipc.open_file(path).read_all(), then bridge.from_arrow"),
    (b"ORC", "an ORC file", "pyarrow.orc.read_table(path), then bridge.from_arrow"),
    (b"\x1f\x8b", "gzip-compressed", "name it *.csv.gz (read_csv decompresses by the file extension)"),
    (b"PK\x03\x04", "a zip archive", "unzip it first (read_csv reads .gz, .bz2 and .zst files)"),
)


def _refuse_binary(head: bytes, path: str, read: Any) -> None:
    """A file that is not text (a Parquet file among the CSVs, say) was parsed as CSV: its first
    "bad line" was reported, or with ``on_bad_lines="skip"`` its bytes became rows, and pyarrow
    printed a UnicodeDecodeError for each undecodable line to stderr.  ``head``: its first bytes.
    Refused: a NUL byte (which text files rarely have, but may: a NUL inside a value is valid UTF-8
    and reads) with the magic bytes of a binary format, and UTF-16 text read as UTF-8."""
    nul = head.find(b"\x00")
    if nul < 0 or str(getattr(read, "encoding", "utf8")).lower().replace("-", "") not in ("utf8", ""):
        return
    for magic, what, fix in _MAGIC:
        if head.startswith(magic):
            raise FileReadError(f"read_csv: {path!r} is {what}, not CSV text (it starts with {magic!r})",
                                f"read it with {fix}; or leave it out of the paths")
    if head.startswith((b"\xff\xfe", b"\xfe\xff")) or head.count(b"\x00") * 4 >= len(head):
        raise FileReadError(f"read_csv: {path!r} looks like UTF-16 text (a byte-order mark or a NUL byte in "
                            "every other position), which read as UTF-8 gives no columns it holds",
                            "pass read_options=pyarrow.csv.ReadOptions(encoding='utf-16')")


def _skip_row(row: Any) -> str:
    return "skip"


def _one_column(head: bytes, read: Any, parse: Any) -> bool:
    """Whether the CSV file has a single column, as Arrow reads its first rows (``head``, its first 64 KiB)."""
    probe = copy.copy(parse)
    # The read's own handler counts bad lines: not here.  (``None`` is no way to unset it: pyarrow then
    # calls None for a bad line, and "TypeError: 'NoneType' object is not callable" went to stderr.)
    probe.invalid_row_handler = _skip_row
    try:
        return len(pcsv.open_csv(pa.BufferReader(head), read_options=read, parse_options=probe).schema) == 1
    except (pa.ArrowInvalid, OSError):
        return False


class CSVDatasource(FileDatasource):
    """CSV files (see :func:`bridge.read_csv`)."""

    #: Parsing runs in Arrow's C++ (bridge.execution.driver_read): 16 files, 3.2M rows, iterated
    #: on 2 cores, 0.87-0.96 s through Ray tasks, 0.65-0.80 s read in the iterating process.
    reads_in_driver = True

    def __init__(self, paths: Any, *, on_bad_lines: str = "error", read_options: Any = None,
                 parse_options: Any = None, convert_options: Any = None, schema: pa.Schema | None = None,
                 **kwargs: Any) -> None:
        fmt = CSVFormat(read_options, parse_options, convert_options, on_bad_lines, schema)
        super().__init__(fmt, paths, what="read_csv", **kwargs)
