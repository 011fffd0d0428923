"""Parquet through ``pyarrow.dataset``: split by file and row group, columns and filters pushed down.

Planning (on the driver) reads every footer once, in a thread pool: it gives
exact row counts (``count()`` needs no read), lets row groups whose statistics
cannot satisfy ``filter`` be dropped before any task starts, and lets one file
be split across tasks.  Each read task then scans only its row groups, only
the columns asked for, and applies ``filter`` row by row.  Hive partition
directories (``year=2024/``) become columns and prune whole files; their types
are those :mod:`bridge.io.partitioning` gives (the ``_common_metadata`` that
``write_parquet(partition_cols=...)`` writes, or inferred from the names).

Tensor columns are read as this library's tensor types, Ray Data's included (whose shape pyarrow
reads only where ``ray.data`` is imported): :mod:`bridge.io.ray_tensor_files` types them from
each footer, :mod:`bridge.io.parquet_schema` unifies their shapes across files, and each read
task scans such a column as its file stores it and converts it after the scan.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pds
import pyarrow.fs as pafs

from bridge.block import map_child_types
from bridge.errors import BridgeError, BridgeValueError, ConversionWarning, SchemaMismatchError
from bridge.io.datasource import Datasource, ReadTask, default_num_blocks, meta
from bridge.io.file_datasource import PATH_COLUMN
from bridge.io.parquet_schema import unify_file_schemas
from bridge.io.partitioning import FileOrder, filter_files
from bridge.io.paths import FileReadError, expand_paths, looks_like_parquet
from bridge.io.ray_tensor_files import TensorSource, convert_column, file_tensors, needs_conversion, refuse
from bridge.text_objects import is_text

_HINT = "the file is not Parquet or is truncated (an interrupted write?); delete or re-write it"
#: Rows per record batch inside a task: large batches mean few chunks per block.
_SCAN_BATCH_ROWS = 1 << 20


@dataclasses.dataclass
class _Unit:
    """One row group of one file: the smallest piece of work."""

    fragment: Any  # the whole file's pyarrow.dataset.ParquetFileFragment
    row_group: int
    path: str
    num_rows: int
    size_bytes: int


def as_expression(filter: Any) -> pds.Expression | None:  # noqa: A002 - the public name
    """A pyarrow Expression from an Expression or DNF tuples ``[("x", ">", 1), ...]``."""
    if filter is None or isinstance(filter, pds.Expression):
        return filter
    if isinstance(filter, (list, tuple)):
        import pyarrow.parquet as pq

        try:
            return pq.filters_to_expression(filter)
        except (TypeError, ValueError) as err:
            msg = f"read_parquet(filter=...) could not be understood: {err}; got {filter!r}"
            raise BridgeError(msg, 'pass pyarrow.compute.field("x") > 1, or [("x", ">", 1)]') from err
    msg = f"read_parquet(filter=...) must be a pyarrow.compute Expression or DNF tuples; got {type(filter).__name__}"
    raise BridgeError(msg, 'pass filter=pyarrow.compute.field("x") > 1')


class ParquetDatasource(Datasource):
    """Parquet files or directories (see :func:`bridge.read_parquet`)."""

    name = "Parquet"
    supports_projection = True
    supports_limit = True
    reads_in_driver = True

    def __init__(
        self,
        paths: Any,
        *,
        columns: list[str] | None = None,
        filter: Any = None,  # noqa: A002 - mirrors pyarrow
        filesystem: Any = None,
        partitioning: Any = "hive",
        schema: pa.Schema | None = None,
        file_extensions: tuple[str, ...] | None = None,
        override_num_blocks: int | None = None,
        include_paths: bool = False,
        partition_filter: Any = None,
        shuffle: Any = None,
    ) -> None:
        self.include_paths = include_paths
        self.filesystem, files = expand_paths(paths, filesystem, file_extensions, "read_parquet",
                                              listed=None if file_extensions else looks_like_parquet)
        files = filter_files(files, partition_filter, "read_parquet")
        self.order = FileOrder(shuffle, "read_parquet")
        self.filter = as_expression(filter)
        self.override_num_blocks = override_num_blocks
        self.limit: int | None = None
        paths = [f.path for f in files]
        partitioning, casts = _partitioning(partitioning, paths, self.filesystem, schema)
        schema = _with_partition_columns(schema, partitioning, casts, paths, self.filesystem)
        self.dataset = _open_dataset(paths, self.filesystem, partitioning, schema)
        #: By file: the tensor columns its read converts after the scan (see :func:`_tensor_plan`).
        self.tensors: dict[str, dict[str, TensorSource]] = {}
        #: Tensor columns no file can be read as (a Ray Data tensor of strings): refused where read.
        self.refused: dict[str, TensorSource] = {}
        if schema is None:
            self.dataset, self.tensors, self.refused = _with_unified_schema(self.dataset, columns)
            if casts:  # pyarrow casts the values parsed from the names to the dataset's types
                final = pa.schema([f.with_type(casts.get(f.name, f.type)) for f in self.dataset.schema],
                                  metadata=self.dataset.schema.metadata)
                self.dataset = pds.FileSystemDataset(list(self.dataset.get_fragments()), final,
                                                     self.dataset.format, self.dataset.filesystem)
        self.schema = self.dataset.schema
        if include_paths and PATH_COLUMN in self.schema.names:
            msg = f"read_parquet(include_paths=True): the files already have a column named {PATH_COLUMN!r}"
            raise BridgeError(msg, "rename that column in the files, or read without include_paths")
        self.columns = None if columns is None else list(columns)
        if self.columns is not None:
            _check_columns(self._scan_columns() or [], self.schema)
        self._check_refused(self._scan_columns())
        _check_filter(self.filter, self.schema)
        self.units = _plan_units(self.dataset, self.filter)
        self.exact_num_rows = self.filter is None

    # ----------------------------------------------------------------- estimates
    def _projected_fraction(self) -> float:
        if self.columns is None or not len(self.schema):
            return 1.0
        return max(len(self.columns), 1) / len(self.schema)

    def estimate_num_rows(self) -> int:
        n = sum(u.num_rows for u in self.units)
        return min(n, self.limit) if self.limit is not None else n

    def estimate_inmemory_data_size(self) -> int:
        return int(sum(u.size_bytes for u in self.units) * self._projected_fraction())

    # ----------------------------------------------------------------- pushdown
    def with_projection(self, columns: list[str]) -> ParquetDatasource:
        _check_columns([c for c in columns if not (self.include_paths and c == PATH_COLUMN)], self.schema)
        out = self._copy()
        out.columns = list(columns)
        out._check_refused(out._scan_columns())
        return out

    def _check_refused(self, columns: list[str] | None) -> None:
        """Raise for a selected tensor column that no file's values can be read as (see ``self.refused``)."""
        for name, source in self.refused.items():
            if columns is None or name in columns:
                raise refuse(name, source)

    def with_limit(self, limit: int) -> ParquetDatasource:
        out = self._copy()
        out.limit = limit if self.limit is None else min(limit, self.limit)
        if self.filter is None and self.order.shuffle is None:  # shuffled: the first files differ per run
            kept: list[_Unit] = []
            rows = 0
            for u in self.units:
                if rows >= out.limit and kept:
                    break
                kept.append(u)
                rows += u.num_rows
            out.units = kept
        return out

    def _copy(self) -> ParquetDatasource:
        out = object.__new__(ParquetDatasource)
        out.__dict__.update(self.__dict__)
        return out

    def _scan_columns(self) -> list[str] | None:
        """The columns to read from the files (``path`` is added after the scan)."""
        if self.columns is None:
            return None
        return [c for c in self.columns if not (self.include_paths and c == PATH_COLUMN)]

    def known_schema(self) -> pa.Schema:
        # The files' unified schema was read from their footers when the source was made.
        path = pa.field(PATH_COLUMN, pa.string())
        if self.columns is None:
            return self.schema.append(path) if self.include_paths else self.schema
        return pa.schema([path if self.include_paths and c == PATH_COLUMN else self.schema.field(c)
                          for c in self.columns])

    # ----------------------------------------------------------------- tasks
    def get_read_tasks(self, parallelism: int) -> list[ReadTask]:
        out_schema = self.known_schema()
        if not self.units:
            # Everything pruned (or empty files): one empty block keeps the schema.
            return [ReadTask(_EmptyRead(out_schema), meta(0, 0, out_schema, []))]
        size = self.estimate_inmemory_data_size()
        n = default_num_blocks(size, len(self.units), self.override_num_blocks)
        tasks = []
        for group in _pack(self._ordered_units(), n):
            rows = sum(u.num_rows for u in group)
            nbytes = int(sum(u.size_bytes for u in group) * self._projected_fraction())
            read = _ParquetRead(_by_file(group), self.schema, self._scan_columns(), self.filter,
                                self._path_position(),
                                {u.path: self.tensors[u.path] for u in group if u.path in self.tensors})
            files = sorted({u.path for u in group})
            tasks.append(ReadTask(read, meta(rows if self.filter is None else 0, nbytes, out_schema, files)))
        return tasks

    def _ordered_units(self) -> list[_Unit]:
        """The row groups in reading order: as listed, or by file in this run's shuffled order."""
        paths = list(dict.fromkeys(u.path for u in self.units))
        order = self.order.permutation(len(paths))
        if order is None:
            return self.units
        rank = {paths[i]: r for r, i in enumerate(order)}
        return sorted(self.units, key=lambda u: rank[u.path])  # stable: row groups keep their order

    def _path_position(self) -> int | None:
        """Where the ``path`` column goes in each block, or ``None`` without ``include_paths``."""
        if not self.include_paths:
            return None
        if self.columns is None:
            return len(self.schema)
        return self.columns.index(PATH_COLUMN) if PATH_COLUMN in self.columns else None

    def describe(self) -> str:
        files = len({u.path for u in self.units})
        return f"Parquet({files} files, {len(self.units)} row groups)"


def _check_columns(columns: list[str], schema: pa.Schema) -> None:
    missing = [c for c in columns if c not in schema.names]
    if missing:
        msg = f"read_parquet: column(s) {missing} not found; the files have {schema.names}"
        raise BridgeError(msg, "check the column names (hive partition keys are columns too)")


def _partitioning(partitioning: Any, paths: list[str], fs: pafs.FileSystem,
                  schema: pa.Schema | None) -> tuple[Any, dict[str, pa.DataType]]:
    """``partitioning`` as ``pyarrow.dataset`` is given it, and the types of the partition columns that
    it parses as another (decimals, durations, dictionaries: pyarrow parses no name as those, and casts
    the parsed values to the dataset's types).

    ``"hive"`` (or Ray Data's ``Partitioning("hive")``) is typed by :mod:`bridge.io.partitioning`: the
    layout's ``_common_metadata``, ``schema=`` and ``field_types`` where they name a column, else
    inferred.  A ``pyarrow.dataset`` partitioning or factory goes to pyarrow as given.
    """
    from bridge.io.partitioning import hive_columns, parse_schema, parse_type, sidecar_types

    if partitioning is None or isinstance(partitioning, (pds.Partitioning, pds.PartitioningFactory)):
        return partitioning, {}
    if not (isinstance(partitioning, str) or hasattr(partitioning, "style")):
        return partitioning, {}  # a list of field names, ...: pyarrow's to take or refuse
    types, source = sidecar_types(fs, paths, "read_parquet")
    named = set(schema.names) if schema is not None else set()
    cols = hive_columns(partitioning, paths, "read_parquet", {n: t for n, t in types.items() if n not in named},
                        source)
    if cols is not None and named & set(cols.names):  # schema= names a partition column: its type
        assert schema is not None
        cols.retype({n: schema.field(n).type for n in cols.names if n in named})
    if cols is None:
        return None, {}
    casts = {f.name: f.type for f in cols.schema if parse_type(f.type) != f.type}
    return pds.HivePartitioning(parse_schema(cols.schema)), casts


def _with_partition_columns(schema: pa.Schema | None, partitioning: Any, casts: dict[str, pa.DataType],
                            paths: list[str], fs: pafs.FileSystem) -> pa.Schema | None:
    """``schema=`` with the partition columns it does not name after its own (as Ray Data reads them):
    pyarrow reads a dataset with exactly the schema it is given, so ``schema=`` of the files' columns
    dropped ``year=2024/`` without a word.  A ``pyarrow.dataset`` partitioning factory learns its columns
    from the paths first."""
    if schema is None or partitioning is None:
        return schema
    if isinstance(partitioning, pds.PartitioningFactory) and paths:
        partitioning = _open_dataset(paths, fs, partitioning, None).partitioning
    parts = getattr(partitioning, "schema", None)
    if parts is None:
        return schema
    missing = [pa.field(f.name, casts.get(f.name, f.type)) for f in parts if f.name not in schema.names]
    for field in missing:
        schema = schema.append(field)
    return schema


def _open_dataset(paths: list[str], fs: pafs.FileSystem, partitioning: Any, schema: pa.Schema | None) -> pds.Dataset:
    try:
        return pds.dataset(paths, schema=schema, format="parquet", filesystem=fs, partitioning=partitioning)
    except (ValueError, OSError) as err:  # (pa.ArrowInvalid is a ValueError; so is Ray Data's refusal below)
        bad = next((p for p in paths if p in str(err)), paths[0])
        msg = f"cannot read Parquet file {bad!r}: {type(err).__name__}: {str(err).strip().splitlines()[0]}"
        raise FileReadError(msg, _hint_for(err)) from err


#: What Ray Data's tensor types raise (where ``ray.data`` is imported) for metadata Ray 2.49-2.54 pickled.
_RAY_PICKLED_METADATA = "RAY_DATA_AUTOLOAD_CLOUDPICKLE_TENSOR_METADATA"


def _hint_for(err: BaseException) -> str:
    if _RAY_PICKLED_METADATA in str(err):
        return ("the file has a tensor column written by Ray 2.49-2.54, whose metadata Ray Data (imported in this "
                "process) refuses to unpickle; read it in a process that has not imported ray.data (read_parquet "
                f"reads that metadata as plain numbers, running no code), or set {_RAY_PICKLED_METADATA}=1 if you "
                "trust the file")
    return _HINT


def _with_unified_schema(
    dataset: pds.Dataset, columns: list[str] | None = None,
) -> tuple[pds.Dataset, dict[str, dict[str, TensorSource]], dict[str, TensorSource]]:
    """``dataset`` read with every file's schema unified (``pyarrow.dataset`` takes the first file's), with
    the tensor columns each file's read converts and those refused (:func:`_tensor_plan`).

    Reads every footer, in a thread pool; pyarrow keeps each footer on its fragment,
    so planning the row groups afterwards reads none again.
    """
    fragments = list(dataset.get_fragments())
    if len(fragments) <= 1:
        typed, sources = file_tensors(dataset.schema, fragments[0].path) if fragments else (dataset.schema, {})
        restored = _dictionaries_restored(_seconds_restored(typed, fragments[0] if fragments else None), fragments,
                                          columns)
        tensors, refused = _tensor_plan([f.path for f in fragments], [sources], restored)
        if restored is dataset.schema:
            return dataset, tensors, refused
        return pds.FileSystemDataset(fragments, restored, dataset.format, dataset.filesystem), tensors, refused

    def read(frag: Any) -> pa.Schema:
        try:
            return frag.physical_schema
        except (ValueError, OSError) as err:
            raise _unreadable(frag.path, err) from err

    if len(fragments) <= 4:
        schemas = [read(f) for f in fragments]
    else:
        with concurrent.futures.ThreadPoolExecutor(max_workers=min(16, len(fragments))) as pool:
            schemas = list(pool.map(read, fragments))
    paths = [f.path for f in fragments]
    typed = [file_tensors(schema, path) for schema, path in zip(schemas, paths)]
    unified = _dictionaries_restored(_seconds_restored(unify_file_schemas(paths, [t[0] for t in typed]), fragments[0]),
                                     fragments, columns)
    tensors, refused = _tensor_plan(paths, [t[1] for t in typed], unified)
    # Hive partition keys are columns of the dataset, not of any file: keep them, last.
    partition_keys = [f for f in dataset.schema if f.name not in unified.names]
    for field in partition_keys:
        unified = unified.append(field)
    if unified.equals(dataset.schema, check_metadata=True):
        return dataset, tensors, refused
    # The same fragments (footers already read), viewed through the unified schema.
    return pds.FileSystemDataset(fragments, unified, dataset.format, dataset.filesystem), tensors, refused


def _tensor_plan(paths: list[str], sources: list[dict[str, TensorSource]],
                 schema: pa.Schema) -> tuple[dict[str, dict[str, TensorSource]], dict[str, TensorSource]]:
    """By file, the tensor columns whose scan (as the file stores them) is converted to ``schema``'s type after it:
    Ray Data's, and a shape unified into a variable-shape tensor; and the columns no file can be read as."""
    tensors: dict[str, dict[str, TensorSource]] = {}
    refused: dict[str, TensorSource] = {}
    for path, by_column in zip(paths, sources):
        for name, source in by_column.items():
            if source.problem is not None:
                refused.setdefault(name, source)
            elif name in schema.names and needs_conversion(source, schema.field(name).type):
                tensors.setdefault(path, {})[name] = source
    return tensors, refused


def _written_schema(fragment: Any) -> pa.Schema | None:
    """The Arrow schema the writer kept in ``fragment``'s file (``ARROW:schema``), or ``None``."""
    try:
        raw = (fragment.metadata.metadata or {}).get(b"ARROW:schema")
    except (AttributeError, OSError, pa.ArrowInvalid):
        return None
    if not raw:
        return None
    try:
        import base64

        return pa.ipc.read_schema(pa.py_buffer(base64.b64decode(raw)))
    except (ValueError, pa.ArrowInvalid):
        return None


def _seconds_restored(schema: pa.Schema, fragment: Any) -> pa.Schema:
    """``timestamp[s]``, ``time32[s]`` and ``date64`` columns again where the writer's Arrow schema says so.

    Parquet has no seconds unit and one date type, so pyarrow stores ``timestamp[s]`` and
    ``time32[s]`` as milliseconds and ``date64`` as ``date32`` (days); the Arrow schema it
    keeps in the file (``ARROW:schema``) still names the type, and those milliseconds are
    whole seconds, those days whole days, so reading them back as the written type is exact
    (pyarrow and Ray Data give ``timestamp[ms]``, ``time32[ms]``, ``date32``).
    """
    if fragment is None or not any(_restorable_within(f.type) for f in schema):
        return schema
    original = _written_schema(fragment)
    if original is None:
        return schema
    fields = list(schema)
    changed = False
    for i, field in enumerate(fields):
        if field.name not in original.names:
            continue
        was = original.field(field.name).type
        if was != field.type and _stored_within(was) == field.type:
            fields[i] = field.with_type(was)
            changed = True
    return pa.schema(fields, metadata=schema.metadata) if changed else schema


def _dictionaries_restored(schema: pa.Schema, fragments: list[Any], columns: list[str] | None = None) -> pa.Schema:
    """Dictionary columns of numbers (dates, decimals, ...) again where every file's writer wrote one.

    pyarrow reads a Parquet column back as a dictionary only for strings and binary: a dictionary of
    numbers -- a pandas ``Categorical`` of ints, say -- comes back as its values (as from pyarrow and Ray
    Data).  Where the Arrow schema each file keeps (``ARROW:schema``) says the column was an unordered
    dictionary of the type it is read as (or of the type Parquet stores as that, ``timestamp[s]`` as
    milliseconds), it is read as that dictionary type again: each read scans the values and encodes
    them (:func:`encode_dictionary`), the same values, the dictionary sorted.  Parquet's reader gives
    the values only, not the dictionary: its order and any value no row used are not restored.  An
    *ordered* dictionary's order is what it means, so such a column stays its values, with a
    :class:`~bridge.errors.ConversionWarning` naming it (where ``columns`` is given, only for those read).
    """
    if not fragments:
        return schema
    first = _written_schema(fragments[0])
    if first is None:
        return schema
    wanted = {f.name: first.field(f.name).type for f in schema if f.name in first.names
              and _restores_as(first.field(f.name).type, f.type)}
    if not wanted:
        return schema
    for frag in fragments[1:]:  # every file must say the same (their footers are read already)
        written = _written_schema(frag)
        if written is None:
            return schema
        wanted = {n: t for n, t in wanted.items() if n not in written.names or written.field(n).type == t}
    fields = list(schema)
    changed = False
    for name, was in wanted.items():
        if was.ordered:
            if columns is not None and name not in columns:
                continue
            warnings.warn(f"read_parquet: column {name!r} was written as {was}; Parquet keeps the values of a "
                          f"dictionary of numbers but not the order of its dictionary: read as {was.value_type}",
                          ConversionWarning, stacklevel=5)
            continue
        i = schema.get_field_index(name)
        fields[i] = fields[i].with_type(was)
        changed = True
    return pa.schema(fields, metadata=schema.metadata) if changed else schema


def _restores_as(was: pa.DataType, read: pa.DataType) -> bool:
    """Whether a column written as ``was`` and read as ``read`` is a dictionary of numbers read as its values
    (or as what Parquet stores them as: milliseconds for seconds, ``date32`` for ``date64``, int64 for a
    duration, which pyarrow restores from the Arrow schema only outside a dictionary)."""
    if not (pa.types.is_dictionary(was) and _dictionary_value(was.value_type)):
        return False
    value = was.value_type
    if not (read == value or read == _stored_as(value) or (pa.types.is_duration(value) and read == pa.int64())):
        return False
    try:
        pc.dictionary_encode(pa.array([], value))
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid, pa.ArrowTypeError):
        return False
    return True


def _dictionary_value(t: pa.DataType) -> bool:
    """Whether ``t`` can be the value type of a dictionary the read encodes (not text: pyarrow reads those as
    dictionaries itself; nor nested or extension types, which Arrow does not dictionary-encode)."""
    if isinstance(t, pa.BaseExtensionType) or pa.types.is_dictionary(t) or t.num_fields or pa.types.is_null(t):
        return False
    return not (is_text(t) or pa.types.is_string_view(t) or pa.types.is_binary_view(t))


def encoded_columns(schema: pa.Schema) -> dict[str, pa.DictionaryType]:
    """The columns of ``schema`` a read scans as their values and encodes after: dictionaries of numbers,
    which pyarrow's scan cannot cast to (:func:`_dictionaries_restored`)."""
    return {f.name: f.type for f in schema if pa.types.is_dictionary(f.type) and _dictionary_value(f.type.value_type)}


def values_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` with its dictionaries of numbers as their values: what pyarrow scans (every such column,
    also one only a filter reads) and plans row groups with (their statistics are of the values)."""
    for name, typ in encoded_columns(schema).items():
        i = schema.get_field_index(name)
        schema = schema.set(i, schema.field(i).with_type(typ.value_type))
    return schema


def encode_dictionary(col: pa.ChunkedArray, typ: pa.DictionaryType, name: str, path: str) -> pa.ChunkedArray:
    """``col``'s values as a dictionary column of type ``typ``: the values unchanged (encoded by their
    bits: 0.0 and -0.0 stay apart), the dictionary sorted (pandas sorts a ``Categorical`` of an unordered
    dictionary by it, and ``pd.Categorical`` sorts its categories unless told otherwise)."""
    values = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    encoded = pc.dictionary_encode(values)
    order = pc.array_sort_indices(encoded.dictionary).to_numpy()
    if len(order) > 1 and (order[1:] < order[:-1]).any():
        rank = np.empty(len(order), dtype=np.int64)
        rank[order] = np.arange(len(order), dtype=np.int64)
        indices = pc.take(pa.array(rank), encoded.indices)
        encoded = pa.DictionaryArray.from_arrays(indices, encoded.dictionary.take(pa.array(order)))
    try:
        return pa.chunked_array([encoded.cast(typ)])
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as err:
        msg = f"read_parquet: column {name!r} of {path!r} cannot be read as {typ}: {err}"
        raise SchemaMismatchError(msg, f"pass schema= with {name!r} as {typ.value_type} (its values), "
                                       f"or as a dictionary with wider indices") from err


def _restorable(t: pa.DataType) -> bool:
    """Whether ``t`` is a type Parquet may have stored another Arrow type as (see :func:`_seconds_restored`)."""
    return (pa.types.is_timestamp(t) and t.unit == "ms") or t == pa.time32("ms") or t == pa.date32()


def _restorable_within(t: pa.DataType) -> bool:
    """:func:`_restorable` for ``t`` or any type nested in it (``list<date32>`` may have been ``list<date64>``)."""
    return _restorable(t) or any(_restorable_within(t.field(i).type) for i in range(t.num_fields))


def _stored_within(t: pa.DataType) -> pa.DataType:
    """The type pyarrow reads a column written as ``t`` back as, nested types too (``list<date64>`` as
    ``list<date32>``: pyarrow restores the written type from the Arrow schema only at the top)."""
    stored = _stored_as(t)
    if stored is not None:
        return stored
    if pa.types.is_dictionary(t):
        return t  # (a dictionary's values are read as they are stored, or encoded again: _dictionaries_restored)
    return map_child_types(t, _stored_within)


def _stored_as(t: pa.DataType) -> pa.DataType | None:
    """The type pyarrow reads a column written as ``t`` back as, where that is another one, else ``None``."""
    if pa.types.is_timestamp(t) and t.unit == "s":
        return pa.timestamp("ms", tz=t.tz)
    if t == pa.time32("s"):
        return pa.time32("ms")
    if t == pa.date64():
        return pa.date32()
    return None


def _unreadable(path: str, err: BaseException) -> FileReadError:
    msg = f"cannot read Parquet file {path!r}: {type(err).__name__}: {str(err).strip().splitlines()[0]}"
    return FileReadError(msg, _hint_for(err))


def _check_filter(filter: pds.Expression | None, schema: pa.Schema) -> None:  # noqa: A002
    """``filter=`` bound to the files' columns, at the call: pyarrow's own "No match for FieldRef.Name(zz)"
    or "Function 'greater' has no kernel matching input types (string, int8)" named neither the read nor
    the filter, nor the columns there are."""
    if filter is None:
        return
    from bridge.block import empty_table

    try:
        empty_table(schema).filter(filter)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as err:
        why = str(err).strip().splitlines()[0]
        columns = ", ".join(f"{f.name}: {f.type}" for f in schema)
        msg = f"read_parquet(filter={filter}): the filter does not apply to the files' columns: {why}"
        hint = (f"the files have {columns}; name one of them, compare it with a value of its type "
                "(pc.field('s') == 'x' for a string), and make the whole filter a condition (true or false)")
        raise BridgeValueError(msg, hint) from err


def _plan_units(dataset: pds.Dataset, filter: pds.Expression | None) -> list[_Unit]:  # noqa: A002
    """Every row group that may hold matching rows, in file order (footers read in parallel)."""
    fragments = list(dataset.get_fragments(filter=filter) if filter is not None else dataset.get_fragments())
    scan_schema = values_schema(dataset.schema)  # row-group statistics are of a dictionary's values

    def split(frag: Any) -> list[_Unit]:
        try:
            pieces = frag.split_by_row_group(filter=filter, schema=scan_schema)
        except (ValueError, OSError) as err:
            msg = f"cannot read Parquet file {frag.path!r}: {type(err).__name__}: {str(err).strip().splitlines()[0]}"
            raise FileReadError(msg, _hint_for(err)) from err
        units = []
        for piece in pieces:
            rg = piece.row_groups[0]
            units.append(_Unit(frag, rg.id, frag.path, rg.num_rows, int(rg.total_byte_size)))
        return units

    if len(fragments) <= 4:
        results = [split(f) for f in fragments]
    else:
        with concurrent.futures.ThreadPoolExecutor(max_workers=min(16, len(fragments))) as pool:
            results = list(pool.map(split, fragments))
    return [u for units in results for u in units]


def _pack(units: list[_Unit], n: int) -> list[list[_Unit]]:
    """Consecutive groups of row groups of roughly equal size, at most ``n`` groups."""
    n = max(1, min(n, len(units)))
    total = sum(max(u.size_bytes, 1) for u in units)
    target = total / n
    groups: list[list[_Unit]] = [[]]
    acc = 0.0
    for i, u in enumerate(units):
        if groups[-1] and (acc >= target or len(units) - i <= n - len(groups)):
            groups.append([])
            acc = 0.0
        groups[-1].append(u)
        acc += max(u.size_bytes, 1)
    return groups


def _by_file(group: list[_Unit]) -> list[Any]:
    """One fragment per file holding the group's row groups of that file (one footer read each)."""
    out = []
    i = 0
    while i < len(group):
        j = i
        while j < len(group) and group[j].path == group[i].path:
            j += 1
        frag = group[i].fragment
        ids = [u.row_group for u in group[i:j]]
        out.append(frag.format.make_fragment(frag.path, frag.filesystem, frag.partition_expression, row_groups=ids))
        i = j
    return out


@dataclasses.dataclass
class _EmptyRead:
    schema: pa.Schema

    def __call__(self) -> Iterator[pa.Table]:
        from bridge.block import empty_table

        yield empty_table(self.schema)


@dataclasses.dataclass
class _ParquetRead:
    """One read task: scan these row-group fragments with the projection and filter."""

    fragments: list[Any]
    schema: pa.Schema
    columns: list[str] | None
    filter: pds.Expression | None
    path_at: int | None = None  # include_paths: the position of the ``path`` column
    #: By file: tensor columns scanned as the file stores them, converted to ``schema``'s type after.
    tensors: dict[str, dict[str, TensorSource]] = dataclasses.field(default_factory=dict)

    def __call__(self) -> Iterator[pa.Table]:
        encoded = encoded_columns(self.schema)  # scanned as their values: pyarrow casts nothing to these
        for frag in self.fragments:
            tensors = self.tensors.get(frag.path, {})
            scan_schema = self.schema
            for name, source in tensors.items():
                i = scan_schema.get_field_index(name)
                scan_schema = scan_schema.set(i, pa.field(name, source.storage, scan_schema.field(i).nullable))
            scan_schema = values_schema(scan_schema)
            try:
                table = frag.to_table(
                    schema=scan_schema, columns=self.columns, filter=self.filter, batch_size=_SCAN_BATCH_ROWS
                )
            except (ValueError, pa.ArrowNotImplementedError, pa.ArrowTypeError, OSError) as err:
                detail = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
                cast = _cast_failure(frag, self.schema, self.columns, detail, set(tensors) | set(encoded))
                if cast is not None:
                    raise cast from err
                msg = f"cannot read Parquet file {frag.path!r} (row groups {[rg.id for rg in frag.row_groups]}): {detail}"
                raise FileReadError(msg, _hint_for(err)) from err
            for name, source in tensors.items():
                if name in table.column_names:
                    i = table.column_names.index(name)
                    field = self.schema.field(name)
                    table = table.set_column(i, field, convert_column(table.column(i), source, field.type, name,
                                                                      frag.path))
            for name, typ in encoded.items():
                if name in table.column_names:
                    i = table.column_names.index(name)
                    table = table.set_column(i, self.schema.field(name),
                                             encode_dictionary(table.column(i), typ, name, frag.path))
            if self.path_at is not None:
                table = table.add_column(self.path_at, PATH_COLUMN, pa.array([frag.path] * table.num_rows, pa.string()))
            yield table


def _cast_failure(frag: Any, schema: pa.Schema, columns: list[str] | None, detail: str,
                  converted: set[str] | frozenset[str] = frozenset()) -> SchemaMismatchError | None:
    """The error for a file whose column could not be cast to the read schema, or None if that is not the cause."""
    try:
        physical = frag.physical_schema
    except (ValueError, OSError):
        return None
    wanted = schema.names if columns is None else columns
    differ = [n for n in wanted if n in physical.names and n in schema.names and n not in converted
              and physical.field(n).type != schema.field(n).type]
    if not differ:
        return None
    name = next((n for n in differ if n in detail), differ[0])
    got, want = physical.field(name).type, schema.field(name).type
    msg = (f"read_parquet: column {name!r} is {got} in {frag.path!r} and cannot be read as {want} "
           f"(the schema being read): {detail}")
    hint = (f"pass schema= with {name!r} as {got} (or a type every value converts to), or fix the values "
            f"in {frag.path!r}")
    return SchemaMismatchError(msg, hint)
