"""Datasets from data already in memory (Arrow, pandas, NumPy, Python lists) or in the object store."""

from __future__ import annotations

import collections
import concurrent.futures
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import pyarrow as pa
import ray

from bridge.batch import frame_to_block, keeps_frame_index
from bridge.block import Block, BlockMetadata, empty_table, normalize_types
from bridge.errors import BridgeError, BridgeTypeError
from bridge.execution.bundle import RefBundle
from bridge.io.datasource import split_even
from bridge.keywords import checked_keywords
from bridge.plan.logical import InputData, Read

if TYPE_CHECKING:
    from bridge.dataset import Dataset, MaterializedDataset

T = TypeVar("T")


def _materialized(bundles: list[RefBundle], name: str,
                  all_null: list[frozenset[str]] | None = None) -> MaterializedDataset:
    from bridge.dataset import MaterializedDataset

    return MaterializedDataset(InputData([], _one_schema(bundles, name, all_null), name))


def _one_schema(bundles: list[RefBundle], name: str,
                all_null: list[frozenset[str]] | None = None) -> list[RefBundle]:
    """The blocks of one Dataset share one schema.

    Parts that bring the same columns with different types (int32 in one pandas
    frame and int64 in the next, a decimal's scale per Dask partition, string and
    large_string) would otherwise give batches whose dtype depends on the block
    they came from, and a ``schema()`` that the other blocks' values do not fit.
    Each odd block is cast, in a task, to the promotion of them all
    (:func:`bridge.plan.schema.unified_schema`, which refuses types no one type
    holds); the cast is safe, so a value the promoted type cannot hold (an int
    above 2**53 to float64) raises instead of changing.  Blocks whose columns
    differ are left as they are (``schema()`` then reports all columns, as Ray
    Data's does).  Costs one schema comparison per block when they agree.

    ``all_null`` (one set per block, where the blocks were made here): the float columns holding no value
    in that block.  Such a column's type says nothing of its values -- a pandas chunk whose int or text
    column is empty there is float64 of NaN -- so where another block holds values of that column, it
    takes theirs: ints stay ints (with nulls), rather than all becoming float64 or, past 2**53, refused.
    """
    from bridge.plan.schema import blocks_schema

    metas = [m for b in bundles for m in b.metas]
    if _agree(metas):
        return bundles
    target = blocks_schema(_values_typed(metas, all_null) if all_null else metas, name)
    assert target is not None
    return _cast_to(bundles, target, name)


def _values_typed(metas: list[BlockMetadata], all_null: list[frozenset[str]]) -> list[BlockMetadata]:
    """``metas`` with each column that holds no value in its block typed ``null`` (which any type takes),
    where another block holds values of that column."""
    with_values: set[str] = set()
    for m, empty in zip(metas, all_null):
        if m.schema is not None and m.num_rows:
            with_values.update(n for n in m.schema.names if n not in empty)
    out = []
    for m, empty in zip(metas, all_null):
        loose = [n for n in empty if n in with_values]
        if m.schema is None or not loose:
            out.append(m)
            continue
        schema = m.schema
        for n in loose:
            i = schema.get_field_index(n)
            if i >= 0:
                schema = schema.set(i, schema.field(i).with_type(pa.null()))
        out.append(BlockMetadata(num_rows=m.num_rows, size_bytes=m.size_bytes, schema=schema))
    return out


def _all_null_columns(block: Block) -> frozenset[str]:
    """The float columns of ``block`` that hold rows but no value: what pandas makes of a column with no
    value (NaN), whatever the column holds elsewhere.  (A column of another type keeps it: an all-null int64
    next to int8 still makes the column int64.)"""
    if not block.num_rows:
        return frozenset()
    return frozenset(f.name for f, c in zip(block.schema, block.columns)
                     if c.null_count == len(c) and pa.types.is_floating(f.type))


def _agree(metas: list[BlockMetadata]) -> bool:
    """Whether every block that has a schema has the first one's (one comparison per block)."""
    first = next((m.schema for m in metas if m.schema is not None), None)
    return first is None or all(m.schema is None or m.schema is first or m.schema.equals(first) for m in metas)


def one_schema_where_exact(bundles: list[RefBundle], name: str) -> list[RefBundle]:
    """``materialize()``'s blocks in one type per column where that changes no value by its type alone.

    A function's output may differ in type by block (int32 here and int64 there, a column all None in
    one batch and strings in the next): each block's column is cast to the type ``schema()`` reports
    for it where the block's type widens exactly to that (:func:`bridge.block.widens_exactly`), so
    later batches do not change dtype with their block.  A column whose types no one type holds, or
    that only a checked cast would take there (int64 to float64), is left as it came, as Ray Data
    leaves it.  Costs one schema comparison per block when they agree.
    """
    from bridge.block import widens_exactly
    from bridge.errors import SchemaMismatchError
    from bridge.plan.schema import blocks_schema

    metas = [m for b in bundles for m in b.metas]
    if _agree(metas):
        return bundles
    if any(m.schema is not None and len(set(m.schema.names)) != len(m.schema.names) for m in metas):
        return bundles  # duplicate column names: which of them is which is the block's to say
    try:
        shared = blocks_schema(metas, name)
    except SchemaMismatchError:  # a column no one type holds: the others still can be one type
        shared = _column_types(metas)
    assert shared is not None

    def target(schema: pa.Schema) -> pa.Schema:
        fields = []
        for f in schema:
            to = shared.field(f.name) if f.name in shared.names else None
            fields.append(to.with_metadata(f.metadata) if to is not None and widens_exactly(f.type, to.type)
                          else f)
        return pa.schema(fields, metadata=schema.metadata)

    return _cast_to(bundles, target, name)


def _column_types(metas: list[BlockMetadata]) -> pa.Schema:
    """Per column the promotion of its types where they have one (a column whose types have none keeps
    the first block's type, which only its own blocks widen to)."""
    from bridge.errors import SchemaMismatchError
    from bridge.plan.schema import unified_schema

    fields: dict[str, pa.Field] = {}
    seen: dict[str, list[pa.Field]] = {}
    for m in metas:
        if m.schema is not None and m.num_rows:
            for f in m.schema:
                seen.setdefault(f.name, []).append(f)
    for col, found in seen.items():
        try:
            fields[col] = unified_schema([pa.schema([f]) for f in found], "materialize").field(col)
        except SchemaMismatchError:
            fields[col] = found[0]
    return pa.schema(list(fields.values()))


def _cast_to(bundles: list[RefBundle], target: pa.Schema | Callable[[pa.Schema], pa.Schema],
             name: str) -> list[RefBundle]:
    """Each block whose schema differs from ``target`` (one schema of the same columns, or a block's
    schema -> its target) cast to it, in a task."""
    out: list[RefBundle] = []
    pending: list[tuple[int, int, ray.ObjectRef]] = []
    index = -1
    for b in bundles:
        refs, bmetas = list(b.refs), list(b.metas)
        for j, (ref, meta) in enumerate(zip(refs, bmetas)):
            index += 1
            s = meta.schema
            if s is None:
                continue
            mine = target(s) if callable(target) else target
            if s.equals(mine) or set(s.names) != set(mine.names) or len(s.names) != len(mine.names):
                continue
            if not meta.num_rows:
                empty = empty_table(mine).replace_schema_metadata(s.metadata)
                refs[j], bmetas[j] = ray.put(empty), BlockMetadata.of(empty)
                continue
            block, new_meta = _cast_block.remote(ref, mine, name, index)
            refs[j] = block
            pending.append((len(out), j, new_meta))
        out.append(RefBundle(refs, bmetas))
    if pending:
        from bridge.execution.streaming_executor import unwrap_error

        try:
            done = ray.get([m for _, _, m in pending])
        except ray.exceptions.RayTaskError as err:
            for k, j, _ in pending:  # read the failed casts' blocks too: Ray logs errors nobody read
                ray.wait([out[k].refs[j]], timeout=0)
                try:
                    ray.get(out[k].refs[j], timeout=0)
                except Exception:  # noqa: BLE001, S110 - the error raised below says it
                    pass
            raise unwrap_error(err) from None
        for (k, j, _), meta in zip(pending, done):
            out[k].metas[j] = meta
    return out


@ray.remote(num_returns=2)
def _cast_block(block: Block, schema: pa.Schema, name: str, index: int) -> tuple[Block, BlockMetadata]:
    cast = cast_to_shared(block, schema, f"{name}: block {index}")
    return cast, BlockMetadata.of(cast)


def cast_to_shared(table: pa.Table, schema: pa.Schema, where: str) -> pa.Table:
    """``table`` (the same columns as ``schema``) cast safely to the type its columns share with the other
    parts, keeping its own metadata; a value that type cannot hold raises ``SchemaMismatchError``."""
    from bridge.errors import SchemaMismatchError

    table = table.select(schema.names)
    try:
        for i, (f, col) in enumerate(zip(table.schema, table.columns)):
            to = schema.field(f.name).type
            if f.type != to and len(col) and col.null_count == len(col):
                # No value to convert: nulls of the shared type (Arrow casts no double to a list, say).
                table = table.set_column(i, f.with_type(to), pa.nulls(len(col), to))
        return table.cast(schema.with_metadata(table.schema.metadata))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as err:
        changed = [f"{f.name!r} {f.type} -> {schema.field(f.name).type}" for f in table.schema
                   if f.type != schema.field(f.name).type]
        msg = (f"{where} holds values the type its column shares with the other parts cannot hold "
               f"({', '.join(changed)}): {err}")
        raise SchemaMismatchError(msg, "cast the column to one type in every part before building the "
                                       "Dataset (e.g. df.astype / table.cast)") from None


def from_blocks(blocks: Iterable[Any], *, name: str = "FromBlocks") -> MaterializedDataset:
    """A Dataset with exactly these blocks, in order: ``pyarrow.Table`` s or pandas DataFrames.

    Ray Data's ``from_blocks``, and the public door for adapters (third-party ones
    too): ``blocks`` may be a generator, each block is put into the object store
    (owned by this driver) as it comes, and ``name`` labels the source in stats.

    Example:
        >>> import bridge, pyarrow as pa
        >>> ds = bridge.from_blocks([pa.table({"a": [1, 2]}), pa.table({"a": [3]})])
        >>> ds.num_blocks(), ds.take_all()
        (2, [{'a': 1}, {'a': 2}, {'a': 3}])
    """
    from bridge.errors import BridgeTypeError

    def checked() -> Iterator[Any]:
        for i, b in enumerate(blocks):
            if not (isinstance(b, pa.Table) or type(b).__name__ == "DataFrame"
                    and type(b).__module__.startswith("pandas")):
                msg = (f"from_blocks: block {i} is a {type(b).__name__}; blocks are pyarrow.Tables or "
                       "pandas DataFrames")
                raise BridgeTypeError(msg, "convert it first, e.g. pa.table({...}), or use from_items / from_numpy")
            yield b

    return _put_blocks(checked(), name, convert=lambda b: b if isinstance(b, pa.Table) else frame_to_block(b))


def from_block_refs(refs: list[ray.ObjectRef], metadata: list[BlockMetadata], *,
                    name: str = "FromBlockRefs") -> MaterializedDataset:
    """A Dataset over blocks already in the object store, with their metadata (no copy, no task).

    The public door for adapters whose engine puts Arrow blocks itself (Spark on
    Ray, Dask tasks): ``refs[i]`` holds a ``pyarrow.Table`` that ``metadata[i]``
    describes (``BlockMetadata.of(table)``).  The driver should own the refs (put
    them, or return them from tasks it started) so the Dataset outlives the engine.

    Example:
        >>> import pyarrow as pa
        >>> import ray
        >>> import bridge
        >>> from bridge.block import BlockMetadata
        >>> table = pa.table({"x": [1, 2]})
        >>> bridge.from_block_refs([ray.put(table)], [BlockMetadata.of(table)], name="Mine").count()
        2
    """
    if len(refs) != len(metadata):
        from bridge.errors import BridgeValueError

        msg = f"from_block_refs: {len(refs)} refs but {len(metadata)} metadata entries"
        raise BridgeValueError(msg, "pass one BlockMetadata per block ref, in the same order")
    return _materialized([RefBundle([r], [m]) for r, m in zip(refs, metadata)], name)


#: Threads that convert and put blocks held by the driver.  The copy into the object store and
#: Arrow's conversions release the GIL, and one thread alone waits on the store's page faults.
PUT_THREADS = 4


def in_threads(fn: Callable[[Any], T], items: Iterable[Any], threads: int = PUT_THREADS) -> Iterator[T]:
    """``fn`` over ``items`` from ``threads`` threads, results in order.

    ``items`` may be a generator: at most ``2 * threads`` of them are taken
    ahead of the results handed out, so a stream of blocks stays a stream.
    The first error is raised where its item's result would have come.
    A list of one item runs on this thread (no pool to start for it).
    """
    if isinstance(items, (list, tuple)) and len(items) <= 1:
        yield from map(fn, items)
        return
    with concurrent.futures.ThreadPoolExecutor(max(1, threads), thread_name_prefix="raybridge-put") as pool:
        window: collections.deque[concurrent.futures.Future[T]] = collections.deque()
        try:
            for item in items:
                window.append(pool.submit(fn, item))
                if len(window) >= 2 * threads:
                    yield window.popleft().result()
            while window:
                yield window.popleft().result()
        finally:
            for f in window:
                f.cancel()


def _put_blocks(blocks: Iterable[Any], name: str, convert: Callable[[Any], Block] | None = None
                ) -> MaterializedDataset:
    """Put each block (``convert(item)`` first, if given) into the object store, owned by this driver."""
    from bridge._ray import ensure_ray

    ensure_ray()

    def put(item: Any) -> tuple[RefBundle, frozenset[str]]:
        b = convert(item) if convert is not None else item
        _check_unique_names(b, name)
        # Ray's Arrow serializer ships only the rows of a slice: no copy needed here.
        b = normalize_types(b)
        return RefBundle([ray.put(b)], [BlockMetadata.of(b)]), _all_null_columns(b)

    done = list(in_threads(put, blocks))
    return _materialized([bundle for bundle, _ in done], name, [empty for _, empty in done])


def _check_unique_names(block: Block, name: str) -> None:
    names = block.column_names
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        from bridge.errors import SchemaMismatchError

        msg = f"{name}: the data has {names.count(dup[0])} columns named {dup[0]!r} (columns: {names})"
        raise SchemaMismatchError(msg, "column names must be unique: rename or drop the duplicates first")


def in_memory_num_blocks(size_bytes: int, num_rows: int, override: int | None = None) -> int:
    """Blocks for data already in driver memory: enough to keep every CPU busy, and no more.

    Unlike a file read, nothing is gained by many small pieces here: each costs a ``ray.put``,
    so one block per CPU twice over, or per ``target_max_block_size``, whichever is more,
    and none smaller than ``target_min_block_size``.
    """
    if override is not None:
        from bridge.io.datasource import default_num_blocks

        return default_num_blocks(size_bytes, num_rows, override)
    from bridge._ray import cluster_cpus
    from bridge.context import DataContext

    ctx = DataContext.get_current()
    by_size = -(-size_bytes // ctx.target_max_block_size)
    # ...but no block under target_min_block_size: a small table stays one block.
    return max(1, min(max(2 * cluster_cpus(), by_size), size_bytes // ctx.target_min_block_size, num_rows))


def _slices(table: pa.Table, override_num_blocks: int | None) -> list[pa.Table]:
    n = in_memory_num_blocks(table.nbytes, table.num_rows, override_num_blocks)
    return [table.slice(s, e - s) for s, e in split_even(table.num_rows, n)]


@checked_keywords("range")
def range(n: int, *, override_num_blocks: int | None = None) -> Dataset:  # noqa: A001 - mirrors builtins
    """Integers ``0 .. n-1`` in column ``id``.

    Example:
        >>> import bridge
        >>> bridge.range(3).take_all()
        [{'id': 0}, {'id': 1}, {'id': 2}]
    """
    from bridge.dataset import Dataset
    from bridge.io.range_datasource import RangeDatasource

    _check_count(n, "range")
    return Dataset(Read([], RangeDatasource(n, override_num_blocks=override_num_blocks)))


@checked_keywords("range_tensor")
def range_tensor(n: int, *, shape: tuple[int, ...] = (1,), override_num_blocks: int | None = None) -> Dataset:
    """Rows ``i`` holding an array of ``shape`` filled with ``i``, in column ``data``.

    Example:
        >>> import bridge
        >>> bridge.range_tensor(3, shape=(2, 2)).take_batch(3)["data"].shape
        (3, 2, 2)
    """
    from bridge.dataset import Dataset
    from bridge.io.range_datasource import RangeDatasource

    _check_count(n, "range_tensor")
    return Dataset(Read([], RangeDatasource(n, "data", tuple(shape), override_num_blocks)))


def _check_count(n: Any, what: str) -> None:
    if not isinstance(n, (int, np.integer)) or n < 0:
        msg = f"{what}() needs a non-negative integer row count; got {n!r}"
        raise BridgeError(msg, f"call {what}(1000)")


@checked_keywords("from_items")
def from_items(items: Iterable[Any], *, override_num_blocks: int | None = None) -> Dataset:
    """A Dataset of Python objects: dicts become rows, anything else a row ``{"item": x}``.

    Example:
        >>> import bridge
        >>> bridge.from_items([{"a": 1}, {"a": 2}]).count()
        2
    """
    from bridge.dataset import Dataset
    from bridge.io.items_datasource import ItemsDatasource

    if isinstance(items, (str, bytes)) or not isinstance(items, Iterable):
        msg = f"from_items() needs a list (or iterable) of rows; got {type(items).__name__}"
        raise BridgeError(msg, 'pass a list such as [{"x": 1}, {"x": 2}]')
    if isinstance(items, Mapping):
        # Iterating a dict gives its keys: one row {"item": key} per key, and the values were lost.
        msg = f"from_items() got a dict ({len(items)} keys), whose iteration gives its keys, not rows"
        raise BridgeTypeError(msg, "a dict of columns: bridge.from_numpy(d) or from_pandas(pd.DataFrame(d)); "
                                   "one row: from_items([d])")
    frame_kind = f"{type(items).__module__.split('.')[0]}.{type(items).__name__}"
    if type(items).__name__ in ("DataFrame", "Table", "RecordBatch") or hasattr(items, "__arrow_c_stream__"):
        # Iterating a frame gives its column names: one row per column name, and the data was lost.
        msg = f"from_items() got a {frame_kind}, whose iteration gives its column names, not its rows"
        raise BridgeTypeError(msg, "pass it to bridge.from_pandas(df) / from_arrow(table) / from_any(obj), or "
                                   "pass df.to_dict('records') here")
    return Dataset(Read([], ItemsDatasource(list(items), override_num_blocks)))


@checked_keywords("from_arrow")
def from_arrow(tables: Any, *, override_num_blocks: int | None = None) -> MaterializedDataset:
    """A Dataset from a ``pyarrow.Table``, a list of them, or any object with ``__arrow_c_stream__``.

    Polars and DuckDB results, ``pyarrow.RecordBatchReader`` and pandas (via pyarrow) all
    implement the Arrow PyCapsule stream and convert without a dedicated adapter.

    Example:
        >>> import pyarrow as pa
        >>> import bridge
        >>> ds = bridge.from_arrow(pa.table({"x": [1, 2, 3]}), override_num_blocks=2)
        >>> ds.num_blocks(), ds.sum("x")
        (2, 6)
    """
    if isinstance(tables, (list, tuple)):
        parts = [_as_table(t) for t in tables]
        if override_num_blocks is None:
            return _put_blocks(parts, "FromArrow")
        tables = _concat_one_schema(parts, "FromArrow")
    table = _as_table(tables)
    return _put_blocks(_slices(table, override_num_blocks), "FromArrow")


def _concat_one_schema(parts: list[pa.Table], name: str) -> pa.Table:
    """The tables as one, each cast (safely) to the promotion of their schemas when they differ."""
    from bridge.plan.schema import unified_schema

    metas = _values_typed([BlockMetadata.of(t) for t in parts], [_all_null_columns(t) for t in parts])
    with_rows = [m.schema for m in metas if m.num_rows and m.schema is not None] or [t.schema for t in parts[:1]]
    if not with_rows:
        return pa.table({})
    target = unified_schema(with_rows, name)
    if all(t.schema.equals(target) for t in parts):
        return pa.concat_tables(parts)
    return pa.concat_tables([t if t.schema.equals(target) else _cast_table(t, target, name) for t in parts],
                            promote_options="permissive")


def _cast_table(table: pa.Table, target: pa.Schema, name: str) -> pa.Table:
    if set(table.schema.names) != set(target.names):
        return table  # different columns: concat_tables adds the missing ones as nulls
    return cast_to_shared(table, target, f"{name}: a table")


def _as_table(obj: Any) -> pa.Table:
    if isinstance(obj, pa.Table):
        return obj
    if isinstance(obj, pa.RecordBatch):
        return pa.Table.from_batches([obj])
    if isinstance(obj, pa.RecordBatchReader):
        return obj.read_all()
    if hasattr(obj, "__arrow_c_stream__"):
        return pa.RecordBatchReader.from_stream(obj).read_all()
    if hasattr(obj, "__arrow_c_array__"):
        return pa.table(obj)
    msg = f"from_arrow() needs a pyarrow.Table or an object with __arrow_c_stream__; got {type(obj).__name__}"
    raise BridgeError(msg, "convert it with pyarrow.table(obj), or use bridge.from_any(obj)")


@checked_keywords("from_pandas")
def from_pandas(dfs: Any, *, override_num_blocks: int | None = None) -> MaterializedDataset:
    """A Dataset from a ``pandas.DataFrame`` or a list of them.

    A named or non-default index is kept (as a column with pandas metadata) and
    comes back from ``to_pandas()``; a default ``RangeIndex`` is dropped.

    Example:
        >>> import pandas as pd
        >>> import bridge
        >>> df = pd.DataFrame({"x": [1, None]}, dtype="Int64", index=pd.Index(["a", "b"], name="key"))
        >>> bridge.from_pandas(df).to_pandas()
             x
        key
        a      1
        b   <NA>
    """
    frames = dfs if isinstance(dfs, (list, tuple)) else [dfs]
    pieces: list[Any] = []
    for df in frames:
        if not (type(df).__module__.startswith("pandas") and hasattr(df, "columns")):
            msg = f"from_pandas() needs pandas.DataFrame objects; got {type(df).__name__}"
            hint = "use bridge.from_any(obj) for other frame types (Dask, Modin, polars, Arrow)"
            if type(df).__module__.startswith("pandas") and hasattr(df, "to_frame"):
                hint = "a Series is one column: pass series.to_frame() (named by series.name)"
            elif isinstance(df, Mapping):
                hint = "rows as dicts: bridge.from_items(rows); a dict of columns: from_pandas(pd.DataFrame(d))"
            raise BridgeError(msg, hint)
        n = in_memory_num_blocks(int(df.memory_usage(index=False, deep=False).sum()), len(df), override_num_blocks)
        if len(frames) > 1 and override_num_blocks is None:
            n = 1
        pieces.extend(df.iloc[s:e] for s, e in split_even(len(df), n))
    keep = keeps_frame_index([df.index for df in frames])
    return _put_blocks(pieces, "FromPandas", convert=lambda piece: frame_to_block(piece, keep_index=keep))


@checked_keywords("from_numpy")
def from_numpy(arrays: Any, *, column: str = "data") -> MaterializedDataset:
    """A Dataset from an ndarray (column ``data``; n-d arrays become tensor columns),
    a list of ndarrays (one block each) or a dict of column -> ndarray.

    Example:
        >>> import numpy as np
        >>> import bridge
        >>> bridge.from_numpy({"x": np.arange(3), "y": np.ones(3)}).take(1)
        [{'x': 0, 'y': 1.0}]
        >>> bridge.from_numpy(np.zeros((4, 2, 3))).schema().field("data").type.shape
        [2, 3]
    """
    from bridge.batch import BatchTypeError, to_block

    try:
        if isinstance(arrays, Mapping):
            lengths = {str(k): len(v) for k, v in arrays.items() if hasattr(v, "__len__") and np.ndim(v) > 0}
            if len(set(lengths.values())) > 1:
                from bridge.errors import BridgeValueError

                msg = f"from_numpy: the columns of the dict have different lengths: {lengths}"
                raise BridgeValueError(msg, "give every column one value per row (the same length), or build "
                                            "a Dataset per length")
            return from_arrow(to_block(dict(arrays)))
        if isinstance(arrays, np.ndarray):
            return from_arrow(to_block({column: arrays}))
        if isinstance(arrays, (list, tuple)) and all(isinstance(a, np.ndarray) for a in arrays):
            return _put_blocks([to_block({column: a}) for a in arrays], "FromNumpy")
    except BatchTypeError as err:
        from bridge.errors import BridgeTypeError

        if err.hint is not None:
            raise BridgeTypeError(f"from_numpy: {err.what}", err.hint) from err
        raise BridgeTypeError(f"from_numpy: {err}", "mark missing entries of an object array with None "
                              "(arr[pandas.isna(arr)] = None) and keep one kind of value per column") from err
    msg = f"from_numpy() needs an ndarray, a list of ndarrays or a dict of ndarrays; got {type(arrays).__name__}"
    hint = ("pass list(...) of it (a generator or iterator is read once)" if hasattr(arrays, "__next__") else
            "wrap a list of values in numpy.asarray(...), or a scalar in numpy.asarray([x])")
    raise BridgeError(msg, hint)


def _arrow_meta(block: Any, position: int, count: int) -> BlockMetadata:
    if not isinstance(block, pa.Table):
        msg = (f"from_arrow_refs: reference {position} of {count} holds a {type(block).__name__}, "
               "not a pyarrow.Table")
        raise BridgeError(msg, "use from_pandas_refs / from_numpy_refs for those types")
    return BlockMetadata.of(block)


@ray.remote
def _meta_of(block: Any, position: int, count: int) -> BlockMetadata:
    return _arrow_meta(block, position, count)


#: ``from_arrow_refs`` reads at most this many tables at once where it reads them in the driver.
LOCAL_META_GROUP = 16

#: A core's time one Ray task costs beyond its own work (submission, scheduling, the worker's side,
#: the reply); measured in integration/bench/RESULTS.md, "from_arrow_refs without a task per reference".
TASK_COST_S = 0.01


def _arrow_ref_metas(refs: list[ray.ObjectRef]) -> list[BlockMetadata]:
    """The metadata of the tables behind ``refs``, each distinct reference read once.

    On a cluster that is this machine the driver reads them itself, a few at a time: a
    ``ray.get`` maps a table in place, where a task per table costs a task's start and
    scheduling (benchmark ``wide_table``).  The driver reads one table at a time, though,
    and the cluster's cores in parallel: once a table takes the driver longer than the
    cores' share of it as a task would (``(cpus - 1) x per table > TASK_COST_S``: many
    cores, or tables Ray rebuilds slowly), the rest go to tasks.  Elsewhere a task per
    table reads it where it lies.
    """
    from bridge._ray import cluster_cpus, cluster_is_this_machine
    from bridge.execution.lineage import get_blocks

    first: dict[ray.ObjectRef, int] = {}
    for i, ref in enumerate(refs):
        if not isinstance(ref, ray.ObjectRef):
            from bridge.errors import BridgeTypeError

            msg = f"from_arrow_refs: item {i} is a {type(ref).__name__}, not a ray.ObjectRef"
            raise BridgeTypeError(msg, "pass tables held in memory to from_arrow, or ray.put(table) each one")
        first.setdefault(ref, i)
    unique = list(first)
    count = len(refs)
    metas: list[BlockMetadata] = []
    if unique and cluster_is_this_machine():
        spare_cpus = cluster_cpus() - 1
        while len(metas) < len(unique):
            group = unique[len(metas):len(metas) + LOCAL_META_GROUP]
            start = time.perf_counter()
            blocks = get_blocks(group, "FromArrowRefs")
            metas += [_arrow_meta(b, first[r], count) for r, b in zip(group, blocks)]
            del blocks
            if (time.perf_counter() - start) / len(group) * spare_cpus > TASK_COST_S and len(metas) > len(group):
                break  # judged on a group after the first (the first pays for warming up)
    rest = unique[len(metas):]
    metas += ray.get([_meta_of.remote(r, first[r], count) for r in rest])
    found = dict(zip(unique, metas))
    return [found[r] for r in refs]


@ray.remote(num_returns=2)
def _convert(obj: Any, kind: str) -> tuple[Block, tuple[BlockMetadata, frozenset[str]]]:
    """One part as a block, and its metadata with its float columns that hold no value
    (:func:`_one_schema`: a frame whose int column has no value there is float64 of NaN)."""
    from bridge.batch import to_block

    if kind == "pandas":
        block = frame_to_block(obj)
    elif isinstance(obj, np.ndarray):
        block = to_block({"data": obj})
    else:
        block = to_block(obj)
    return block, (BlockMetadata.of(block), _all_null_columns(block))


def from_arrow_refs(refs: list[ray.ObjectRef]) -> MaterializedDataset:
    """A Dataset over references to ``pyarrow.Table`` s already in the object store (no copy).

    Each distinct table's row count, size and schema are read once: by the driver itself
    when the Ray cluster is this machine (mapped in place, no task; the rest go to tasks
    once the cluster's cores would read them sooner), else by a task where the table
    lies.  A reference to anything but a table fails naming its position.

    Example:
        >>> import pyarrow as pa
        >>> import ray
        >>> import bridge
        >>> bridge.from_arrow_refs([ray.put(pa.table({"x": [1, 2]}))]).take_all()
        [{'x': 1}, {'x': 2}]
    """
    from bridge._ray import ensure_ray

    ensure_ray()
    refs = list(refs)
    metas = _arrow_ref_metas(refs)
    return _materialized([RefBundle([r], [m]) for r, m in zip(refs, metas)], "FromArrowRefs")


def _from_refs(refs: list[ray.ObjectRef], kind: str, name: str) -> MaterializedDataset:
    from bridge._ray import ensure_ray

    ensure_ray()
    pairs = [_convert.remote(r, kind) for r in refs]
    described = ray.get([m for _, m in pairs])
    return _materialized([RefBundle([b], [m]) for (b, _), (m, _) in zip(pairs, described)], name,
                         [empty for _, empty in described])


def from_pandas_refs(refs: list[ray.ObjectRef]) -> MaterializedDataset:
    """A Dataset over references to DataFrames, converted to Arrow in Ray tasks.

    Example:
        >>> import pandas as pd
        >>> import ray
        >>> import bridge
        >>> bridge.from_pandas_refs([ray.put(pd.DataFrame({"x": [1, 2]}))]).count()
        2
    """
    return _from_refs(list(refs), "pandas", "FromPandasRefs")


def from_numpy_refs(refs: list[ray.ObjectRef]) -> MaterializedDataset:
    """A Dataset over references to ndarrays (or dicts of them), converted in Ray tasks.

    Example:
        >>> import numpy as np
        >>> import ray
        >>> import bridge
        >>> bridge.from_numpy_refs([ray.put(np.arange(3))]).take_all()
        [{'data': 0}, {'data': 1}, {'data': 2}]
    """
    return _from_refs(list(refs), "numpy", "FromNumpyRefs")
