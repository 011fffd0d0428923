"""Image files decoded with Pillow into column ``image``.

Rule: when every image of a read task has the same shape (always so with
``size=``), the column is an ``arrow.fixed_shape_tensor`` of ``(H, W[, C])``;
otherwise a ``raybridge.variable_shape_tensor``.  Both come back to NumPy as
``(rows, H, W[, C])`` arrays (or an object array of arrays when shapes vary).
"""

from __future__ import annotations

import dataclasses
import io
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs

from bridge.errors import BridgeError, missing_dependency
from bridge.io.file_datasource import PATH_COLUMN, FileDatasource, FileFormat, read_bytes, read_error
from bridge.io.partitioning import HiveColumns
from bridge.io.paths import FileEntry, FileReadError

IMAGE_EXTENSIONS = ("png", "jpg", "jpeg", "tif", "tiff", "bmp", "gif", "webp")


@dataclasses.dataclass
class ImageFormat(FileFormat):
    #: ``(height, width)`` to resize every image to.
    size: tuple[int, int] | None = None
    #: Pillow mode to convert to ("RGB", "L", ...).
    mode: str | None = None

    #: Without ``mode``: the first file's Pillow mode and path, which every image must decode like (one
    #: number of dimensions and one dtype make one tensor column); set by :class:`ImageDatasource`.
    reference: tuple[str, str] | None = None

    name = "Images"
    extensions = IMAGE_EXTENSIONS
    inflation = 6.0
    hint = "the file is not an image Pillow can decode; filter by extension with file_extensions=[...]"

    def decode(self, data: bytes) -> np.ndarray:
        from PIL import Image

        with Image.open(io.BytesIO(data)) as opened:
            img: Image.Image = opened
            if self.mode is not None and img.mode != self.mode:
                img = img.convert(self.mode)
            if self.size is not None:
                height, width = self.size
                img = img.resize((width, height))
            return np.asarray(img)

    def read_group(
        self, fs: pafs.FileSystem, files: list[FileEntry], columns: list[str] | None, include_paths: bool,
        hive: HiveColumns | None = None,
    ) -> Iterator[pa.Table]:
        from bridge import tensor

        arrays: list[np.ndarray | None] = []
        like = _mode_array(self.reference[0]) if self.reference is not None and self.mode is None else None
        for entry in files:
            try:
                array = self.decode(read_bytes(fs, entry.path))
            except Exception as err:  # noqa: BLE001 - any decoder error names the file
                raise read_error(self, entry.path, err) from err
            if like is not None and (array.ndim != like.ndim or array.dtype != like.dtype):
                assert self.reference is not None
                first_mode, first_path = self.reference
                msg = (f"read_images: {entry.path!r} decodes to {array.ndim}-d {array.dtype} arrays (shape "
                       f"{array.shape}), {first_path!r} (mode {first_mode}) to {like.ndim}-d {like.dtype}: one "
                       f"column cannot hold both")
                raise FileReadError(msg, f"pass mode= to convert every image to one Pillow mode, e.g. "
                                         f"read_images(..., mode={'L' if like.ndim == 2 else 'RGB'!r})")
            arrays.append(array)
        if not arrays:
            return
        dense = [a for a in arrays if a is not None]
        same = all(a.shape == dense[0].shape and a.dtype == dense[0].dtype for a in dense)
        if same:
            column = tensor.fixed_tensor_array(np.stack(dense))
        else:
            column = tensor.variable_tensor_array(arrays)
        table = pa.table({"image": column})
        if hive is not None:
            table = hive.add_per_row(table, [f.path for f in files])
        if include_paths:
            table = table.append_column(PATH_COLUMN, pa.array([f.path for f in files], pa.string()))
        yield table


class ImageDatasource(FileDatasource):
    """Image files (see :func:`bridge.read_images`)."""

    def __init__(self, paths: Any, *, size: tuple[int, int] | None = None, mode: str | None = None,
                 **kwargs: Any) -> None:
        import importlib.util

        if importlib.util.find_spec("PIL") is None:
            raise missing_dependency("pillow", "raybridge[images]", "read_images()")
        if size is not None and (len(size) != 2 or min(size) < 1):
            msg = f"read_images(size=...) must be (height, width) with positive values; got {size!r}"
            raise BridgeError(msg, "pass size=(224, 224)")
        fmt = ImageFormat((int(size[0]), int(size[1])) if size is not None else None, mode)
        super().__init__(fmt, paths, what="read_images", **kwargs)
        if mode is None and self.files:
            # A directory mixing grayscale and colour images gave blocks of 2-d and 3-d arrays, and a raw
            # ArrowInvalid: every read task compares its images with the first file's mode instead.
            fmt.reference = (_first_mode(self.filesystem, self.files[0].path), self.files[0].path)


def _first_mode(fs: pafs.FileSystem, path: str) -> str:
    """The Pillow mode of the image at ``path``, from its header (``""`` when Pillow cannot tell)."""
    from PIL import Image

    try:
        with fs.open_input_file(path) as f, Image.open(f) as img:
            return str(img.mode)
    except Exception:  # noqa: BLE001 - the read task names an unreadable file with the decoder's error
        return ""


def _mode_array(mode: str) -> np.ndarray | None:
    """A 1x1 image of ``mode`` as NumPy sees it (its number of dimensions and dtype)."""
    from PIL import Image

    try:
        return np.asarray(Image.new(mode, (1, 1)))
    except (ValueError, KeyError):
        return None
