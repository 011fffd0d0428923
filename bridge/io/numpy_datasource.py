"""``.npy`` files: the first axis is rows; 1-d arrays become a plain column, n-d a tensor column."""

from __future__ import annotations

import dataclasses
import io
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs

from bridge.io.file_datasource import FileDatasource, FileFormat, read_bytes


@dataclasses.dataclass
class NumpyFormat(FileFormat):
    column: str = "data"

    name = "Numpy"
    extensions = ("npy",)
    inflation = 1.0
    hint = "read_numpy reads .npy files written by numpy.save (object arrays are not supported)"

    def read(self, fs: pafs.FileSystem, path: str, columns: list[str] | None) -> Iterator[pa.Table]:
        from bridge.batch import to_block

        arr = np.load(io.BytesIO(read_bytes(fs, path)), allow_pickle=False)
        if arr.ndim == 0:
            arr = arr.reshape(1)
        yield to_block({self.column: arr})


class NumpyDatasource(FileDatasource):
    """``.npy`` files (see :func:`bridge.read_numpy`)."""

    def __init__(self, paths: Any, *, column: str = "data", **kwargs: Any) -> None:
        super().__init__(NumpyFormat(column), paths, what="read_numpy", **kwargs)
