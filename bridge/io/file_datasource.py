"""The contract every file format meets: a :class:`FileFormat` reads one file into Arrow tables,
and :class:`FileDatasource` plans read tasks over groups of files.

A format module (``csv_datasource.py``, ``json_datasource.py``, ...) defines a
small picklable ``FileFormat`` holding only its options, and a datasource that
names it.  Read tasks carry the format and their own files, never the whole
file list, so planning 100k files does not ship 100k names to every task.

Errors raised while reading a file become :class:`FileReadError` naming the
format, the file and what the parser said; a format that knows the row says so.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs

from bridge.errors import BridgeError
from bridge.io.datasource import Datasource, ReadTask, default_num_blocks, meta
from bridge.io.partitioning import FileOrder, HiveColumns, filter_files, hive_columns
from bridge.io.paths import FileEntry, FileReadError, expand_paths, group_files

#: Column holding each row's source file when ``include_paths=True``.
PATH_COLUMN = "path"


class FileFormat:
    """Reads one file into Arrow tables.  Subclasses are small picklable dataclasses."""

    #: Shown in errors and plans ("CSV").
    name: str = "File"
    #: Default extensions when listing a directory (``None``: every file).
    extensions: tuple[str, ...] | None = None
    #: In-memory bytes per byte on disk, for planning (decoded images are larger).
    inflation: float = 1.0
    #: What to tell the user when a file cannot be parsed.
    hint: str = "check that the file is in the expected format and not truncated"

    def read(self, fs: pafs.FileSystem, path: str, columns: list[str] | None) -> Iterable[pa.Table]:
        raise NotImplementedError

    def read_group(
        self, fs: pafs.FileSystem, files: list[FileEntry], columns: list[str] | None, include_paths: bool,
        hive: HiveColumns | None = None,
    ) -> Iterator[pa.Table]:
        """The tables of one read task.  Formats that must see every file first (images) override this.

        ``hive``: the partition columns to add after the file's own (``columns`` excludes them).
        """
        for entry in files:
            try:
                tables = list(self.read(fs, entry.path, columns))
            except BridgeError:
                raise
            except Exception as err:  # noqa: BLE001 - any parser error becomes one that names the file
                raise read_error(self, entry.path, err) from err
            for table in tables:
                names = table.column_names
                dup = sorted({n for n in names if names.count(n) > 1})
                if dup:
                    msg = f"{self.name} file {entry.path!r} has {names.count(dup[0])} columns named {dup[0]!r}"
                    raise FileReadError(msg, "column names must be unique: fix the header, or pass column names "
                                             "in the read options (e.g. read_options=pyarrow.csv.ReadOptions("
                                             "column_names=[...], skip_rows=1))")
                if hive is not None:
                    table = hive.add(table, entry.path)
                if include_paths and PATH_COLUMN in table.column_names:  # (two columns of one name: the
                    # file's values were hidden behind the added one)
                    msg = (f"{self.name} file {entry.path!r} already has a column named {PATH_COLUMN!r}, which "
                           f"include_paths=True adds")
                    raise FileReadError(msg, "rename that column in the files (or name the columns in the read "
                                             "options), or read without include_paths")
                yield with_path_column(table, entry.path) if include_paths else table


class FileDatasource(Datasource):
    """Files read by a :class:`FileFormat`, split into read tasks by file (order kept).

    Args:
        fmt: The format reader.
        paths: Files, directories, globs, or a list of them.
        filesystem: A ``pyarrow.fs`` or fsspec filesystem; default from the path.
        include_paths: Add a ``path`` column naming each row's file.
        override_num_blocks: Force the number of read tasks (at most one per file).
        partitioning, partition_filter, shuffle: see :mod:`bridge.io.partitioning`.
    """

    supports_projection = True

    def __init__(
        self,
        fmt: FileFormat,
        paths: Any,
        *,
        filesystem: Any = None,
        include_paths: bool = False,
        override_num_blocks: int | None = None,
        extensions: tuple[str, ...] | None = None,
        what: str = "read",
        partitioning: Any = None,
        partition_filter: Any = None,
        shuffle: Any = None,
    ) -> None:
        self.format = fmt
        self.name = fmt.name
        exts = extensions if extensions is not None else fmt.extensions
        self.filesystem, files = expand_paths(paths, filesystem, exts, what)
        self.files = filter_files(files, partition_filter, what)
        self.order = FileOrder(shuffle, what)
        self.hive = hive_columns(partitioning, [f.path for f in self.files], what)
        schema = getattr(fmt, "schema", None)
        if self.hive is not None and isinstance(schema, pa.Schema) and dataclasses.is_dataclass(fmt):
            # schema= of a Dataset read from this layout names the partition columns, which no file
            # holds: the files are read with the rest, the directories with the types it gives.
            named = {n: schema.field(n).type for n in self.hive.names if n in schema.names}
            if named:
                rest = pa.schema([f for f in schema if f.name not in named], metadata=schema.metadata)
                self.format = fmt = dataclasses.replace(fmt, schema=rest)
                self.hive.retype(named)
        if self.hive is not None and include_paths and PATH_COLUMN in self.hive.names:
            msg = f"{what}(include_paths=True): a partition directory is named {PATH_COLUMN!r} (path=...)"
            raise BridgeError(msg, "read with partitioning=None, or without include_paths")
        self.include_paths = include_paths
        self.override_num_blocks = override_num_blocks
        self.columns: list[str] | None = None

    def estimate_inmemory_data_size(self) -> int:
        return int(sum(f.size for f in self.files) * self.format.inflation)

    def with_projection(self, columns: list[str]) -> FileDatasource:
        out = _copy(self)
        out.columns = list(columns)
        return out

    def get_read_tasks(self, parallelism: int) -> list[ReadTask]:
        n = default_num_blocks(self.estimate_inmemory_data_size(), len(self.files), self.override_num_blocks)
        order = self.order.permutation(len(self.files))
        files = self.files if order is None else [self.files[i] for i in order]
        tasks = []
        for group in group_files(files, n):
            size = int(sum(f.size for f in group) * self.format.inflation)
            read = _FileRead(self.format, self.filesystem, group, self.columns, self.include_paths, self.hive)
            tasks.append(ReadTask(read, meta(0, size, None, [f.path for f in group])))
        return tasks

    def describe(self) -> str:
        return f"{self.name}({len(self.files)} files)"


def _copy(ds: FileDatasource) -> FileDatasource:
    out = object.__new__(type(ds))
    out.__dict__.update(ds.__dict__)
    return out


@dataclasses.dataclass
class _FileRead:
    """One read task: read ``files`` in order, one or more tables each."""

    fmt: FileFormat
    fs: pafs.FileSystem
    files: list[FileEntry]
    columns: list[str] | None
    include_paths: bool
    hive: HiveColumns | None = None

    def __call__(self) -> Iterator[pa.Table]:
        wanted = None
        if self.columns is not None:
            added = {PATH_COLUMN} if self.include_paths else set()
            added |= set(self.hive.names) if self.hive is not None else set()
            wanted = [c for c in self.columns if c not in added]
        for table in self.fmt.read_group(self.fs, self.files, wanted, self.include_paths, self.hive):
            if self.columns is not None:
                missing = [c for c in self.columns if c not in table.column_names]
                if missing:
                    where = ", ".join(f.path for f in self.files[:3])
                    msg = f"{self.fmt.name} file(s) {where} have no column(s) {missing}; found {table.column_names}"
                    raise FileReadError(msg, "select columns that every file has")
                table = table.select(self.columns)
            yield table


def with_path_column(table: pa.Table, path: str) -> pa.Table:
    """``table`` plus a ``path`` column naming its file."""
    return table.append_column(PATH_COLUMN, pa.array([path] * table.num_rows, pa.string()))


def read_error(fmt: FileFormat, path: str, err: BaseException) -> FileReadError:
    """The error for a file that could not be read: format, file, what the parser said."""
    detail = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    msg = f"cannot read {fmt.name} file {path!r}: {type(err).__name__}: {detail}"
    return FileReadError(msg, fmt.hint)


def open_input(fs: pafs.FileSystem, path: str) -> Any:
    """A readable binary file for ``path`` (whole-file reads: no read-ahead buffering needed)."""
    return fs.open_input_file(path)


def read_bytes(fs: pafs.FileSystem, path: str) -> bytes:
    with fs.open_input_stream(path) as f:
        return f.read()
