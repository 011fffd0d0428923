"""Paths and filesystems: what ``read_*`` and ``write_*`` accept, resolved through ``pyarrow.fs``.

A path is a file, a directory (read recursively), a glob (``data/*.csv``) or a
list of those; local, ``file://``, ``s3://``, ``gs://``, ``hdfs://`` or anything
else ``pyarrow.fs.FileSystem.from_uri`` understands.  ``filesystem=`` takes a
``pyarrow.fs.FileSystem`` or an fsspec filesystem (wrapped in
``pyarrow.fs.PyFileSystem``), e.g. an S3 filesystem with an explicit endpoint.

Files whose name starts with ``.`` or ``_`` (``_SUCCESS``, ``.part-00000.tmp``:
the temporary names writers use) are skipped inside directories, the same rule
Spark, Hive and ``pyarrow.dataset`` follow.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import os
import posixpath
from collections.abc import Callable
from typing import Any

import pyarrow.fs as pafs

from bridge.errors import BridgeError

_GLOB_CHARS = "*?["
_URI_SCHEMES = ("s3://", "gs://", "gcs://", "hdfs://", "viewfs://", "abfs://", "abfss://", "file://", "mock://")


class PathNotFoundError(BridgeError, FileNotFoundError):
    """A path given to ``read_*`` does not exist or matches no file."""


class FileReadError(BridgeError, OSError):
    """A file exists but could not be read or parsed (names the file, and the row where known)."""


class FileWriteError(BridgeError, OSError):
    """A file could not be written."""


class DestinationExistsError(FileWriteError, ValueError):
    """``mode="error"`` and the destination already holds data (a ``ValueError`` too, as in Ray Data)."""


@dataclasses.dataclass(frozen=True)
class FileEntry:
    """One input file: its path inside ``filesystem`` and its size on disk."""

    path: str
    size: int


def resolve_filesystem(path: Any, filesystem: Any = None) -> tuple[pafs.FileSystem, str]:
    """``(pyarrow filesystem, path inside it)`` for one user path.

    Example:
        >>> fs, p = resolve_filesystem("/tmp")
        >>> type(fs).__name__, p
        ('LocalFileSystem', '/tmp')
    """
    if not isinstance(path, (str, os.PathLike)):
        msg = f"a path must be a string or os.PathLike; got {type(path).__name__}: {path!r}"
        raise BridgeError(msg, 'pass a path such as "data/file.parquet" or "s3://bucket/prefix"')
    path = os.fspath(path)
    if filesystem is not None:
        fs = as_arrow_filesystem(filesystem)
        for scheme in _URI_SCHEMES:
            if path.startswith(scheme):
                path = path[len(scheme):]
                break
        if isinstance(fs, pafs.LocalFileSystem):
            path = os.path.abspath(path)
        return fs, path
    if "://" in path:
        try:
            fs, inner = pafs.FileSystem.from_uri(path)
        except pa_errors() as err:
            msg = f"cannot open a filesystem for {path!r}: {err}"
            hint = "check the scheme and credentials, or pass filesystem=pyarrow.fs.S3FileSystem(endpoint_override=...)"
            raise BridgeError(msg, hint) from err
        return fs, inner
    return pafs.LocalFileSystem(), os.path.abspath(os.path.expanduser(path))


def pa_errors() -> tuple[type[BaseException], ...]:
    import pyarrow as pa

    return (pa.ArrowInvalid, pa.ArrowNotImplementedError, OSError, ValueError)


def as_arrow_filesystem(filesystem: Any) -> pafs.FileSystem:
    """A ``pyarrow.fs.FileSystem`` for a pyarrow or fsspec filesystem object."""
    if isinstance(filesystem, pafs.FileSystem):
        return filesystem
    if type(filesystem).__module__.startswith("fsspec") or hasattr(filesystem, "protocol") and hasattr(
        filesystem, "open"
    ):
        return pafs.PyFileSystem(pafs.FSSpecHandler(filesystem))
    msg = f"filesystem= must be a pyarrow.fs.FileSystem or an fsspec filesystem; got {type(filesystem).__name__}"
    raise BridgeError(msg, "pass pyarrow.fs.S3FileSystem(...), or fsspec.filesystem('s3', ...)")


def _is_hidden(name: str) -> bool:
    return name.startswith((".", "_"))


def _has_extension(path: str, extensions: tuple[str, ...] | None) -> bool:
    if not extensions:
        return True
    lower = path.lower()
    return any(lower.endswith("." + e.lstrip(".").lower()) for e in extensions)


def expand_paths(
    paths: str | os.PathLike[str] | list[Any],
    filesystem: Any = None,
    extensions: tuple[str, ...] | None = None,
    what: str = "read",
    listed: Callable[[pafs.FileSystem, FileEntry], bool] | None = None,
) -> tuple[pafs.FileSystem, list[FileEntry]]:
    """Every file named by ``paths`` (files, directories, globs), in a stable order.

    Directories are listed recursively and sorted, so block order is the same
    on every run.  ``extensions`` filters directory listings and globs (a file
    named explicitly is always read), and so does ``listed(fs, file)`` where given
    (``read_parquet`` passes :func:`looks_like_parquet`).

    Raises:
        PathNotFoundError: a path does not exist, or nothing matched.
    """
    items = list(paths) if isinstance(paths, (list, tuple)) else [paths]
    if not items:
        msg = f"{what}() got an empty list of paths"
        raise PathNotFoundError(msg, "pass at least one file, directory or glob")
    fs: pafs.FileSystem | None = None
    files: list[FileEntry] = []
    left_out = 0  # files ``listed`` turned down
    for item in items:
        item_fs, path = resolve_filesystem(item, filesystem)
        if fs is None:
            fs = item_fs
        elif type(item_fs) is not type(fs):
            msg = f"{what}() got paths on different filesystems: {items[0]!r} and {item!r}"
            raise BridgeError(msg, "read each filesystem separately and combine with ds1.union(ds2)")
        found = _expand_one(item_fs, path, str(item), extensions, what)
        if listed is not None and not (len(found) == 1 and found[0].path == path):  # (a file named: read)
            kept = [f for f in found if listed(item_fs, f)]
            left_out += len(found) - len(kept)
            found = kept
        files.extend(found)
    assert fs is not None
    if not files:
        shown = items if len(items) <= 3 else [*items[:3], "..."]
        ext = f" with extension {', '.join(extensions)}" if extensions else ""
        msg = f"{what}(): no files{ext} found under {shown}"
        hint = "check the path; files whose name starts with '.' or '_' are skipped"
        if left_out:
            msg += f" ({left_out} file(s) there are not of the format: another extension, and not its contents)"
            hint = "name the files to read directly, or pass file_extensions=[...] to read those with an extension"
        raise PathNotFoundError(msg, hint)
    return fs, files


#: Names Parquet files end with (Spark's ``.snappy.parquet`` too); a file without an extension
#: (Hive's ``000000_0``) is taken as one as well.
PARQUET_SUFFIXES = ("parquet", "parq", "pq")


def looks_like_parquet(fs: pafs.FileSystem, entry: FileEntry) -> bool:
    """Whether a file found in a directory or by a glob is read as Parquet: its name has no
    extension, a Parquet one, or a number after its last dot; a file of another named kind
    (``README.md``, ``notes.txt``) only where it begins with Parquet's magic bytes ``PAR1``
    (a data file with an unusual name is still read; nothing else is)."""
    name = entry.path.rsplit("/", 1)[-1]
    _, dot, ext = name.rpartition(".")
    if not dot or not ext.isalpha() or ext.lower() in PARQUET_SUFFIXES:
        return True
    try:
        with fs.open_input_file(entry.path) as f:
            return bool(f.read(4) == b"PAR1")
    except OSError:
        return True  # the reader says what is wrong with it


def _expand_one(
    fs: pafs.FileSystem, path: str, shown: str, extensions: tuple[str, ...] | None, what: str
) -> list[FileEntry]:
    if any(c in path for c in _GLOB_CHARS):
        return _expand_glob(fs, path, shown, extensions, what)
    info = _file_info(fs, path, shown, what)
    if info.type == pafs.FileType.File:
        return [FileEntry(path, int(info.size or 0))]
    if info.type == pafs.FileType.Directory:
        return _list_dir(fs, path, extensions)
    msg = f"{what}(): path not found: {shown!r}"
    hint = "check the spelling and that the file exists (relative paths are relative to the driver's working dir)"
    raise PathNotFoundError(msg, hint)


def _file_info(fs: pafs.FileSystem, path: str, shown: str, what: str) -> pafs.FileInfo:
    try:
        return fs.get_file_info(path)
    except OSError as err:
        msg = f"{what}(): cannot look up {shown!r}: {err}"
        raise FileReadError(msg, "check permissions, credentials and the endpoint of the filesystem") from err


def _list_dir(fs: pafs.FileSystem, path: str, extensions: tuple[str, ...] | None) -> list[FileEntry]:
    selector = pafs.FileSelector(path, recursive=True, allow_not_found=False)
    out = []
    root = path.rstrip("/")
    for info in fs.get_file_info(selector):
        if info.type != pafs.FileType.File:
            continue
        rel = info.path[len(root):].lstrip("/") if info.path.startswith(root) else info.base_name
        if any(_is_hidden(part) for part in rel.split("/")):
            continue
        if _has_extension(info.path, extensions):
            out.append(FileEntry(info.path, int(info.size or 0)))
    out.sort(key=lambda f: f.path)
    return out


def data_files(fs: pafs.FileSystem, directory: str) -> list[FileEntry]:
    """The files a read of ``directory`` would see (recursive; hidden names skipped), sorted."""
    return _list_dir(fs, directory, None)


def _expand_glob(
    fs: pafs.FileSystem, pattern: str, shown: str, extensions: tuple[str, ...] | None, what: str
) -> list[FileEntry]:
    parts = pattern.split("/")
    first_glob = next(i for i, p in enumerate(parts) if any(c in p for c in _GLOB_CHARS))
    base = "/".join(parts[:first_glob]) or "/"
    info = _file_info(fs, base, shown, what)
    if info.type != pafs.FileType.Directory:
        msg = f"{what}(): the directory of the glob {shown!r} does not exist: {base!r}"
        raise PathNotFoundError(msg, "check the part of the path before the first wildcard")
    recursive = len(parts) - first_glob > 1 or "**" in pattern
    selector = pafs.FileSelector(base, recursive=recursive)
    out = []
    for info in fs.get_file_info(selector):
        if info.type == pafs.FileType.File and fnmatch.fnmatchcase(info.path, pattern.replace("**", "*")):
            if not _is_hidden(posixpath.basename(info.path)):
                out.append(FileEntry(info.path, int(info.size or 0)))
    out.sort(key=lambda f: f.path)
    return out


def group_files(files: list[FileEntry], num_groups: int) -> list[list[FileEntry]]:
    """Consecutive groups of files of roughly equal total size (order kept)."""
    num_groups = max(1, min(num_groups, len(files)))
    if num_groups == len(files):
        return [[f] for f in files]
    total = sum(max(f.size, 1) for f in files)
    target = total / num_groups
    groups: list[list[FileEntry]] = [[]]
    acc = 0.0
    for i, f in enumerate(files):
        remaining_files = len(files) - i
        remaining_groups = num_groups - len(groups)
        if groups[-1] and (acc >= target or remaining_files <= remaining_groups):
            groups.append([])
            acc = 0.0
        groups[-1].append(f)
        acc += max(f.size, 1)
    return groups
