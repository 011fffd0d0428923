"""Which files a read sees, in which order, and the columns their directories hold.

Three read options that act on the file list before any task starts, the same
for every file format:

* ``partitioning="hive"``: ``key=value`` directories (``year=2024/city=NY/``)
  become columns after the file's own, typed as ``pyarrow.dataset`` types them
  for ``read_parquet`` (every value an int32: ``int32``; otherwise ``string``;
  ``__HIVE_DEFAULT_PARTITION__`` is null; ``%20`` is decoded).
* ``partition_filter``: a function of a file's partition values (``{"year":
  "2024"}``, strings as written in the path, ``None`` for the null directory)
  that keeps the file when it returns true, or a :class:`PathPartitionFilter`
  (``PathPartitionFilter.of(fn)``, Ray Data's spelling, a function of the path
  list).  Files filtered out are never opened.
* ``shuffle="files"`` or :class:`FileShuffleConfig`: the files are read in a
  random order, a new one each time the Dataset runs unless a seed says
  otherwise (Ray Data's rules, below).
"""

from __future__ import annotations

import dataclasses
import posixpath
import re
import urllib.parse
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.dataset as pds

from bridge.errors import BridgeError, BridgeTypeError, BridgeValueError, SchemaMismatchError
from bridge.io.paths import FileEntry, PathNotFoundError

#: The directory name a null partition value is written as (Hive, Spark, pyarrow).
HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"
_INT = re.compile(r"^-?[0-9]+$")  # what pyarrow parses as int32 ("+5" stays a string there too)
_INT32 = (-(2**31), 2**31 - 1)


def hive_values(path: str) -> dict[str, str | None]:
    """The ``key=value`` directories of ``path``, decoded (``None`` for the null directory).

    Example:
        >>> hive_values("/data/year=2024/city=New%20York/part-0.csv")
        {'year': '2024', 'city': 'New York'}
    """
    out: dict[str, str | None] = {}
    for part in posixpath.dirname(path).split("/"):
        key, eq, value = part.partition("=")
        key = urllib.parse.unquote(key)
        if eq and key and key not in out:  # a key given twice: the first, as pyarrow reads it
            decoded = urllib.parse.unquote(value)
            out[key] = None if decoded == HIVE_NULL else decoded
    return out


@dataclasses.dataclass(frozen=True)
class FileShuffleConfig:
    """Read the files in a random order (``shuffle=FileShuffleConfig(seed=42)``), as Ray Data's.

    ``seed=None``: a new order every run.  With a seed and ``reseed_after_execution``
    (default) each run of the Dataset draws from ``(seed, run number)``: different per
    epoch, the same sequence every time the program runs; with
    ``reseed_after_execution=False`` every run reads the same order.

    Example:
        >>> FileShuffleConfig(seed=7, reseed_after_execution=False).seed
        7
    """

    seed: int | None = None
    reseed_after_execution: bool = True

    def __post_init__(self) -> None:
        if self.seed is not None and (isinstance(self.seed, bool) or not isinstance(self.seed, int)):
            raise BridgeTypeError(f"FileShuffleConfig(seed=...) must be an int or None; got {self.seed!r}",
                                  "pass seed=42")


class PathPartitionFilter:
    """Keeps the paths whose Hive partition values satisfy ``filter_fn`` (Ray Data's class, same call).

    Example:
        >>> keep = PathPartitionFilter.of(lambda p: p["year"] == "2024")
        >>> keep(["/d/year=2023/a.csv", "/d/year=2024/b.csv"])
        ['/d/year=2024/b.csv']
    """

    def __init__(self, filter_fn: Callable[[dict[str, str | None]], bool]) -> None:
        if not callable(filter_fn):
            raise BridgeTypeError(f"PathPartitionFilter needs a function; got {type(filter_fn).__name__}",
                                  'pass lambda values: values["year"] == "2024"')
        self.filter_fn = filter_fn

    @classmethod
    def of(cls, filter_fn: Callable[[dict[str, str | None]], bool], style: str = "hive",
           base_dir: str | None = None, **_: Any) -> PathPartitionFilter:
        """Ray Data's constructor; only the Hive style (``key=value`` directories) is read."""
        if str(getattr(style, "value", style)) != "hive":
            raise BridgeValueError(f"PathPartitionFilter.of(style={style!r}): only 'hive' directories are read",
                                   'name partition directories key=value, or filter the paths yourself')
        return cls(filter_fn)

    def __call__(self, paths: list[str]) -> list[str]:
        return [p for p in paths if self.filter_fn(hive_values(p))]


def filter_files(files: list[FileEntry], partition_filter: Any, what: str) -> list[FileEntry]:
    """The files ``partition_filter`` keeps (see the module docstring); raises if none is left."""
    if partition_filter is None:
        return files
    if not callable(partition_filter):
        msg = f"{what}(partition_filter=...) must be a function or a PathPartitionFilter; got " \
              f"{type(partition_filter).__name__}"
        raise BridgeTypeError(msg, 'pass partition_filter=lambda values: values["year"] == "2024"')
    if type(partition_filter).__name__ == "PathPartitionFilter":  # ours or Ray Data's: a function of paths
        kept_paths = set(partition_filter([f.path for f in files]))
        kept = [f for f in files if f.path in kept_paths]
    else:
        kept = [f for f in files if partition_filter(hive_values(f.path))]
    if not kept:
        shown = sorted({str(hive_values(f.path)) for f in files})[:3]
        msg = f"{what}(partition_filter=...) kept none of {len(files)} files; their partition values include {shown}"
        raise PathNotFoundError(msg, "the filter gets each file's key=value directories as strings "
                                     '(e.g. {"year": "2024"}); compare with strings')
    return kept


class FileOrder:
    """The order files are read in: as listed, or shuffled per run (``shuffle=``)."""

    def __init__(self, shuffle: Any, what: str) -> None:
        if shuffle is not None and shuffle != "files" and not (
                hasattr(shuffle, "seed") and hasattr(shuffle, "reseed_after_execution")):
            msg = f"{what}(shuffle=...) must be None, \"files\" or a FileShuffleConfig; got {shuffle!r}"
            raise BridgeValueError(msg, 'pass shuffle="files", or shuffle=bridge.FileShuffleConfig(seed=42)')
        self.shuffle = shuffle
        self._runs = [0]  # shared by copies of the datasource (projections), counts runs

    def permutation(self, n: int) -> np.ndarray | None:
        """A new order of ``n`` files for this run, or ``None`` to keep the listed order."""
        if self.shuffle is None or n <= 1:
            return None
        run = self._runs[0]
        self._runs[0] += 1
        seed = getattr(self.shuffle, "seed", None)
        if seed is None:
            rng = np.random.default_rng()
        elif getattr(self.shuffle, "reseed_after_execution", True):
            rng = np.random.default_rng([int(seed), run])
        else:
            rng = np.random.default_rng(int(seed))
        return rng.permutation(n)


class HiveColumns:
    """The partition columns of a set of files, typed once on the driver, added to each file's tables."""

    def __init__(self, paths: list[str], what: str, schema: pa.Schema | None = None) -> None:
        raw: dict[str, list[str | None]] = {}
        for path in paths:
            for key, value in hive_values(path).items():
                raw.setdefault(key, []).append(value)
        fields = []
        for key, values in raw.items():
            present = [v for v in values if v is not None]
            ints = all(_INT.match(v) and _INT32[0] <= int(v) <= _INT32[1] for v in present) and bool(present)
            fields.append(pa.field(key, pa.int32() if ints else pa.string()))
        if schema is not None:  # a HivePartitioning with its own schema: its names and types
            fields = [schema.field(n) for n in schema.names]
        self.schema = pa.schema(fields)
        self.what = what

    def __bool__(self) -> bool:
        return len(self.schema) > 0

    @property
    def names(self) -> list[str]:
        return list(self.schema.names)

    def add(self, table: pa.Table, path: str) -> pa.Table:
        """``table`` (all rows from the file ``path``) with its partition columns after its own."""
        return self._append(table, [(path, table.num_rows)])

    def add_per_row(self, table: pa.Table, paths: list[str]) -> pa.Table:
        """``table`` with the partition columns of each row's file (``paths[i]`` for row ``i``)."""
        return self._append(table, [(p, 1) for p in paths])

    def retype(self, types: dict[str, pa.DataType]) -> None:
        """Read these partition columns as these types (``schema=`` names them)."""
        self.schema = pa.schema([pa.field(f.name, types.get(f.name, f.type)) for f in self.schema])

    def _append(self, table: pa.Table, runs: list[tuple[str, int]]) -> pa.Table:
        """The partition columns for ``runs`` of ``(file, rows)``, built in Arrow (a repeat per run).

        A file may hold a column named like a partition directory when its values are the
        directory's (Ray Data's rule): the file's column is kept; other values raise.
        """
        parse = pds.HivePartitioning(self.schema).parse
        typed = {path: pds.get_partition_keys(parse(path)) for path, _ in runs}
        for field in self.schema:
            if field.name in table.column_names:
                raw = [(hive_values(path).get(field.name), n) for path, n in runs]
                self._check_same(table.column(field.name), field.name, raw, runs[0][0] if runs else "?")
                continue
            table = table.append_column(field, _repeats([(typed[p].get(field.name), n) for p, n in runs], field.type))
        return table

    def _check_same(self, column: pa.ChunkedArray, name: str, raw: list[tuple[str | None, int]], shown: str) -> None:
        import pyarrow.compute as pc

        try:
            text = pc.cast(column, pa.string())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            text = None
        if text is not None:
            expected = _repeats(raw, pa.string())
            same = pc.or_kleene(pc.equal(text, expected), pc.and_(pc.is_null(text), pc.is_null(expected)))
            if pc.all(pc.fill_null(same, False)).as_py() is not False:
                return
        msg = f"{self.what}: file {shown!r} has a column {name!r} whose values differ from its partition " \
              f"directory ({name}={raw[0][0] if raw else '?'}) in the path"
        raise SchemaMismatchError(msg, "rename the column or the directory, or read with partitioning=None")


def _repeats(runs: list[tuple[Any, int]], type_: pa.DataType) -> pa.Array:
    """``value`` repeated ``n`` times for each ``(value, n)``, one array (no Python object per row)."""
    parts = [pa.repeat(pa.scalar(v, type_), n) for v, n in runs]
    if len(parts) == 1:
        return parts[0]
    return pa.concat_arrays(parts) if parts else pa.array([], type_)


def hive_columns(partitioning: Any, paths: list[str], what: str) -> HiveColumns | None:
    """The partition columns for ``partitioning`` (``"hive"`` or ``None``) over ``paths``."""
    if partitioning is None:
        return None
    if isinstance(partitioning, pds.PartitioningFactory) and partitioning.type_name == "hive":
        partitioning = "hive"  # pds.partitioning(flavor="hive"): discover, as for "hive"
    if isinstance(partitioning, pds.HivePartitioning):
        cols = HiveColumns(paths, what, partitioning.schema)
        return cols if cols else None
    style = getattr(partitioning, "style", partitioning)  # "hive", or Ray Data's Partitioning("hive")
    if str(getattr(style, "value", style)) == "hive":
        cols = HiveColumns(paths, what)
        return cols if cols else None
    msg = f"{what}(partitioning={partitioning!r}): only Hive directories (key=value) are read for this format"
    raise BridgeError(msg, 'pass partitioning="hive" (the default) or partitioning=None')
