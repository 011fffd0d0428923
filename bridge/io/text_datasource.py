"""Text files: one row per line, in column ``text``."""

from __future__ import annotations

import codecs
import dataclasses
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs

from bridge.io.file_datasource import FileDatasource, FileFormat, read_bytes


@dataclasses.dataclass
class TextFormat(FileFormat):
    encoding: str = "utf-8"
    drop_empty_lines: bool = False

    name = "Text"
    extensions = None
    inflation = 1.3
    hint = "pass encoding= for files that are not UTF-8 (e.g. encoding='latin-1')"

    def read(self, fs: pafs.FileSystem, path: str, columns: list[str] | None) -> Iterator[pa.Table]:
        data = read_bytes(fs, path)
        text = data.decode(self.encoding)
        if text.startswith("\ufeff") and codecs.lookup(self.encoding).name == "utf-8":
            # A UTF-8 byte-order mark (Windows editors write one) is no text: the first row began with it,
            # and ``row == "hello"`` failed. (pandas' read_csv and Python's "utf-8-sig" drop it too.)
            text = text[1:]
        # Lines end at "\n" (a "\r" before it belongs to the ending), as Ray Data splits them:
        # str.splitlines() also split at \x0b, \x0c, \x1c-\x1e, \x85, \u2028 and \u2029 (rows made up).
        lines = [line.removesuffix("\r") for line in text.split("\n")]
        if lines and lines[-1] == "" and text.endswith("\n") or text == "":
            lines.pop()
        if self.drop_empty_lines:
            lines = [line for line in lines if line.strip()]
        yield pa.table({"text": pa.array(lines, pa.string())})


class TextDatasource(FileDatasource):
    """Text files (see :func:`bridge.read_text`)."""

    def __init__(self, paths: Any, *, encoding: str = "utf-8", drop_empty_lines: bool = False, **kwargs: Any) -> None:
        super().__init__(TextFormat(encoding, drop_empty_lines), paths, what="read_text", **kwargs)
