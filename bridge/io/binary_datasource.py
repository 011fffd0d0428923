"""Whole files as bytes: one row per file, column ``bytes`` (and ``path``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs

from bridge.io.file_datasource import FileDatasource, FileFormat, read_bytes


@dataclasses.dataclass
class BinaryFormat(FileFormat):
    name = "BinaryFiles"
    extensions = None
    inflation = 1.0

    def read(self, fs: pafs.FileSystem, path: str, columns: list[str] | None) -> Iterator[pa.Table]:
        yield pa.table({"bytes": pa.array([read_bytes(fs, path)], pa.large_binary())})


class BinaryDatasource(FileDatasource):
    """Whole files (see :func:`bridge.read_binary_files`)."""

    def __init__(self, paths: Any, **kwargs: Any) -> None:
        super().__init__(BinaryFormat(), paths, what="read_binary_files", **kwargs)
