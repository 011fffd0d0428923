"""Writing blocks to files: one file per block, atomic; names deterministic, or unique per append.

Each write task writes ``{prefix}-{index:05d}.{ext}`` where ``index`` is the
position of its block in the Dataset, so writing the same Dataset twice gives
the same names (``mode="overwrite"`` replaces them).  ``mode="append"`` adds a
write id, ``{prefix}-{write_id}-{index:05d}.{ext}``, where ``write_id`` is the
UTC time to the millisecond plus six random hex digits: appending never
replaces a file, and sorted names (the order readers use) follow write order.
A file is written under a hidden temporary name
(``.{name}.{token}.tmp``: readers skip names starting with ``.``) and renamed
when complete, so a failed or killed write leaves nothing a later read picks up
(on object stores the rename is copy + delete; the object appears only whole).

A task whose blocks hold no rows writes no file, except write task 0, whose file keeps
the schema on disk: a Dataset without rows writes one file of no rows (Parquet: the
schema; CSV: the header; JSON lines: empty; ``.npy``: dtype and row shape), so a read
of the directory finds it (Ray Data writes nothing, and its read finds no file).  With
``partition_cols`` no ``k=v`` directory can be named, so the driver writes that file at
the top (:meth:`FileWriter.write_schema_file`).  A CSV without columns is not written.

``filename_provider=`` (a :class:`FilenameProvider`, or Ray Data's) names the
files instead.  Its names cannot be checked before the tasks run, so each task
writes a hidden staged file (``.{name}.{write id}.stage``) and the driver renames
them all once every task has finished, after checking that no two tasks got one
name and (with ``mode="append"``) that no name is taken: a provider that repeats
a name fails the write and nothing is replaced.

``mode="overwrite"`` (the default) stages its files the same way, whatever names
them, and removes the earlier output only once every new file is written: a
write that fails -- a user function's error in the steps before it, a full disk,
Ctrl-C -- removes its staged files and leaves the directory as it was (the
earlier output was once removed before the first task ran, so a typo in a
function emptied the directory).

``mode="overwrite"`` replaces the earlier output, which is every file a read
of the directory would take for this format's data (any depth, any writer:
Spark's ``part-*.snappy.parquet``, another ``filename_prefix``) and, for
Parquet, the summary files that describe it (:data:`SUMMARY_FILES`, as
``pq.write_metadata``, Dask and Spark leave them); files of other kinds are
kept.  A Parquet write that adds files to a directory (``mode="append"``)
removes its ``_metadata`` (see :func:`remove_stale_summaries`).
"""

from __future__ import annotations

import dataclasses
import json
import posixpath
import re
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs

from bridge import tensor
from bridge.arrow_values import is_list_like
from bridge.block import Block, concat_blocks, map_child_types
from bridge.errors import BridgeError, BridgeValueError, UnsupportedTypeError
from bridge.execution.transform import TaskContext
from bridge.io.partitioning import SIDECAR, partition_text, read_back
from bridge.io.paths import DestinationExistsError, FileWriteError, data_files, resolve_filesystem

MODES = ("overwrite", "append", "error", "ignore")
RESULT_SCHEMA = pa.schema([("path", pa.string()), ("num_rows", pa.int64())])


def atomic_write(fs: pafs.FileSystem, path: str, write: Callable[[Any], None]) -> None:
    """Call ``write(stream)`` on a hidden temporary file, then rename it to ``path``.

    On any error the temporary file is deleted and the error re-raised; ``path`` is
    never left half-written.
    """
    head, _, name = path.rpartition("/")
    tmp = f"{head}/.{name}.{uuid.uuid4().hex[:12]}.tmp"
    try:
        with fs.open_output_stream(tmp) as stream:
            write(stream)
        fs.move(tmp, path)
    except BaseException:
        try:
            fs.delete_file(tmp)
        except OSError:
            pass
        raise


# ---------------------------------------------------------------- formats


def _write_parquet(table: Block, stream: Any, options: dict[str, Any]) -> None:
    import pyarrow.parquet as pq

    pq.write_table(table, stream, **options)


def _is_binary(t: pa.DataType) -> bool:
    return pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t)


def _check_flat(table: Block, fmt: str) -> None:
    for field in table.schema:
        t = field.type
        if tensor.is_tensor(t) or pa.types.is_nested(t):
            msg = f"write_{fmt}: column {field.name!r} has type {t}, which {fmt.upper()} cannot hold"
            hint = "write it with write_parquet, or drop/flatten the column first (drop_columns, map_batches)"
            raise UnsupportedTypeError(msg, hint)
        if _is_binary(t) or (pa.types.is_dictionary(t) and _is_binary(t.value_type)):
            # CSV is text: bytes that are not UTF-8 cannot be written, and those that are come back as strings.
            msg = f"write_{fmt}: column {field.name!r} has type {t}; raw bytes cannot be written as {fmt.upper()} text"
            hint = (f"cast it to string if it holds text (pc.cast(t[{field.name!r}], pa.string()) in map_batches), "
                    f"encode it as base64 text first, or use write_parquet, which keeps binary columns")
            raise UnsupportedTypeError(msg, hint)


#: 1973-01-01 in seconds since the epoch: no zone's UTC offset has had seconds since.
_WHOLE_MINUTES_SINCE = 94_694_400


def _offsets_with_seconds(col: Any) -> bool:
    """Whether a zoned timestamp column holds a value whose UTC offset is not whole minutes there
    (local mean time before ~1900, Amsterdam before 1937, ...)."""
    import pyarrow.compute as pc

    t = col.type
    if t.tz.upper() in ("UTC", "Z", "ETC/UTC", "GMT") or re.fullmatch(r"[+-]\d\d:\d\d", t.tz):
        return False  # a fixed offset of whole minutes
    naive = pa.timestamp(t.unit)
    per_second = {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}[t.unit]
    earliest = pc.min(col).cast(naive).cast(pa.int64()).as_py()
    if earliest is None or earliest >= _WHOLE_MINUTES_SINCE * per_second:
        return False  # every zone's offsets are whole minutes since 1972 (Liberia's -0:44:30 was the last)
    offsets = pc.subtract(pc.cast(pc.local_timestamp(col), pa.int64()), pc.cast(pc.cast(col, naive), pa.int64()))
    return bool(np.any(np.asarray(offsets.fill_null(0)) % (60 * per_second)))


class CsvWriteOptions:
    """``pyarrow.csv.WriteOptions`` as its settings, which travel to a write task (the object itself
    cannot be pickled: ``write_csv(write_options=WriteOptions(delimiter=";"))`` failed to start)."""

    _FIELDS = ("include_header", "batch_size", "delimiter", "quoting_style", "quoting_header", "eol", "null_string")

    def __init__(self, settings: dict[str, Any]) -> None:
        self.settings = settings

    @classmethod
    def of(cls, options: Any) -> Any:
        import pyarrow.csv as pcsv

        if not isinstance(options, pcsv.WriteOptions):
            return options  # (pyarrow's to refuse)
        return cls({f: getattr(options, f) for f in cls._FIELDS if hasattr(options, f)})

    def build(self) -> Any:
        import pyarrow.csv as pcsv

        return pcsv.WriteOptions(**self.settings)


def _write_csv(table: Block, stream: Any, options: dict[str, Any]) -> None:
    import pyarrow.csv as pcsv

    _check_flat(table, "csv")
    if isinstance(options.get("write_options"), CsvWriteOptions):
        options = {**options, "write_options": options["write_options"].build()}
    for i, field in enumerate(table.schema):
        t = field.type
        if pa.types.is_timestamp(t) and t.tz and _offsets_with_seconds(table.column(i)):
            # Arrow writes local time with the offset cut to minutes ("+0019" for +00:19:32): the value read
            # back would be off by those seconds. The same instants in UTC are exact (schema= gives the zone).
            utc = pa.timestamp(t.unit, "UTC")
            table = table.set_column(i, field.with_type(utc), table.column(i).cast(utc))
    _check_csv_temporal(table)  # (after: a zone's values are written as the local time the check reads)
    pcsv.write_csv(table, stream, **options)


#: Per unit, the ticks of a second (timestamps, times) and of a day (dates).
_TICKS = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}
#: Seconds from 1970 to 0000-01-01 and to 10000-01-01: the years Arrow's CSV text holds and its reader parses.
_CSV_SECONDS = (-62_167_219_200, 253_402_300_800)


def _csv_range(t: pa.DataType) -> tuple[int, int] | None:
    """The values of temporal type ``t`` that CSV text written by Arrow holds (``[lo, hi)`` as stored), else
    ``None`` where every value fits (``timestamp[ns]``: 1677-2262)."""
    lo, hi = _CSV_SECONDS
    if pa.types.is_timestamp(t):
        return None if t.unit == "ns" else (lo * _TICKS[t.unit], hi * _TICKS[t.unit])
    if pa.types.is_date32(t):
        return lo // 86_400, hi // 86_400
    if pa.types.is_date64(t):
        return lo * 1_000, hi * 1_000
    if pa.types.is_time32(t) or pa.types.is_time64(t):
        return 0, 86_400 * _TICKS[t.unit]
    return None


def _check_csv_temporal(table: Block) -> None:
    """Refuse a timestamp, date or time that CSV text cannot hold: Arrow wrote ``<value out of range: -1125899906842624>``
    (or year 10000, or a time past midnight) into the file, which ``read_csv`` then took as text or refused --
    the value lost at the write, seen only at the read (``write_json`` refuses them too)."""
    import pyarrow.compute as pc

    for name, column in zip(table.column_names, table.columns):
        if pa.types.is_dictionary(column.type) and _csv_range(column.type.value_type) is not None:
            column = column.cast(column.type.value_type)  # written as its values
        bounds = _csv_range(column.type)
        if bounds is None or column.null_count == len(column):
            continue
        if pa.types.is_timestamp(column.type) and column.type.tz:
            column = pc.local_timestamp(column)  # Arrow writes the zone's local time: its year is the one written
        width = pa.int32() if column.type.bit_width == 32 else pa.int64()
        ticks = pc.min_max(column.cast(width))
        low, high = ticks["min"].as_py(), ticks["max"].as_py()
        if low is None or (bounds[0] <= low and high < bounds[1]):
            continue
        bad = low if low < bounds[0] else high
        held = "times of day (0 to 24 h)" if pa.types.is_time(column.type) else "years 0 to 9999"
        msg = (f"write_csv: column {name!r} ({column.type}) holds {bad} ({column.type} ticks from "
               f"{'midnight' if pa.types.is_time(column.type) else '1970'}), which CSV text cannot hold: it holds "
               f"{held}, and Arrow would write text no reader parses back")
        raise UnsupportedTypeError(msg, "write_parquet keeps every value; or cast the column to int64 in a "
                                        "map_batches step to write the number")


def _json_default(value: Any) -> Any:
    import base64
    import datetime
    import decimal

    if isinstance(value, datetime.datetime) and value.utcoffset() is not None and \
            value.utcoffset().total_seconds() % 60:  # type: ignore[union-attr]
        # An offset with seconds (local mean time before ~1900, Amsterdam before 1937): ISO text with
        # "+00:19:32" is not read back; the same instant in UTC is (schema= gives the zone back).
        return value.astimezone(datetime.timezone.utc).isoformat()
    if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"cannot write a {type(value).__name__} as JSON")


def _json_type(t: pa.DataType) -> pa.DataType:
    """``t`` with what JSON does not hold exactly replaced, at any depth: a time by its text (all the
    digits: Python's time stops at microseconds), a duration by the count of its unit, a map by a
    list of ``{"key": k, "value": v}`` objects (see :func:`_write_json`)."""
    if pa.types.is_time(t):
        return pa.string()
    if pa.types.is_duration(t):
        return pa.int64()
    if pa.types.is_dictionary(t):
        values = _json_type(t.value_type)  # (decoded where its values change: written as they are)
        return t if values == t.value_type else values
    if pa.types.is_map(t):
        return pa.list_(pa.struct([pa.field("key", _json_type(t.key_type), nullable=False),
                                   pa.field("value", _json_type(t.item_type))]))
    return map_child_types(t, _json_type)


def _json_ready(col: pa.Array) -> pa.Array:
    """A column whose Python values JSON would not hold exactly -> one it does (:func:`_json_type`)."""
    import pyarrow.compute as pc

    target = _json_type(col.type)
    return col if target == col.type else pc.cast(col, target)


def _write_json(table: Block, stream: Any, options: dict[str, Any]) -> None:
    """JSON lines: one object per row, written batch by batch.

    Rules: timestamps/dates as ISO-8601 strings, times as ``"HH:MM:SS.fffffffff"``
    strings, durations as integer counts of their unit, decimals as strings,
    binary as base64, maps as lists of ``{"key": k, "value": v}`` objects,
    tensors as nested lists.  ``read_json(path, schema=ds.schema())`` reads every
    one of them back as its type.
    """
    tensor_cols = [f.name for f in table.schema if tensor.is_tensor(f.type)]
    special = [f.name for f in table.schema if _json_type(f.type) != f.type]
    for batch in table.to_batches(max_chunksize=4096):
        for name in special:
            i = batch.schema.get_field_index(name)
            batch = batch.set_column(i, name, _json_ready(batch.column(i)))
        try:
            rows = pa.Table.from_batches([batch]).drop_columns(tensor_cols).to_pylist() if tensor_cols \
                else batch.to_pylist()
            for name in tensor_cols:
                values = tensor.tensor_to_numpy(batch.column(name))
                for row, v in zip(rows, values):
                    row[name] = None if v is None else v.tolist()
            lines = "".join(json.dumps(r, default=_json_default, **options) + "\n" for r in rows)
        except (TypeError, ValueError, OverflowError) as err:  # a value JSON cannot hold: the data, not the disk
            raise pa.ArrowInvalid(f"{type(err).__name__}: {err}") from err
        stream.write(lines.encode("utf-8"))


@dataclasses.dataclass
class FileWriter:
    """The per-task write: concatenate the task's blocks, write one file, return ``(path, num_rows)``."""

    fmt: str
    ext: str
    fs: pafs.FileSystem
    directory: str
    prefix: str
    options: dict[str, Any]
    column: str | None = None
    #: Set for ``mode="append"``: makes every name of this write new (see the module docstring).
    write_id: str | None = None
    #: Hive-style ``k=v`` directories by these columns (Parquet only; see ``write_parquet``).
    partition_cols: list[str] = dataclasses.field(default_factory=list)
    #: Names the files (see the module docstring); ``provider_uuid`` is the write's id it is given.
    filename_provider: Any = None
    provider_uuid: str = ""
    #: Tasks write hidden staged files that the driver renames once all succeeded (:func:`commit_staged`):
    #: with a ``filename_provider``, and for ``mode="overwrite"`` (a failed write keeps the earlier output).
    staged: bool = False

    def file_name(self, index: int) -> str:
        if self.filename_provider is not None:
            return provided_name(self.filename_provider, self.provider_uuid, index, self.fmt)
        if self.write_id:
            return f"{self.prefix}-{self.write_id}-{index:05d}.{self.ext}"
        return f"{self.prefix}-{index:05d}.{self.ext}"

    def __call__(self, blocks: Iterable[Block], ctx: TaskContext) -> Iterator[Block]:
        parts = [b for b in blocks]
        table = concat_blocks(parts) if parts else None
        # Empty blocks are skipped, except the first, which keeps the schema on disk.
        staged = self.staged or self.filename_provider is not None
        if (table is None or (table.num_rows == 0 and ctx.task_index != 0)
                or self._nothing_to_write(table, ctx.task_index)):
            yield _result([], [], [] if staged else None, b"" if self.partition_cols else None)
            return
        written = None
        if self.partition_cols:  # the driver records the types the directory names cannot say
            written = table.schema.serialize().to_pybytes()
        pieces = hive_pieces(table, self.partition_cols) if self.partition_cols else [("", table)]
        paths, counts, stages = [], [], []
        name = self.file_name(ctx.task_index)
        for subdir, piece in pieces:
            path = f"{self.directory}{subdir}/{name}"
            head, _, base = path.rpartition("/")
            if subdir or "/" in name:
                self.fs.create_dir(head, recursive=True)
            target = f"{head}/.{base}.{self.provider_uuid}.stage" if staged else path
            self._write_file(target, piece, hidden=staged, shown=path)
            paths.append(path)
            counts.append(piece.num_rows)
            stages.append(target)
        yield _result(paths, counts, stages if staged else None, written)

    def _nothing_to_write(self, table: Block, index: int) -> bool:
        """Whether the task writes no file: a CSV file without columns (no reader takes one).

        Zero rows and zero columns: nothing to write, as Ray Data writes nothing.  Rows without
        columns cannot be written as CSV at all (the file would be empty, and the rows lost): refused.
        """
        if self.fmt != "csv" or table.num_columns:
            return False
        if table.num_rows:
            msg = (f"write_csv: write task {index} got {table.num_rows} row(s) without columns; a CSV file "
                   f"cannot hold rows without columns (it would be empty and the rows lost)")
            raise UnsupportedTypeError(msg, "add a column first (add_column / map_batches), or use write_json, "
                                            "which writes each row as {}")
        return True

    def write_schema_file(self, schema: pa.Schema) -> pa.Table:
        """Write one file of no rows holding ``schema`` at the top of the directory; the write's result.

        For ``write_parquet(partition_cols=...)`` of a Dataset without rows: no ``k=v`` directory can
        be named, so the tasks write nothing, and a read of the directory would find no file.  This
        file holds every column, partition columns included, as their types, so
        ``read_parquet(path)`` (and Ray Data's, and pyarrow's) gives back the schema with 0 rows.
        """
        from bridge.block import empty_table

        name = self.file_name(0)
        path = f"{self.directory}/{name}"
        if "/" in name:
            self.fs.create_dir(path.rpartition("/")[0], recursive=True)
        self._write_file(path, empty_table(schema))
        return _result([path], [0], None, schema.serialize().to_pybytes())

    def _write_file(self, target: str, table: Block, hidden: bool = False, shown: str | None = None) -> None:
        """Write ``table`` to ``target``: through a temporary name, unless ``target`` is hidden itself (a staged
        file, which no read takes and a retried task writes again: one rename less, a copy less on S3).
        Errors name ``shown`` (the file's own name where ``target`` is its staged one)."""
        path = shown or target
        try:
            if hidden:
                with self.fs.open_output_stream(target) as stream:
                    self._write(table, stream)
            else:
                atomic_write(self.fs, target, lambda stream: self._write(table, stream))
        except BridgeError:
            raise
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as err:
            # Arrow refused the data, not the disk: say so, not "check the directory", and name the column.
            fmt = self.fmt.upper()
            name = self._refused_column(table)
            if name is None:
                msg = f"write_{self.fmt}: cannot write the block of {path!r} as {fmt}: {err}"
                what = "a column's type or values"
            else:
                msg = (f"write_{self.fmt}: column {name!r} ({table.schema.field(name).type}) cannot be written "
                       f"as {fmt} (file {path!r}): {err}")
                what = f"column {name!r}"
            hint = f"{what} cannot be written as {fmt}: cast it to a type {fmt} holds in a map_batches step, " \
                   f"or drop it (ds.drop_columns([...]); ds.schema() lists the types)"
            if "Out of range float values" in str(err):  # json.dumps(allow_nan=False) met a NaN or an infinity
                msg = msg.replace(f" cannot be written as {fmt}", " holds NaN or an infinity, which strict JSON "
                                                                   "(allow_nan=False) has no literal for", 1)
                hint = (f"replace those values in {what} (e.g. fillna in a map_batches step), or leave allow_nan "
                        "at its default: NaN / Infinity / -Infinity literals, which read_json, pandas and "
                        "pyarrow read back")
            elif self.fmt != "parquet":
                hint += "; or use write_parquet, which holds nested, binary and tensor columns"
            raise UnsupportedTypeError(msg, hint) from err
        except Exception as err:  # noqa: BLE001 - name the file and the cause
            msg = f"write_{self.fmt}: cannot write {path!r}: {type(err).__name__}: {err}"
            hint = "check that the directory is writable and the disk is not full" if isinstance(err, OSError) \
                else f"the writer refused an option or its value: check the keywords given to write_{self.fmt}"
            raise FileWriteError(msg, hint) from err

    def _refused_column(self, table: Block) -> str | None:
        """The first column of ``table`` that the format refuses on its own (written to no file), or ``None``."""
        if table.num_columns < 2 or len(set(table.column_names)) != table.num_columns:
            return table.column_names[0] if table.num_columns == 1 else None
        for name, col in zip(table.column_names, table.columns):
            try:
                self._write(pa.table({name: col}), pa.MockOutputStream())
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
                return name
            except Exception:  # noqa: BLE001 - not this column's type: no name rather than a wrong one
                return None
        return None

    def _write(self, table: Block, stream: Any) -> None:
        if self.fmt == "parquet":
            _write_parquet(table, stream, self.options)
        elif self.fmt == "csv":
            _write_csv(table, stream, self.options)
        elif self.fmt == "json":
            _write_json(table, stream, self.options)
        elif self.fmt == "numpy":
            _write_npy(table, self.column or "", stream)
        else:  # pragma: no cover - guarded by WriteMethods
            raise BridgeError(f"unknown write format {self.fmt!r}", "use write_parquet/csv/json/numpy")


def _result(paths: list[str], counts: list[int], stages: list[str] | None, schema: bytes | None = None) -> pa.Table:
    columns = {"path": pa.array(paths, pa.string()), "num_rows": pa.array(counts, pa.int64())}
    if stages is not None:
        columns["staged"] = pa.array(stages, pa.string())
    if schema is not None:  # partition_cols: the schema of the rows written (serialized), per file
        columns["schema"] = pa.array([schema] * len(paths), pa.binary())
    return pa.table(columns)


# ---------------------------------------------------------------- the partitioned layout's schema


def read_sidecar(fs: pafs.FileSystem, directory: str) -> pa.Schema | None:
    """The schema in ``directory``'s :data:`SIDECAR`, or ``None`` when there is none (or it is unreadable)."""
    import pyarrow.parquet as pq

    path = f"{directory}/{SIDECAR}"
    if fs.get_file_info(path).type != pafs.FileType.File:
        return None
    try:
        return pq.read_schema(path, filesystem=fs)
    except (pa.ArrowInvalid, OSError):
        return None


def written_schema(result: pa.Table) -> pa.Schema | None:
    """The schema of the rows a partitioned write wrote (from its tasks' results), or ``None``."""
    if "schema" not in result.column_names or not result.num_rows:
        return None
    schemas = [pa.ipc.read_schema(pa.py_buffer(b)) for b in dict.fromkeys(result.column("schema").to_pylist()) if b]
    if not schemas:
        return None
    try:
        return pa.unify_schemas(schemas, promote_options="default")  # a null-typed block takes the others' type
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None


def partition_conflicts(earlier: pa.Schema, schema: pa.Schema, cols: list[str]) -> list[str]:
    """``"k: int64 there, string here"`` for each partition column the two schemas type differently."""
    return [f"{c}: {earlier.field(c).type} there, {schema.field(c).type} here" for c in cols
            if c in earlier.names and c in schema.names and not pa.types.is_null(schema.field(c).type)
            and earlier.field(c).type != schema.field(c).type]


def write_sidecar(fs: pafs.FileSystem, directory: str, schema: pa.Schema) -> None:
    """Write ``schema`` (partition columns included) as the layout's :data:`SIDECAR`, atomically."""
    import pyarrow.parquet as pq

    atomic_write(fs, f"{directory}/{SIDECAR}", lambda stream: pq.write_metadata(schema, stream))


def remove_sidecar(fs: pafs.FileSystem, directory: str) -> None:
    try:
        fs.delete_file(f"{directory}/{SIDECAR}")
    except (FileNotFoundError, OSError):
        pass


class FilenameProvider:
    """Names the files a write creates (``write_parquet(path, filename_provider=...)``), as Ray Data's.

    Override :meth:`get_filename_for_task`; the name must be the same for the same
    ``(write_uuid, task_index)`` (a retried task writes it again) and different for
    different task indexes.  Ray Data's own ``FilenameProvider`` subclasses work too,
    including old ones that override ``get_filename_for_block``.

    Example:
        >>> class Named(FilenameProvider):
        ...     def get_filename_for_task(self, write_uuid, task_index):
        ...         return f"scores-{task_index:04d}.parquet"
        >>> Named().get_filename_for_task("abc", 3)
        'scores-0003.parquet'
    """

    def __init__(self, dataset_uuid: str | None = None, file_format: str | None = None) -> None:
        self.dataset_uuid = dataset_uuid
        self.file_format = file_format

    def get_filename_for_task(self, write_uuid: str, task_index: int) -> str:
        """``[{dataset_uuid}_]{write_uuid}_{task_index:06}[.{file_format}]`` unless overridden."""
        name = f"{self.dataset_uuid}_" if self.dataset_uuid is not None else ""
        name += f"{write_uuid}_{task_index:06}"
        return name + (f".{self.file_format}" if self.file_format is not None else "")


def _overrides(provider: Any, method: str) -> bool:
    """Whether ``provider``'s class defines ``method`` below a class named ``FilenameProvider``."""
    for cls in type(provider).__mro__:
        if cls.__name__ == "FilenameProvider":
            return False
        if method in cls.__dict__:
            return True
    return False


def provided_name(provider: Any, write_uuid: str, task_index: int, fmt: str) -> str:
    """The provider's name for a task's file, checked: relative, no ``..``, not hidden."""
    where = f"write_{fmt}(filename_provider={type(provider).__name__})"
    method = "get_filename_for_task"
    try:
        if _overrides(provider, "get_filename_for_block") and not _overrides(provider, "get_filename_for_task"):
            import inspect

            method = "get_filename_for_block"  # Ray Data before 2.5x: (block, [write_uuid,] task_index, block_index)
            if len(inspect.signature(provider.get_filename_for_block).parameters) == 3:
                name = provider.get_filename_for_block(None, task_index, 0)
            else:
                name = provider.get_filename_for_block(None, write_uuid, task_index, 0)
        else:
            method = "get_filename_for_task"
            name = provider.get_filename_for_task(write_uuid, task_index)
    except Exception as err:
        from bridge.errors import UserCodeError

        msg = f"{where}: {method}(... task_index={task_index}) raised {type(err).__name__}: {err}"
        raise UserCodeError(msg, "fix the provider; it is called once per write task", operator=where,
                            block_index=task_index, original=err) from err
    parts = name.split("/") if isinstance(name, str) else []
    if not parts or name.startswith("/") or any(p in ("", ".", "..") for p in parts):
        msg = f"{where} gave {name!r} for task {task_index}: a file name must be a relative path without '..'"
        raise FileWriteError(msg, 'return a name such as f"part-{task_index:05d}.parquet"')
    if any(p.startswith((".", "_")) for p in parts):
        msg = f"{where} gave {name!r} for task {task_index}: readers skip names starting with '.' or '_', " \
              f"so the rows would never be read back"
        raise FileWriteError(msg, "start the name with a letter or digit")
    return name


def remove_staged(fs: pafs.FileSystem, directory: str, write_uuid: str, settle_s: float = 10.0) -> None:
    """Delete the staged files of the write ``write_uuid`` under ``directory`` (a task failed).

    A sibling task being cancelled may still be writing its file (or its ``.tmp``) when this
    runs: the directory is swept every 0.25 s for at least a second and until two sweeps in a
    row find nothing (``settle_s`` at most).
    """
    marker = f".{write_uuid}.stage"
    start = time.monotonic()
    empty = 0
    while True:
        try:
            infos = fs.get_file_info(pafs.FileSelector(directory, recursive=True, allow_not_found=True))
        except OSError:
            return
        found = [i for i in infos if i.type == pafs.FileType.File and marker in i.base_name]
        for info in found:
            try:
                fs.delete_file(info.path)
            except OSError:
                pass
        empty = 0 if found else empty + 1
        elapsed = time.monotonic() - start
        if (empty >= 2 and elapsed >= 1.0) or elapsed > settle_s:
            return
        time.sleep(0.25)


def commit_staged(fs: pafs.FileSystem, result: pa.Table, mode: str, fmt: str, directory: str,
                  prefix: str = "", ext: str = "") -> list[str]:
    """Rename every staged file to its name, after checking that none repeats or (append) exists.

    On a refusal every staged file is deleted and nothing is renamed.  With ``mode="overwrite"``
    the earlier output (:func:`earlier_output`: every file of the format under ``directory``, named
    ``prefix-NNNNN.ext`` or ending as the format's files do) is removed once the staged files took their
    names (those a new file replaced stay replaced): a write that fails before this point leaves the
    directory as it was.
    """
    paths = result.column("path").to_pylist() if result.num_rows else []
    stages = result.column("staged").to_pylist() if result.num_rows else []
    seen: dict[str, int] = {}
    problem = None
    for i, p in enumerate(paths):
        if p in seen:
            problem = (f"write_{fmt}(filename_provider=...): two write tasks got the same file name {p!r}",
                       "include the task_index in the name (names must differ per task); nothing was written")
            break
        seen[p] = i
    if problem is None and mode == "append" and paths:
        taken = [i.path for i in fs.get_file_info(paths) if i.type != pafs.FileType.NotFound]
        if taken:
            problem = (f"write_{fmt}(filename_provider=..., mode='append'): {len(taken)} name(s) already exist, "
                       f"e.g. {taken[0]!r}; appending never replaces a file",
                       "include the write_uuid in the name, or write with mode='overwrite'")
    if problem is not None:
        for s in stages:
            try:
                fs.delete_file(s)
            except OSError:
                pass
        raise FileWriteError(*problem)
    # The earlier output is listed before the staged files take their names (they are hidden: not in it)
    # and removed after, except the files a new one replaced -- told apart by their paths below the
    # directory as the listing spells it (a SubTreeFileSystem lists 'out/x', fsspec '/abs/out/x', where the
    # write said '/out/x'), learnt from a staged file's own listing. A move that fails leaves the earlier
    # files in place, none lost.
    earlier = earlier_output(fs, directory, fmt, prefix or "", ext or fmt) if mode == "overwrite" else []
    root = _listed_root(fs, directory, stages[0]) if earlier and stages else None
    new = {_below(p, directory) for p in paths}
    for s, p in zip(stages, paths):
        fs.move(s, p)
    for entry in earlier:
        if root is None and paths:
            break  # the listing's spelling unknown: keep the earlier files rather than risk a new one
        if root is not None and (not entry.startswith(root) or _below(entry, root) in new):
            continue  # replaced by a new file of the same name (or not recognisably below the directory)
        fs.delete_file(entry)
    return paths


def _below(path: str, root: str) -> str:
    return path[len(root):].lstrip("/")


def _listed_root(fs: pafs.FileSystem, directory: str, stage: str) -> str | None:
    """How a recursive listing of ``directory`` spells it: found from the staged file ``stage`` (its name
    holds the write's id, so one entry ends so), ``None`` where no entry does."""
    rel = _below(stage, directory)
    infos = fs.get_file_info(pafs.FileSelector(directory, recursive=True, allow_not_found=True))
    for info in infos:
        if info.path.endswith("/" + rel) or info.path == rel:
            return info.path[:len(info.path) - len(rel)].rstrip("/")
    return None


def _write_npy(table: Block, column: str, stream: Any) -> None:
    import io

    from bridge.batch import column_to_numpy

    if column not in table.column_names:
        msg = f"write_numpy: no column {column!r}; the Dataset has {table.column_names}"
        raise BridgeError(msg, "pass column= one of those names")
    col = table.column(column)
    t = col.type
    if pa.types.is_timestamp(t) and t.tz:
        msg = f"write_numpy: column {column!r} ({t}): a .npy file's datetime64 holds no time zone"
        raise UnsupportedTypeError(msg, f"cast it to timestamp('{t.unit}') first (the same instants, in UTC: "
                                        f"pc.cast(t[{column!r}], pa.timestamp('{t.unit}')) in map_batches), "
                                        f"or use write_parquet, which keeps the zone")
    arr = _lists_to_numpy(col)
    if arr is None:
        arr = column_to_numpy(col)
    if arr.dtype == object:
        value_type = t.value_type if pa.types.is_dictionary(t) else t
        if _is_binary(value_type) or pa.types.is_string(value_type) or pa.types.is_large_string(value_type) \
                or pa.types.is_string_view(value_type) or pa.types.is_decimal(value_type):
            why = "holds text, bytes or decimals, which a .npy file stores only as pickled Python objects"
            hint = "cast it to a number type first, or use write_parquet / write_json, which hold it as it is"
        elif pa.types.is_time(value_type):
            why = "holds times of day, which NumPy has no type for (a .npy file would pickle Python objects)"
            hint = (f"write the count since midnight: pc.cast(t[{column!r}], pa.int{value_type.bit_width}()) in "
                    f"map_batches (its unit: {value_type.unit}), or use write_parquet, which keeps the type")
        elif col.null_count:
            why = f"has {col.null_count} null row(s), which a dense .npy array cannot hold"
            hint = "fill them first (ds.map_batches with pc.fill_null), or use write_parquet, which keeps nulls"
        elif is_list_like(value_type):
            inner, values = value_type, col
            while is_list_like(inner):
                values = pa.chunked_array([c.flatten() for c in values.chunks], inner.value_type)
                inner = inner.value_type
            if values.null_count:
                why = f"has {values.null_count} null value(s) inside its lists, which a dense .npy array cannot hold"
                hint = "fill them first (map_batches), or use write_parquet, which keeps nulls"
            elif not (pa.types.is_integer(inner) or pa.types.is_floating(inner) or pa.types.is_boolean(inner)):
                why = f"holds lists of {inner}, which a .npy file stores only as pickled Python objects"
                hint = "write lists of numbers, or use write_parquet / write_json, which hold them as they are"
            else:
                why = "has lists of different lengths"
                hint = "a .npy file holds one dense array; pad or cut the rows to one length first, or use write_parquet"
        else:
            why = "has rows of different shapes"
            hint = "a .npy file holds one dense array; pad or resize the rows first, or use write_parquet"
        raise UnsupportedTypeError(f"write_numpy: column {column!r} ({t}) {why}", hint)
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=False)
    stream.write(buf.getvalue())




def _lists_to_numpy(col: pa.ChunkedArray) -> np.ndarray | None:
    """A column of lists of numbers (nested too) whose rows all have one shape -- fixed-size lists, or lists of
    one length -- with no null anywhere, as one ``(rows, *sizes)`` array; ``None`` for any other column (the
    rows' check of :func:`_write_npy` took such a column for rows of different shapes)."""
    from bridge.batch import column_to_numpy

    if not is_list_like(col.type) or col.null_count:
        return None
    values = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    shape = []
    while is_list_like(values.type):
        if values.null_count:
            return None
        if pa.types.is_fixed_size_list(values.type):
            shape.append(values.type.list_size)
        else:
            lengths = pc.list_value_length(values)
            low, high = (pc.min_max(lengths)[k].as_py() for k in ("min", "max"))
            if len(values) and low != high:
                return None
            shape.append(low or 0)
        values = values.flatten()  # (the slice's own values)
    if values.null_count or not (pa.types.is_integer(values.type) or pa.types.is_floating(values.type)
                                 or pa.types.is_boolean(values.type)):
        return None
    return np.asarray(column_to_numpy(values)).reshape([len(col), *shape])


def check_partition_cols(cols: list[str], schema: pa.Schema | None, fmt: str) -> None:
    """Partition columns must exist, be scalar, and leave at least one column for the files."""
    if fmt != "parquet":  # pragma: no cover - only write_parquet passes them
        raise BridgeError(f"write_{fmt} does not take partition_cols", "use write_parquet(partition_cols=...)")
    if schema is None:
        return
    from bridge.ops.exchange import check_columns

    check_columns(f"write_parquet(partition_cols={cols})", cols, schema)
    for c in cols:
        t = schema.field(c).type
        if pa.types.is_nested(t) or tensor.is_tensor(t) or _is_binary(t) or pa.types.is_floating(t):
            msg = f"write_parquet(partition_cols=...): column {c!r} has type {t}, which cannot name a directory"
            hint = "partition by integer, string, boolean, date or timestamp columns; derive one first if needed"
            raise BridgeError(msg, hint)
    if len(set(cols)) == len(schema.names):
        msg = f"write_parquet(partition_cols={cols}) names every column; the files would hold none"
        raise BridgeError(msg, "leave at least one column out of partition_cols")


def _hive_segment(name: str, text: str) -> str:
    import urllib.parse

    return f"{name}={urllib.parse.quote(text, safe='')}"


def hive_pieces(table: Block, cols: list[str]) -> list[tuple[str, Block]]:
    """``table`` split by the distinct values of ``cols``: ``("/k=v/k2=v2", rows without cols)``, in first-seen order."""
    import pyarrow.compute as pc

    # The distinct keys in order of first appearance (one Arrow pass; nulls form a key of their own).
    columns = {}
    for c in cols:
        col = table.column(c)
        if pa.types.is_dictionary(col.type):
            col = col.cast(col.type.value_type)
        if pa.types.is_duration(col.type):
            col = col.cast(pa.int64())  # the count of its unit, as pyarrow.dataset.write_dataset names it
        columns[c] = col
    distinct = pa.table(columns).group_by(cols, use_threads=False).aggregate([])
    out = []
    for i in range(distinct.num_rows):
        # Compared as Arrow scalars of the column's type: a Python value may not say it all (a pandas
        # Timestamp's nanoseconds became microseconds, and rows matched no directory or the wrong one).
        scalars = [distinct.column(c)[i] for c in cols]
        mask = None
        for c, x in zip(cols, scalars):
            m = pc.is_null(columns[c]) if not x.is_valid else pc.fill_null(pc.equal(columns[c], x), False)
            mask = m if mask is None else pc.and_(mask, m)
        piece = table.filter(mask).drop_columns(cols)
        out.append(("/" + "/".join(_checked_segment(c, x) for c, x in zip(cols, scalars)), piece))
    return out


#: The longest file or directory name most file systems take (bytes).
_NAME_MAX = 255


def _checked_segment(name: str, scalar: pa.Scalar) -> str:
    """``name=value`` for a directory, where ``read_parquet`` reads that name back as ``scalar``.

    A value whose text says less than the value (a ``time64[ns]`` or ``timestamp[ns]`` whose
    nanoseconds ``isoformat`` cannot write) or says something else (the string
    ``__HIVE_DEFAULT_PARTITION__``, read as null) is refused: written, two values would share a
    directory and the second file would replace the first, or the value would come back changed.
    """
    text = partition_text(scalar)
    segment = _hive_segment(name, text)
    if scalar.is_valid:
        back = read_back(scalar.type, text)
        if back is None or not pa.array([back], scalar.type).equals(pa.array([scalar], scalar.type)):
            unit = getattr(scalar.type, "unit", None)  # (a time's nanoseconds do not show in its text)
            count = pa.array([scalar]).view(pa.int64() if scalar.type.bit_width == 64 else pa.int32())[0] \
                if unit else None
            shown = f"{scalar} = {count} {unit}" if unit else str(scalar)
            msg = (f"write_parquet(partition_cols=...): column {name!r} holds {shown} ({scalar.type}), whose "
                   f"directory name {segment!r} reads back as {'null' if back is None else back}")
            if pa.types.is_string(scalar.type) or pa.types.is_large_string(scalar.type):
                hint = f"replace that value in {name!r} before writing: it is the name of the null directory"
            else:
                hint = (f"cast {name!r} to a type its directory names hold exactly (e.g. string, or a coarser "
                        f"unit) before writing, or leave it out of partition_cols")
            raise BridgeValueError(msg, hint)
    if len(segment.encode()) > _NAME_MAX:
        msg = (f"write_parquet(partition_cols=...): column {name!r} holds a value whose directory name is "
               f"{len(segment.encode())} bytes, over the {_NAME_MAX} a file system allows")
        raise BridgeValueError(msg, f"partition by a shorter column (a hash or a prefix of {name!r})")
    return segment


def new_write_id() -> str:
    """``20240131T235959123-1a2b3c``: sorts by time, and two writes in one millisecond still differ."""
    now = time.time()
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(now)) + f"{int(now * 1000) % 1000:03d}"
    return f"{stamp}-{uuid.uuid4().hex[:6]}"


_WRITE_ID = r"\d{8}T\d{9}-[0-9a-f]{6}"


def prepare_directory(path: Any, filesystem: Any, mode: str, prefix: str, ext: str,
                      fmt: str, remove_earlier: bool = True) -> tuple[pafs.FileSystem, str, bool]:
    """Resolve ``path`` and apply ``mode``.  Returns ``(fs, directory, skip_write)``.

    "Data" is any file a reader would read: files under the directory, at any
    depth, whose names do not start with ``.`` or ``_`` (temporary files,
    ``_SUCCESS``).  ``"error"`` fails and ``"ignore"`` skips the write when the
    directory holds data, so an empty directory (or one holding only hidden
    files) is written to.  ``"overwrite"`` removes the earlier output
    (:func:`earlier_output`), appended files, ``k=v`` subdirectories' and Parquet
    summary files included; ``"append"`` never replaces a file (its names are new;
    a stale Parquet ``_metadata`` is removed afterwards, :func:`remove_stale_summaries`).
    """
    if mode not in MODES:
        msg = f"write_{fmt}(mode=...) must be one of {MODES}; got {mode!r}"
        raise BridgeError(msg, 'pass mode="overwrite" to replace earlier output, "append" to add files')
    fs, directory = resolve_filesystem(path, filesystem)
    directory = directory.rstrip("/") or "/"
    info = fs.get_file_info(directory)
    if info.type == pafs.FileType.File:
        msg = f"write_{fmt}: {str(path)!r} is a file; writes go to a directory (one file per block)"
        raise FileWriteError(msg, "pass a directory path; it is created if missing")
    if info.type == pafs.FileType.Directory and mode in ("error", "ignore"):
        existing = data_files(fs, directory)
        if existing and mode == "error":
            msg = f"write_{fmt}: {str(path)!r} already holds {len(existing)} file(s), e.g. {existing[0].path!r}"
            raise DestinationExistsError(msg, 'pass mode="overwrite" to replace our earlier output, or "append"')
        if existing:
            return fs, directory, True
    if info.type == pafs.FileType.Directory and mode == "overwrite" and remove_earlier:
        for entry in earlier_output(fs, directory, fmt, prefix, ext):
            fs.delete_file(entry)
    fs.create_dir(directory, recursive=True)
    return fs, directory, False


#: What a read of each written format takes for its data, by file ending (``read_csv`` of a directory
#: reads these; ``read_parquet`` reads every file, but only these can be Parquet written by anyone).
_DATA_ENDINGS = {"parquet": ("parquet",), "csv": ("csv", "csv.gz", "csv.bz2", "csv.zst", "tsv", "tsv.gz", "tsv.bz2",
                                                   "tsv.zst"),
                 "json": ("json", "jsonl", "ndjson", "json.gz", "jsonl.gz"), "numpy": ("npy",)}


def earlier_output(fs: pafs.FileSystem, directory: str, fmt: str, prefix: str, ext: str,
                   keep: Iterable[str] = ()) -> list[str]:
    """The files ``mode="overwrite"`` replaces: under ``directory`` at any depth (a read of it is
    recursive), not hidden, named as this write names files or ending as the format's data files do
    (``part-00000-<uuid>.snappy.parquet`` from Spark, another ``filename_prefix``), except ``keep``;
    for Parquet also the summary files (:data:`SUMMARY_FILES`) at any depth, which describe the files
    replaced (a ``_common_metadata`` of the new layout is written after this, by the write).

    Only this prefix's names were once removed, and a read after the overwrite gave the new rows with
    the stale ones of any other writer.  Other files (a README, code) are kept, unlike Ray Data's
    overwrite, which empties the directory: our default mode is ``"overwrite"``.
    """
    ours = re.compile(rf"{re.escape(prefix)}-(?:{_WRITE_ID}-)?\d{{5}}\.{re.escape(ext)}$")
    endings = tuple("." + e for e in _DATA_ENDINGS.get(fmt, (ext,)))
    kept = set(keep)
    found = [e.path for e in data_files(fs, directory)
             if e.path not in kept and (ours.match(posixpath.basename(e.path))
                                        or posixpath.basename(e.path).lower().endswith(endings))]
    if fmt == "parquet":
        found += [p for p in summary_files(fs, directory, SUMMARY_FILES) if p not in kept]
    return found


#: Parquet summary files that other writers leave beside the data (``pyarrow.parquet.write_metadata``,
#: Dask's ``write_metadata_file``, Spark / parquet-mr with ``parquet.summary.metadata.level``):
#: ``_metadata`` holds the footers (row groups, offsets) of the files it names, ``_common_metadata``
#: the schema.  Readers of a directory skip them as data; Dask, ``pyarrow.dataset.parquet_dataset``
#: and others read ``_metadata`` *instead of* the files' footers when it is there.
SUMMARY_FILES = ("_metadata", "_common_metadata")


def summary_files(fs: pafs.FileSystem, directory: str, names: Iterable[str]) -> list[str]:
    """The Parquet files under ``directory`` (any depth, outside hidden directories) named one of ``names``."""
    wanted = set(names)
    root = directory.rstrip("/")
    try:
        infos = fs.get_file_info(pafs.FileSelector(directory, recursive=True, allow_not_found=True))
    except OSError:
        return []
    out = []
    for info in infos:
        if info.type != pafs.FileType.File or info.base_name not in wanted:
            continue
        rel = info.path[len(root):].lstrip("/") if info.path.startswith(root) else info.base_name
        if not any(part.startswith(".") for part in rel.split("/")[:-1]) and _is_parquet(fs, info.path):
            out.append(info.path)
    return sorted(out)


def _is_parquet(fs: pafs.FileSystem, path: str) -> bool:
    """Whether ``path`` is a Parquet file (a summary file is one): a file of another kind that happens to
    be named ``_metadata`` (someone's notes) is no summary, and is kept."""
    try:
        with fs.open_input_file(path) as f:
            return bool(f.size() >= 8 and f.read(4) == b"PAR1")
    except OSError:
        return False


def remove_stale_summaries(fs: pafs.FileSystem, directory: str) -> None:
    """Remove every ``_metadata`` under ``directory`` after a Parquet write added files to it.

    A ``_metadata`` lists the row groups of the files there when it was written; once files are
    added it lists some of them only, and readers that take it instead of listing the directory
    (Dask, ``pyarrow.dataset.parquet_dataset``) silently miss the new rows.  We do not maintain one
    (no write of ours creates it): it is removed, so every reader lists the files, as parquet-mr
    removes summary files it cannot bring up to date.  ``_common_metadata`` (the schema only, still
    true of files of that schema) is kept; the partitioned layout's own is checked by the write.
    """
    for path in summary_files(fs, directory, ("_metadata",)):
        try:
            fs.delete_file(path)
        except FileNotFoundError:
            pass
