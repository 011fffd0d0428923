"""Which files a read sees, in which order, and the columns their directories hold.

Three read options that act on the file list before any task starts, the same
for every file format:

* ``partitioning="hive"``: ``key=value`` directories (``year=2024/city=NY/``)
  become columns after the file's own, the same for every format.  Their types,
  first found first:

  1. the types the read is given: ``partitioning=pyarrow.dataset.HivePartitioning(schema)``
     (exactly those columns), Ray Data's ``Partitioning("hive", field_types={"year": int})``,
     or ``schema=`` naming the column;
  2. for ``read_parquet``, the types ``write_parquet(partition_cols=...)`` recorded in
     ``_common_metadata`` at the top of the layout (pyarrow's convention: a Parquet file
     holding the full schema, partition columns included, that readers of the data skip),
     so a round trip gives back booleans, dates, timestamps, ``int64``, strings such as
     ``"007"``, as written;
  3. otherwise inferred from the names: ``int32`` when every value is an int32
     written as ``str(int)`` (``"007"``, ``"+5"``, ``"-0"`` stay strings: reading them as
     numbers would change them), else ``string``.

  ``__HIVE_DEFAULT_PARTITION__`` is null; ``%20`` is decoded.  A directory value that
  does not read as its column's given type raises naming both.
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
#: An integer as ``str(int)`` writes it: a name read as an int must read back as the same name
#: ("007" would become 7; pyarrow's own inference takes it as one).
_INT = re.compile(r"^(0|-?[1-9][0-9]*)$")
_INT32 = (-(2**31), 2**31 - 1)
#: The file, at the top of a partitioned layout, holding the full schema (pyarrow's convention).
SIDECAR = "_common_metadata"
#: Ray Data's ``field_types`` (Python types) as Arrow types, as Ray Data maps them.
_RAY_FIELD_TYPES = {int: pa.int64(), float: pa.float64(), bool: pa.bool_(), str: pa.string()}


def hive_text(value: Any) -> str:
    """The text of a partition value in its directory name (before URI-encoding), as
    ``write_parquet(partition_cols=...)`` writes it; ``read_parquet`` reads it back as the value.

    Example:
        >>> import datetime
        >>> hive_text(True), hive_text(datetime.date(2024, 1, 31)), hive_text(None)
        ('true', '2024-01-31', '__HIVE_DEFAULT_PARTITION__')
    """
    if value is None:
        return HIVE_NULL
    if isinstance(value, bool):
        return str(value).lower()
    return value.isoformat() if hasattr(value, "isoformat") else str(value)


def partition_text(scalar: pa.Scalar) -> str:
    """:func:`hive_text` of an Arrow scalar, at its type's precision: a millisecond timestamp or time
    is written with three decimals (Python's ``isoformat`` writes six, which pyarrow does not parse
    as milliseconds).

    Example:
        >>> partition_text(pa.scalar(1, pa.timestamp("ms")))
        '1970-01-01T00:00:00.001'
    """
    t = scalar.type
    if scalar.is_valid and (pa.types.is_timestamp(t) or pa.types.is_time(t)) and t.unit == "ms":
        return str(scalar.as_py().isoformat(timespec="milliseconds"))
    return hive_text(scalar.as_py())


def parse_type(t: pa.DataType) -> pa.DataType:
    """The type a directory name is parsed as for a partition column of type ``t`` (the values are
    cast to ``t`` afterwards): ``pyarrow.dataset`` parses no decimal, duration or dictionary."""
    if pa.types.is_dictionary(t):
        return parse_type(t.value_type)
    if pa.types.is_decimal(t):
        return pa.string()
    if pa.types.is_duration(t):
        return pa.int64()  # written as the count of its unit, as pyarrow.dataset.write_dataset writes it
    return t


def parse_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` with each partition column as its :func:`parse_type`."""
    return pa.schema([f.with_type(parse_type(f.type)) for f in schema])


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
    """The partition columns of a set of files, typed once on the driver, added to each file's tables.

    ``schema``: a ``HivePartitioning``'s own schema (exactly its names and types); ``types``: the
    types of some columns, the rest inferred (see the module docstring), ``sources`` saying where
    each comes from.  Every directory value is checked to read as its column's given type.
    """

    def __init__(self, paths: list[str], what: str, schema: pa.Schema | None = None,
                 types: dict[str, pa.DataType] | None = None, sources: dict[str, str] | None = None) -> None:
        raw: dict[str, set[str]] = {}
        for path in paths:
            for key, value in hive_values(path).items():
                raw.setdefault(key, set())
                if value is not None:
                    raw[key].add(value)
        fields = []
        for key, present in raw.items():
            ints = all(_INT.match(v) and _INT32[0] <= int(v) <= _INT32[1] for v in present) and bool(present)
            fields.append(pa.field(key, (types or {}).get(key, pa.int32() if ints else pa.string())))
        if schema is not None:  # a HivePartitioning with its own schema: its names and types
            fields = [schema.field(n) for n in schema.names]
        self.schema = pa.schema(fields)
        self.what = what
        self._values = raw
        given = set(schema.names) if schema is not None else set(types or {})
        for field in self.schema:
            if field.name in given:
                source = (sources or {}).get(field.name, "partitioning=")
                check_values(field, sorted(raw.get(field.name, ())), what, source)

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
        values = self.__dict__.get("_values", {})
        for field in self.schema:
            if field.name in types:
                check_values(field, sorted(values.get(field.name, ())), self.what, "schema=")

    def __getstate__(self) -> dict[str, Any]:
        # Read tasks need the types, not every directory's value (checked on the driver).
        state = self.__dict__.copy()
        state.pop("_values", None)
        return state

    def _append(self, table: pa.Table, runs: list[tuple[str, int]]) -> pa.Table:
        """The partition columns for ``runs`` of ``(file, rows)``, built in Arrow (a repeat per run).

        A file may hold a column named like a partition directory when its values are the
        directory's (Ray Data's rule): the file's column is kept; other values raise.
        """
        parsing = parse_schema(self.schema)
        parse = pds.HivePartitioning(parsing).parse
        typed = {path: pds.get_partition_keys(parse(path)) for path, _ in runs}
        for field, parsed in zip(self.schema, parsing):
            if field.name in table.column_names:
                raw = [(hive_values(path).get(field.name), n) for path, n in runs]
                self._check_same(table.column(field.name), field.name, raw, runs[0][0] if runs else "?")
                continue
            values = _repeats([(typed[p].get(field.name), n) for p, n in runs], parsed.type)
            table = table.append_column(field, cast_partition(values, field.type))
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


def cast_partition(values: Any, t: pa.DataType) -> Any:
    """Partition values parsed as :func:`parse_type` -> type ``t``."""
    if values.type == t:
        return values
    import pyarrow.compute as pc

    if pa.types.is_dictionary(t):
        return pc.cast(pc.dictionary_encode(cast_partition(values, t.value_type)), t)
    return pc.cast(values, t)


def check_values(field: pa.Field, values: list[str], what: str, source: str) -> None:
    """Raise unless every directory value (decoded, not null) reads as ``field``'s type."""
    import urllib.parse

    parsed = field.with_type(parse_type(field.type))
    parse = pds.HivePartitioning(pa.schema([parsed])).parse
    key = urllib.parse.quote(field.name, safe="")
    for value in values:
        try:
            keys = pds.get_partition_keys(parse(f"/{key}={urllib.parse.quote(value, safe='')}/f"))
            cast_partition(pa.array([keys.get(field.name)], parsed.type), field.type)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as err:
            msg = (f"{what}: the partition directory {field.name}={value} does not read as {field.type}, the "
                   f"type {source} gives {field.name!r}: {str(err).strip().splitlines()[0]}")
            hint = (f"read with partitioning=pyarrow.dataset.HivePartitioning(pyarrow.schema([({field.name!r}, "
                    f"pyarrow.string())])) to take the directory names as text")
            if source.endswith(SIDECAR):
                hint += f", or delete {source} to have the types inferred"
            raise SchemaMismatchError(msg, hint) from err


def read_back(t: pa.DataType, text: str) -> pa.Scalar | None:
    """What ``read_parquet`` reads the directory ``k=text`` of a partition column of type ``t`` as:
    the scalar, ``None`` for the null directory or where the text does not parse as ``t``."""
    import urllib.parse

    field = pa.field("k", parse_type(t))
    try:
        keys = pds.get_partition_keys(pds.HivePartitioning(pa.schema([field])).parse(
            f"/k={urllib.parse.quote(text, safe='')}/f"))
        if keys.get("k") is None:
            return None
        return cast_partition(pa.array([keys["k"]], field.type), t)[0]
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return None


def _repeats(runs: list[tuple[Any, int]], type_: pa.DataType) -> pa.Array:
    """``value`` repeated ``n`` times for each ``(value, n)``, one array (no Python object per row)."""
    parts = [pa.repeat(pa.scalar(v, type_), n) for v, n in runs]
    if len(parts) == 1:
        return parts[0]
    return pa.concat_arrays(parts) if parts else pa.array([], type_)


def _is_hive(partitioning: Any) -> bool:
    """``"hive"``, ``pds.partitioning(flavor="hive")`` (discover) or Ray Data's ``Partitioning("hive")``."""
    if isinstance(partitioning, pds.PartitioningFactory):
        return partitioning.type_name == "hive"
    if isinstance(partitioning, pds.Partitioning):
        return False
    style = getattr(partitioning, "style", partitioning)
    return str(getattr(style, "value", style)) == "hive"


def field_types(partitioning: Any, what: str) -> dict[str, pa.DataType]:
    """The Arrow types of Ray Data's ``Partitioning(..., field_types={"year": int})`` (``{}`` otherwise)."""
    given = getattr(partitioning, "field_types", None) or {}
    out = {}
    for name, py_type in given.items():
        if py_type not in _RAY_FIELD_TYPES:
            msg = f"{what}(partitioning=...): field_types[{name!r}] is {py_type!r}; Ray Data's field types are " \
                  f"int, float, bool and str"
            raise BridgeTypeError(msg, "pass one of them, or a pyarrow.dataset.HivePartitioning(pyarrow.schema("
                                       "[...])) for any Arrow type")
        out[name] = _RAY_FIELD_TYPES[py_type]
    return out


def hive_columns(partitioning: Any, paths: list[str], what: str,
                 types: dict[str, pa.DataType] | None = None, source: str = "") -> HiveColumns | None:
    """The partition columns for ``partitioning`` (``"hive"`` or ``None``) over ``paths``.

    ``types``: known types of some columns (``source`` says whence, e.g. the :data:`SIDECAR`);
    Ray Data's ``field_types`` take precedence over them.
    """
    if partitioning is None:
        return None
    if isinstance(partitioning, pds.HivePartitioning):
        cols = HiveColumns(paths, what, partitioning.schema)
        return cols if cols else None
    if _is_hive(partitioning):
        given = field_types(partitioning, what)
        sources = {**{n: source for n in types or {}}, **{n: "partitioning=...field_types" for n in given}}
        cols = HiveColumns(paths, what, types={**(types or {}), **given}, sources=sources)
        return cols if cols else None
    msg = f"{what}(partitioning={partitioning!r}): only Hive directories (key=value) are read for this format"
    raise BridgeError(msg, 'pass partitioning="hive" (the default) or partitioning=None')


def _sidecar_dirs(paths: list[str]) -> list[str]:
    """Where a partitioned layout holding ``paths`` may keep its :data:`SIDECAR`, deepest first: the
    directory above each ``key=value`` directory the paths share, and the deepest one they share."""
    if not paths:
        return []
    import os

    # The longest common directory: the common prefix of the strings, cut after its last full segment.
    common = posixpath.dirname(os.path.commonprefix(paths)).split("/")
    out = ["/".join(common[:i]) for i, seg in enumerate(common) if seg.partition("=")[0] and "=" in seg]
    out.append("/".join(common))
    return [d for d in dict.fromkeys(reversed(out)) if d]


def sidecar_types(fs: Any, paths: list[str], what: str) -> tuple[dict[str, pa.DataType], str]:
    """The column types in the layout's :data:`SIDECAR` (``write_parquet(partition_cols=...)`` writes
    one) and its path, or ``({}, "")`` when there is none.  Only paths with ``key=value`` directories
    are looked at (one ``get_file_info`` call for every candidate directory)."""
    import pyarrow.fs as pafs

    partitioned = [p for p in paths if "=" in p.rpartition("/")[0]]
    candidates = [f"{d}/{SIDECAR}" for d in _sidecar_dirs(partitioned)]
    if not candidates:
        return {}, ""
    try:
        infos = fs.get_file_info(candidates)
    except OSError:
        return {}, ""
    found = next((i.path for i in infos if i.type == pafs.FileType.File), None)
    if found is None:
        return {}, ""
    import pyarrow.parquet as pq

    try:
        schema = _written_types(pq.read_metadata(found, filesystem=fs))
    except (pa.ArrowInvalid, OSError) as err:
        from bridge.io.paths import FileReadError

        msg = f"{what}: cannot read the schema file {found!r} of the partitioned layout: {err}"
        raise FileReadError(msg, f"delete {found!r} (it only records the partition columns' types) or "
                                 "re-write the data with write_parquet(partition_cols=...)") from err
    return {f.name: f.type for f in schema}, found


def _written_types(metadata: Any) -> pa.Schema:
    """The Arrow schema a Parquet metadata file was written with (its ``ARROW:schema``: a
    ``timestamp[s]``, ``time32[s]`` or ``date64`` partition column is kept as that, where the
    Parquet schema says milliseconds or days), else the one its Parquet schema reads as."""
    import base64

    raw = (metadata.metadata or {}).get(b"ARROW:schema")
    if raw:
        try:
            written = pa.ipc.read_schema(pa.py_buffer(base64.b64decode(raw)))
            if written.names == metadata.schema.to_arrow_schema().names:
                return written
        except (ValueError, pa.ArrowInvalid):
            pass
    return metadata.schema.to_arrow_schema()
