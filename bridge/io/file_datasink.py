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
"""

from __future__ import annotations

import dataclasses
import json
import re
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs

from bridge import tensor
from bridge.block import Block, concat_blocks
from bridge.errors import BridgeError, UnsupportedTypeError
from bridge.execution.transform import TaskContext
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


def _write_csv(table: Block, stream: Any, options: dict[str, Any]) -> None:
    import pyarrow.csv as pcsv

    _check_flat(table, "csv")
    pcsv.write_csv(table, stream, **options)


def _json_default(value: Any) -> Any:
    import base64
    import datetime
    import decimal

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


def _json_ready(col: pa.Array) -> pa.Array:
    """A column whose Python values JSON would not hold exactly -> one it does (see :func:`_write_json`)."""
    import pyarrow.compute as pc

    t = col.type
    if pa.types.is_time(t):
        return pc.cast(col, pa.string())  # all the digits (Python's time stops at microseconds)
    if pa.types.is_duration(t):
        return pc.cast(col, pa.int64())
    if pa.types.is_map(t):
        flat = pa.concat_arrays([col]) if col.offset else col
        entries = pa.StructArray.from_arrays([flat.keys, flat.items], names=["key", "value"])
        return pa.ListArray.from_arrays(flat.offsets, entries, mask=flat.is_null())
    return col


def _write_json(table: Block, stream: Any, options: dict[str, Any]) -> None:
    """JSON lines: one object per row, written batch by batch.

    Rules: timestamps/dates as ISO-8601 strings, times as ``"HH:MM:SS.fffffffff"``
    strings, durations as integer counts of their unit, decimals as strings,
    binary as base64, maps as lists of ``{"key": k, "value": v}`` objects,
    tensors as nested lists.  ``read_json(path, schema=ds.schema())`` reads every
    one of them back as its type.
    """
    tensor_cols = [f.name for f in table.schema if tensor.is_tensor(f.type)]
    special = [f.name for f in table.schema
               if pa.types.is_time(f.type) or pa.types.is_duration(f.type) or pa.types.is_map(f.type)]
    for batch in table.to_batches(max_chunksize=4096):
        for name in special:
            i = batch.schema.get_field_index(name)
            batch = batch.set_column(i, name, _json_ready(batch.column(i)))
        rows = pa.Table.from_batches([batch]).drop_columns(tensor_cols).to_pylist() if tensor_cols else batch.to_pylist()
        for name in tensor_cols:
            values = tensor.tensor_to_numpy(batch.column(name))
            for row, v in zip(rows, values):
                row[name] = None if v is None else v.tolist()
        lines = "".join(json.dumps(r, default=_json_default, **options) + "\n" for r in rows)
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

    def file_name(self, index: int) -> str:
        if self.write_id:
            return f"{self.prefix}-{self.write_id}-{index:05d}.{self.ext}"
        return f"{self.prefix}-{index:05d}.{self.ext}"

    def __call__(self, blocks: Iterable[Block], ctx: TaskContext) -> Iterator[Block]:
        parts = [b for b in blocks]
        table = concat_blocks(parts) if parts else None
        # Empty blocks are skipped, except the first, which keeps the schema on disk.
        if table is None or (table.num_rows == 0 and ctx.task_index != 0):
            yield pa.table({"path": pa.array([], pa.string()), "num_rows": pa.array([], pa.int64())})
            return
        pieces = hive_pieces(table, self.partition_cols) if self.partition_cols else [("", table)]
        paths, counts = [], []
        for subdir, piece in pieces:
            if subdir:
                self.fs.create_dir(self.directory + subdir, recursive=True)
            path = f"{self.directory}{subdir}/{self.file_name(ctx.task_index)}"
            self._write_file(path, piece)
            paths.append(path)
            counts.append(piece.num_rows)
        yield pa.table({"path": pa.array(paths, pa.string()), "num_rows": pa.array(counts, pa.int64())})

    def _write_file(self, path: str, table: Block) -> None:
        try:
            atomic_write(self.fs, path, lambda stream: self._write(table, stream))
        except BridgeError:
            raise
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as err:
            # Arrow refused the data, not the disk: say so, not "check the directory".
            msg = f"write_{self.fmt}: cannot write the block of {path!r} as {self.fmt.upper()}: {err}"
            hint = f"a column's type or values cannot be written as {self.fmt.upper()}; cast or drop it " \
                   f"(ds.schema() lists the types), or use write_parquet, which holds every Arrow type"
            raise UnsupportedTypeError(msg, hint) from err
        except Exception as err:  # noqa: BLE001 - name the file and the cause
            msg = f"write_{self.fmt}: cannot write {path!r}: {type(err).__name__}: {err}"
            raise FileWriteError(msg, "check that the directory is writable and the disk is not full") from err

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


def _write_npy(table: Block, column: str, stream: Any) -> None:
    import io

    from bridge.batch import column_to_numpy

    if column not in table.column_names:
        msg = f"write_numpy: no column {column!r}; the Dataset has {table.column_names}"
        raise BridgeError(msg, "pass column= one of those names")
    arr = column_to_numpy(table.column(column))
    if arr.dtype == object:
        msg = f"write_numpy: column {column!r} ({table.schema.field(column).type}) has rows of different shapes or nulls"
        raise UnsupportedTypeError(msg, "a .npy file holds one dense array; pad or resize the rows first")
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=False)
    stream.write(buf.getvalue())


#: The directory name pyarrow's Hive partitioning reads back as null.
HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"


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


def _hive_segment(name: str, value: Any) -> str:
    import urllib.parse

    if value is None:
        text = HIVE_NULL
    elif isinstance(value, bool):
        text = str(value).lower()
    else:
        text = value.isoformat() if hasattr(value, "isoformat") else str(value)
    return f"{name}={urllib.parse.quote(text, safe='')}"


def hive_pieces(table: Block, cols: list[str]) -> list[tuple[str, Block]]:
    """``table`` split by the distinct values of ``cols``: ``("/k=v/k2=v2", rows without cols)``, in first-seen order."""
    import pyarrow.compute as pc

    # The distinct keys in order of first appearance (one Arrow pass; nulls form a key of their own).
    distinct = table.select(cols).group_by(cols, use_threads=False).aggregate([]).to_pylist()
    out = []
    columns = {}
    for c in cols:
        col = table.column(c)
        columns[c] = col.cast(col.type.value_type) if pa.types.is_dictionary(col.type) else col
    for row in distinct:
        values = tuple(row[c] for c in cols)
        mask = None
        for c, v in zip(cols, values):
            m = pc.is_null(columns[c]) if v is None else pc.fill_null(pc.equal(columns[c], v), False)
            mask = m if mask is None else pc.and_(mask, m)
        piece = table.filter(mask).drop_columns(cols)
        out.append(("/" + "/".join(_hive_segment(c, v) for c, v in zip(cols, values)), piece))
    return out


def new_write_id() -> str:
    """``20240131T235959123-1a2b3c``: sorts by time, and two writes in one millisecond still differ."""
    now = time.time()
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(now)) + f"{int(now * 1000) % 1000:03d}"
    return f"{stamp}-{uuid.uuid4().hex[:6]}"


_WRITE_ID = r"\d{8}T\d{9}-[0-9a-f]{6}"


def prepare_directory(path: Any, filesystem: Any, mode: str, prefix: str, ext: str,
                      fmt: str, recursive: bool = False) -> tuple[pafs.FileSystem, str, bool]:
    """Resolve ``path`` and apply ``mode``.  Returns ``(fs, directory, skip_write)``.

    "Data" is any file a reader would read: files under the directory, at any
    depth, whose names do not start with ``.`` or ``_`` (temporary files,
    ``_SUCCESS``).  ``"error"`` fails and ``"ignore"`` skips the write when the
    directory holds data, so an empty directory (or one holding only hidden
    files) is written to.  ``"overwrite"`` removes this prefix's earlier files,
    appended ones included (in ``k=v`` subdirectories too with ``recursive``, for
    partitioned writes); ``"append"`` never touches a file (its names are new).
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
    if info.type == pafs.FileType.Directory and mode == "overwrite":
        ours = re.compile(rf"{re.escape(prefix)}-(?:{_WRITE_ID}-)?\d{{5}}\.{re.escape(ext)}$")
        for i in fs.get_file_info(pafs.FileSelector(directory, recursive=recursive)):
            if i.type == pafs.FileType.File and ours.match(i.base_name):
                fs.delete_file(i.path)
    fs.create_dir(directory, recursive=True)
    return fs, directory, False
