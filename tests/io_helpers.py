"""Shared data for the I/O tests: a table with every type each format can hold."""

from __future__ import annotations

import datetime
import decimal

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs


def all_types_table(n: int = 6) -> pa.Table:
    """Every Arrow type Parquet holds, with a null in each nullable column."""
    idx = list(range(n))

    def nulled(values: list) -> list:
        return [None if i == 1 else v for i, v in enumerate(values)]

    ts = [datetime.datetime(2024, 1, 1, 12, 0, i, 123456) for i in idx]
    return pa.table({
        "i8": pa.array(nulled([i - 3 for i in idx]), pa.int8()),
        "i64": pa.array(nulled([2**40 + i for i in idx]), pa.int64()),
        "u32": pa.array(nulled([2**31 + i for i in idx]), pa.uint32()),
        "f32": pa.array(nulled([i / 4 for i in idx]), pa.float32()),
        "f64": pa.array(nulled([i / 3 for i in idx]), pa.float64()),
        "b": pa.array(nulled([i % 2 == 0 for i in idx]), pa.bool_()),
        "s": pa.array(nulled([f"héllo {i}" for i in idx]), pa.string()),
        "ls": pa.array(nulled([f"x{i}" for i in idx]), pa.large_string()),
        "bin": pa.array(nulled([bytes([i, 0, 255]) for i in idx]), pa.binary()),
        "d": pa.array(nulled([datetime.date(2024, 1, 1 + i) for i in idx]), pa.date32()),
        "ts_ns_tz": pa.array(nulled(ts), pa.timestamp("ns", tz="Europe/Paris")),
        "ts_us": pa.array(nulled(ts), pa.timestamp("us")),
        "dur": pa.array(nulled([datetime.timedelta(seconds=i) for i in idx]), pa.duration("ms")),
        "dec": pa.array(nulled([decimal.Decimal(f"{i}.25") for i in idx]), pa.decimal128(10, 2)),
        "lst": pa.array(nulled([[i, i + 1] for i in idx]), pa.list_(pa.int64())),
        "st": pa.array(nulled([{"x": i, "y": str(i)} for i in idx]), pa.struct([("x", pa.int64()), ("y", pa.string())])),
        "cat": pa.array(nulled(["a", "b", "a", "c", "a", "b"][:n])).dictionary_encode(),
        "tensor": pa.FixedShapeTensorArray.from_numpy_ndarray(np.arange(n * 6, dtype=np.float32).reshape(n, 2, 3)),
    })


def flat_table(n: int = 6) -> pa.Table:
    """The columns CSV holds and reads back with the same types."""
    t = all_types_table(n)
    return t.select(["i64", "f64", "b", "s", "d", "ts_us"])


class CountingHandler(pafs.FileSystemHandler):
    """A real local filesystem that counts the bytes read through it (for pushdown tests)."""

    def __init__(self) -> None:
        self.fs = pafs.LocalFileSystem()
        self.bytes_read = 0
        self.files_opened: list[str] = []

    # Delegation of the FileSystemHandler interface.
    def get_type_name(self):
        return "counting-local"

    def normalize_path(self, path):
        return path

    def get_file_info(self, paths):
        return self.fs.get_file_info(paths)

    def get_file_info_selector(self, selector):
        return self.fs.get_file_info(selector)

    def create_dir(self, path, recursive):
        self.fs.create_dir(path, recursive=recursive)

    def delete_dir(self, path):
        self.fs.delete_dir(path)

    def delete_dir_contents(self, path, missing_dir_ok=False):
        self.fs.delete_dir_contents(path, missing_dir_ok=missing_dir_ok)

    def delete_root_dir_contents(self):
        raise NotImplementedError

    def delete_file(self, path):
        self.fs.delete_file(path)

    def move(self, src, dest):
        self.fs.move(src, dest)

    def copy_file(self, src, dest):
        self.fs.copy_file(src, dest)

    def open_input_stream(self, path):
        self.files_opened.append(path)
        return pa.PythonFile(_CountingFile(self, open(path, "rb")), mode="r")

    def open_input_file(self, path):
        self.files_opened.append(path)
        return pa.PythonFile(_CountingFile(self, open(path, "rb")), mode="r")

    def open_output_stream(self, path, metadata):
        return self.fs.open_output_stream(path)

    def open_append_stream(self, path, metadata):
        return self.fs.open_append_stream(path)


class _CountingFile:
    def __init__(self, handler: CountingHandler, f) -> None:
        self._h = handler
        self._f = f
        self.closed = False

    def read(self, n=-1):
        data = self._f.read(n)
        self._h.bytes_read += len(data)
        return data

    def seek(self, offset, whence=0):
        return self._f.seek(offset, whence)

    def tell(self):
        return self._f.tell()

    def seekable(self):
        return True

    def readable(self):
        return True

    def writable(self):
        return False

    def close(self):
        self.closed = True
        self._f.close()

    def __getattr__(self, name):
        return getattr(self._f, name)
