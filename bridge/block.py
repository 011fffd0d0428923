"""Blocks: the unit of storage and of work.

A block is a ``pyarrow.Table``.  Pandas is a batch format, never a storage
format.  This module holds what every operator needs to do with blocks:
measure them, cut them into slices that are cheap to ship, join them and
describe them with :class:`BlockMetadata`.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TypeAlias

import numpy as np
import pyarrow as pa

Block: TypeAlias = pa.Table


@dataclasses.dataclass
class ExecStats:
    """What producing one block cost, measured inside the task."""

    wall_s: float = 0.0
    cpu_s: float = 0.0
    start_ts: float = 0.0
    end_ts: float = 0.0
    node_id: str | None = None
    worker_pid: int | None = None


@dataclasses.dataclass
class BlockMetadata:
    """Facts about a block, known without fetching it."""

    num_rows: int
    size_bytes: int
    schema: pa.Schema | None = None
    input_files: list[str] | None = None
    exec_stats: ExecStats | None = None

    @classmethod
    def of(cls, block: Block, **kwargs: Any) -> BlockMetadata:
        return cls(num_rows=block.num_rows, size_bytes=block_size(block), schema=block.schema, **kwargs)


def block_size(block: Block) -> int:
    """Bytes the block's referenced data occupies (slice-aware)."""
    return int(block.nbytes)


def compact(block: Block) -> Block:
    """Copy a sliced block into buffers of its own, so that shipping it ships only its rows.

    Pickling a slice of an Arrow array serialises the whole parent buffer;
    without this, splitting a 1 GB block into eight slices would put 8 GB in
    the object store.  Blocks that already own their buffers are returned as is.
    """
    if block.num_columns == 0:
        return block
    referenced = block.nbytes
    total = block.get_total_buffer_size()
    if total <= referenced * 1.25 + 4096:
        return block
    check_ordered_dictionaries(block)  # (concat_arrays puts the chunks on one dictionary, first-seen order)
    columns = [pa.concat_arrays(col.chunks) if col.num_chunks else col for col in block.columns]
    return pa.Table.from_arrays(columns, schema=block.schema)


_VIEW_TYPES = {
    "string_view": pa.large_string(),
    "binary_view": pa.large_binary(),
}


def normalize_types(block: Block) -> Block:
    """Replace Arrow view types (from polars, DuckDB) with their plain equivalents.

    ``string_view``/``binary_view`` are not understood by pandas conversion,
    NumPy or Ray's zero-copy serializer; ``large_string``/``large_binary``
    hold the same values.  Other tables are returned untouched.
    """
    fields = []
    changed = False
    for f in block.schema:
        new_t = _normalized(f.type)
        changed = changed or new_t != f.type
        fields.append(f.with_type(new_t))
    if not changed:
        return block
    schema = pa.schema(fields, metadata=block.schema.metadata)
    if not any(_has_list_view(f.type) for f in block.schema):
        return block.cast(schema)
    columns = [pa.chunked_array([_without_views(c, f.type) for c in col.chunks], f.type)
               if _has_list_view(col.type) else col.cast(f.type) for col, f in zip(block.columns, schema)]
    return pa.Table.from_arrays(columns, schema=schema)


def _has_list_view(t: pa.DataType) -> bool:
    if pa.types.is_list_view(t) or pa.types.is_large_list_view(t):
        return True
    children = [t.field(i).type for i in range(t.num_fields)] if t.num_fields else []
    if pa.types.is_dictionary(t):
        children = [t.value_type]
    return any(_has_list_view(c) for c in children)


def _without_views(arr: pa.Array, target: pa.DataType) -> pa.Array:
    """``arr`` (whose type holds a list view) as ``target``, exactly.

    pyarrow's cast of a list view to a list lost values: ``[[1, 2], [5], [3]]`` became ``[[1, 2], [5], []]``,
    and out-of-order views other rows' lists (pyarrow 26).  A list view's rows are rebuilt from its flattened
    values (``list_flatten`` reads each row's view) and lengths; structs and lists are rebuilt around their
    converted children; other types holding a view (a map's items, a dictionary's values) go through
    Python values.
    """
    import pyarrow.compute as pc

    t = arr.type
    mask = arr.is_null() if arr.null_count else None
    if pa.types.is_list_view(t) or pa.types.is_large_list_view(t) or pa.types.is_list(t) \
            or pa.types.is_large_list(t):
        lengths = pc.fill_null(pc.list_value_length(arr), 0).cast(pa.int64()).to_numpy(zero_copy_only=False)
        offsets = np.zeros(len(arr) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        values = _without_views(pc.list_flatten(arr), target.value_type)
        if pa.types.is_large_list(target):
            return pa.LargeListArray.from_arrays(pa.array(offsets), values, type=target, mask=mask)
        return pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32)), values, type=target, mask=mask)
    if pa.types.is_struct(t):
        children = [_without_views(pc.struct_field(arr, [i]), target.field(i).type) for i in range(t.num_fields)]
        return pa.StructArray.from_arrays(children, fields=list(target), mask=mask)
    if not _has_list_view(t):
        return arr.cast(target)
    return pa.array(arr.to_pylist(), type=target)


def _normalized(t: pa.DataType) -> pa.DataType:
    name = str(t)
    if name in _VIEW_TYPES:
        return _VIEW_TYPES[name]
    if pa.types.is_list_view(t) or pa.types.is_large_list_view(t):
        return pa.large_list(_normalized(t.value_type))
    return map_child_types(t, _normalized)


def map_child_types(t: pa.DataType, fn: Callable[[pa.DataType], pa.DataType]) -> pa.DataType:
    """``t`` with ``fn`` applied to each of its direct child types (list, large and fixed-size list, struct,
    map, dictionary values), field names, nullability and flags kept; other types are returned as they are.
    A recursive ``fn`` that calls this for the types it does not change walks a whole nested type."""
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(fn(t.value_type)))
    if pa.types.is_large_list(t):
        return pa.large_list(t.value_field.with_type(fn(t.value_type)))
    if pa.types.is_fixed_size_list(t):
        return pa.list_(t.value_field.with_type(fn(t.value_type)), t.list_size)
    if pa.types.is_struct(t):
        return pa.struct([t.field(i).with_type(fn(t.field(i).type)) for i in range(t.num_fields)])
    if pa.types.is_map(t):
        return pa.map_(t.key_field.with_type(fn(t.key_type)), t.item_field.with_type(fn(t.item_type)),
                       keys_sorted=t.keys_sorted)
    if pa.types.is_dictionary(t):
        # polars' Categorical arrives as dictionary<string_view>.
        return pa.dictionary(t.index_type, fn(t.value_type), t.ordered)
    return t


def rounds_on_promotion(a: pa.DataType, b: pa.DataType) -> bool:
    """Whether Arrow's permissive promotion of ``a`` with ``b`` rounds values without a check: a decimal
    with a float (anywhere inside lists and structs).  Other promotions either keep every value or
    fail on one that would change (an int above 2**53 to float, a negative int to uint)."""
    if pa.types.is_decimal(a) or pa.types.is_decimal(b):
        return pa.types.is_floating(a) or pa.types.is_floating(b)
    if _list_kind(a) and _list_kind(b):
        return rounds_on_promotion(a.value_type, b.value_type)
    if pa.types.is_struct(a) and pa.types.is_struct(b):
        theirs = {b.field(i).name: b.field(i).type for i in range(b.num_fields)}
        return any(rounds_on_promotion(a.field(i).type, theirs[a.field(i).name])
                   for i in range(a.num_fields) if a.field(i).name in theirs)
    return False


def empty_table(schema: pa.Schema) -> pa.Table:
    """``schema.empty_table()``, also where pyarrow cannot make one (a fixed-shape tensor column with a
    permutation, as a transposed NumPy array gives, raises ``NotImplementedError`` there)."""
    try:
        return schema.empty_table()
    except (NotImplementedError, pa.ArrowException):
        from bridge.arrow_values import empty_array

        return pa.table([empty_array(f.type) for f in schema], schema=schema)


def widens_exactly(a: pa.DataType, b: pa.DataType) -> bool:
    """Whether every value of type ``a`` is a value of type ``b`` (so a cast never fails or changes one):
    null to anything, ints and floats to wider ones of their kind (an unsigned int to a wider signed one),
    string / binary / list to their large kinds, a decimal to one with as many digits on both sides of
    the point, and lists and structs of such types."""
    if a.equals(b) or pa.types.is_null(a):
        return True
    if pa.types.is_integer(a) and pa.types.is_integer(b):
        if pa.types.is_signed_integer(a) == pa.types.is_signed_integer(b):
            return b.bit_width >= a.bit_width
        return pa.types.is_unsigned_integer(a) and b.bit_width > a.bit_width
    if pa.types.is_floating(a) and pa.types.is_floating(b):
        return b.bit_width >= a.bit_width
    if (pa.types.is_string(a) and pa.types.is_large_string(b)) or (pa.types.is_binary(a)
                                                                    and pa.types.is_large_binary(b)):
        return True
    if pa.types.is_decimal(a) and pa.types.is_decimal(b):
        return b.scale >= a.scale and b.precision - b.scale >= a.precision - a.scale
    if (pa.types.is_list(a) or pa.types.is_large_list(a)) and (pa.types.is_list(b) or pa.types.is_large_list(b)):
        return (pa.types.is_large_list(b) or not pa.types.is_large_list(a)) \
            and widens_exactly(a.value_type, b.value_type)
    if pa.types.is_struct(a) and pa.types.is_struct(b):
        names = [a.field(i).name for i in range(a.num_fields)]
        return names == [b.field(i).name for i in range(b.num_fields)] and all(
            widens_exactly(a.field(i).type, b.field(i).type) for i in range(a.num_fields))
    return False


def _list_kind(t: pa.DataType) -> bool:
    return pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)


def table_without_columns(num_rows: int, metadata: dict[bytes, bytes] | None = None) -> pa.Table:
    """A table of ``num_rows`` rows and no columns (``select_columns([])``, a reducer's reader)."""
    # (pyarrow's replace_schema_metadata drops the rows of a table without columns: the metadata goes in first)
    return pa.table({"_": pa.nulls(num_rows)}, metadata=metadata).select([])


def tail(block: Block, offset: int) -> Block:
    """The rows of ``block`` from ``offset`` on (zero-copy).  Not ``block.slice(offset)``: pyarrow's
    one-argument slice of a table without columns keeps every row."""
    return block.slice(offset, max(block.num_rows - offset, 0))


def take_rows(block: Block, indices: pa.Array) -> Block:
    """``block.take(indices)``, also for a table without columns (pyarrow's take of one has no rows), and
    for dictionary columns whose chunks' values together outnumber their index type (:func:`unify_dictionaries`)."""
    if block.num_columns == 0:
        return table_without_columns(len(indices), block.schema.metadata)
    check_ordered_dictionaries(block)
    try:
        return block.take(indices)  # (pyarrow unifies differing dictionaries itself where their indices fit)
    except pa.ArrowInvalid as err:
        if not _too_narrow(err):
            raise
    return unify_dictionaries(block).take(indices)


def empty_like(block: Block) -> Block:
    """A table of no rows of ``block``'s schema holding none of its buffers, each dictionary column on its
    values still (a ``Categorical``'s categories: pyarrow's filter to no rows leaves no chunk, and with no
    chunk no dictionary; ``block.slice(0, 0)`` would keep every buffer of the block alive).  A column with a
    dictionary nested inside is sliced to no rows (its buffers held: rare)."""
    if block.num_columns == 0:
        return table_without_columns(0, block.schema.metadata)
    from bridge.arrow_values import empty_array

    columns = []
    for col in block.columns:
        t = col.type
        if isinstance(t, pa.DictionaryType) and col.num_chunks:
            values = next((c.dictionary for c in col.chunks if len(c.dictionary)), col.chunk(0).dictionary)
            columns.append(pa.DictionaryArray.from_arrays(pa.array([], t.index_type), values, ordered=t.ordered))
        elif col.num_chunks and _has_dictionary(t):
            columns.append(col.chunk(0).slice(0, 0))  # (a dictionary inside: its values kept by a slice)
        else:
            columns.append(empty_array(t))
    return pa.Table.from_arrays(columns, schema=block.schema)


def _order_key(value: Any) -> Any:
    """A dictionary value as a key that tells what Arrow's unification tells apart: every NaN one key
    (each ``to_pylist`` makes a new NaN object, never equal to another), 0.0 and -0.0 two, and a list or
    struct value (unhashable) by its text."""
    if isinstance(value, float):
        return ("nan",) if value != value else ("float", value, math.copysign(1.0, value))
    try:
        hash(value)
    except TypeError:
        return ("text", repr(value))
    return value


def check_ordered_dictionaries(table: Block) -> None:
    """Refuse an *ordered* dictionary column whose chunks order their values differently (two ordered
    ``Categorical`` frames with categories ``[low, high]`` and ``[high, low]``).

    Taking rows across such chunks, or making one ``Categorical`` of them, puts every chunk on one
    dictionary in first-seen order (Arrow's unification): the order the other chunks meant is lost with
    no error (``high < low`` became ``low < high``).  pandas refuses to combine such Categoricals too.
    Chunks whose orders agree (``[a, b]`` then ``[a, b, c]``) pass.
    """
    for name, col in zip(table.column_names, table.columns):
        t = col.type
        if not (isinstance(t, pa.DictionaryType) and t.ordered and col.num_chunks > 1):
            continue
        first = col.chunk(0).dictionary
        dicts = [c.dictionary for c in col.chunks[1:] if c.dictionary is not first and not c.dictionary.equals(first)]
        if not dicts:
            continue
        merged: dict[Any, int] = {}
        for d in [first, *dicts]:
            values = d.to_pylist()
            keys = [_order_key(v) for v in values]
            for k in keys:
                merged.setdefault(k, len(merged))
            positions = [merged[k] for k in keys]
            if positions != sorted(positions):
                from bridge.errors import SchemaMismatchError

                msg = (f"column {name!r} is an ordered dictionary (Categorical) whose pieces order their values "
                       f"differently: {_short(first.to_pylist())} in one, {_short(values)} in another; combined, "
                       "one order would silently replace the other")
                raise SchemaMismatchError(msg, "give every piece the same categories in the same order (pandas: "
                                               "df[col].cat.set_categories([...], ordered=True)), or make the "
                                               "column unordered (cat.as_unordered()) if its order means nothing")


def _short(values: list[Any], n: int = 6) -> str:
    return repr(values) if len(values) <= n else repr(values[:n])[:-1] + f", ... ({len(values)} values)]"


def unify_dictionaries(table: Block) -> Block:
    """``table.unify_dictionaries()``: each dictionary column's chunks on one dictionary, as taking rows
    across them, grouping and sorting need.  Where a column's chunks hold more values together than its
    index type counts (two ``int8`` chunks of 100 labels each: pandas gives each ``Categorical`` of
    fewer than 128 categories ``int8`` codes), pyarrow raises "requires a larger index type"; that
    column's indices are widened instead (:func:`_wider_dictionaries`): the values unchanged, the index
    type wider (blocks of both widths concatenate to the wider one)."""
    if not any(_has_dictionary(f.type) for f in table.schema):
        return table
    check_ordered_dictionaries(table)
    return _widening(table, lambda t: t.unify_dictionaries())


def combine_chunks(table: Block) -> Block:
    """``table.combine_chunks()``, also where dictionary chunks hold more values together than their index
    type counts, nested ones too (:func:`unify_dictionaries`)."""
    if not any(_has_dictionary(f.type) for f in table.schema):
        return table.combine_chunks()
    check_ordered_dictionaries(table)
    return _widening(table, lambda t: t.combine_chunks())


def combine_column(col: pa.ChunkedArray) -> pa.Array:
    """``col.combine_chunks()`` as :func:`combine_chunks` does it."""
    if not _has_dictionary(col.type):
        return col.combine_chunks()
    combined = combine_chunks(pa.table({"c": col})).column(0)
    return combined.chunk(0) if combined.num_chunks else combined.combine_chunks()  # (no chunks: empty)


def take_values(col: pa.ChunkedArray, indices: pa.Array) -> pa.Array:
    """``col.take(indices).combine_chunks()`` as :func:`combine_chunks` does it (rows of several dictionaries)."""
    try:
        return combine_column(col.take(indices))
    except pa.ArrowInvalid as err:
        if not _too_narrow(err):
            raise
    return combine_column(unify_dictionaries(pa.table({"c": col})).column(0).take(indices))


def _widening(table: Block, step: Callable[[Block], Block]) -> Block:
    for _ in range(2):
        try:
            return step(table)
        except pa.ArrowInvalid as err:
            if not _too_narrow(err):
                raise
            table = _wider_dictionaries(table, step)
    return step(table)


def _too_narrow(err: BaseException) -> bool:
    return "larger index type" in str(err)


def _has_dictionary(t: pa.DataType) -> bool:
    if pa.types.is_dictionary(t):
        return True
    if isinstance(t, pa.BaseExtensionType):
        return False
    return any(_has_dictionary(t.field(i).type) for i in range(t.num_fields))


def _wider_index(t: pa.DataType) -> pa.DataType:
    """``t`` with each dictionary in it (nested too) indexed by ``int32``, or ``int64`` where it was 32 bits."""
    t = map_child_types(t, _wider_index)
    if pa.types.is_dictionary(t) and t.index_type.bit_width < 64:
        return pa.dictionary(pa.int32() if t.index_type.bit_width < 32 else pa.int64(), t.value_type, t.ordered)
    return t


def _wider_dictionaries(table: Block, step: Callable[[Block], Block]) -> Block:
    """``table`` with the indices of each dictionary column that ``step`` fails on for being too narrow widened
    one step (``int8`` .. ``int16`` -> ``int32`` -> ``int64``): the values unchanged, the other columns as they
    were (so that blocks agree on the widths wherever they can)."""
    for i, field in enumerate(table.schema):
        if not _has_dictionary(field.type):
            continue
        try:
            step(pa.Table.from_arrays([table.column(i)], names=[field.name]))
            continue
        except pa.ArrowInvalid as err:
            if not _too_narrow(err):
                raise
        wide = _wider_index(field.type)
        table = table.set_column(i, field.with_type(wide), table.column(i).cast(wide))
    return table


def concat_same_schema(tables: Sequence[Block]) -> Block:
    """``pa.concat_tables`` of tables of one schema (pieces of one block), keeping the rows of tables
    without columns, which pyarrow's concatenation drops."""
    if tables and all(t.num_columns == 0 for t in tables):
        return table_without_columns(sum(t.num_rows for t in tables), tables[0].schema.metadata)
    return pa.concat_tables(tables)


def null_rows(num_rows: int, schema: pa.Schema) -> Block:
    """``num_rows`` rows of nulls in every column of ``schema`` (for rows that came without columns)."""
    arrays = []
    for f in schema:
        try:
            arrays.append(pa.nulls(num_rows, f.type))
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
            arrays.append(pa.nulls(num_rows))  # promoted to the column's type when concatenated
    return pa.Table.from_arrays(arrays, names=schema.names)


def concat_blocks(blocks: Iterable[Block]) -> Block:
    """Concatenate blocks, unifying schemas (null -> typed, int widening) where Arrow can.

    The output has every row of the input.  Blocks without columns: an empty one (a placeholder
    piece of an exchange) adds nothing and leaves the types alone; one with rows (``select_columns([])``)
    adds its rows, as rows of nulls when other blocks have columns (as a block missing a column
    gets nulls in it).
    """
    blocks = [b for b in blocks]
    if not blocks:
        return pa.table({})
    if len(blocks) == 1:
        return blocks[0]
    if all(b.num_columns == 0 for b in blocks):
        # Rows without columns (select_columns([])): only their count is left to add up.
        return table_without_columns(sum(b.num_rows for b in blocks), blocks[0].schema.metadata)
    columned = next(b.schema for b in blocks if b.num_columns > 0)
    nonempty = [b if b.num_columns else null_rows(b.num_rows, columned) for b in blocks if b.num_columns or b.num_rows]
    first = nonempty[0].schema
    if all(b.schema.equals(first, check_metadata=False) for b in nonempty[1:]):
        return pa.concat_tables(nonempty)
    from bridge.errors import SchemaMismatchError

    for other in nonempty[1:]:
        rounded = [f"{f.name}: {f.type} vs {other.schema.field(f.name).type}" for f in first
                   if f.name in other.schema.names and rounds_on_promotion(f.type, other.schema.field(f.name).type)]
        if rounded:
            msg = (f"cannot concatenate blocks with different schemas: {'; '.join(rounded)} (a decimal and a "
                   "float make floats, which round the decimals)")
            raise SchemaMismatchError(msg, "cast the columns to one type (decimal or float, as you mean it) in a "
                                           "map_batches step before combining")
    try:
        return pa.concat_tables(nonempty, promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError) as err:
        names = [set(b.column_names) for b in nonempty]
        msg = f"cannot concatenate blocks with different schemas: {first} vs {nonempty[-1].schema} ({err})"
        hint = ("cast the columns to one type in a map_batches step before combining; files read without "
                "schema= (read_csv, read_json) infer their types one file at a time: pass schema= (or "
                "convert_options column_types) to read every file with the same types")
        if any(n != names[0] for n in names):
            hint = "select the same columns in every input (select_columns) before combining"
        raise SchemaMismatchError(msg, hint) from err


def slice_rows(block: Block, max_rows: int) -> Iterator[Block]:
    """Yield consecutive slices of at most ``max_rows`` rows (zero-copy)."""
    n = block.num_rows
    if n <= max_rows:
        yield block
        return
    for start in range(0, n, max_rows):
        yield block.slice(start, min(max_rows, n - start))  # (exact: a table without columns is not clamped)


def split_by_size(block: Block, max_bytes: int) -> list[Block]:
    """Cut a block into compacted pieces of roughly ``max_bytes`` or less."""
    size = block_size(block)
    if size <= max_bytes or block.num_rows <= 1:
        return [block]
    pieces = -(-size // max_bytes)
    rows = -(-block.num_rows // pieces)
    return [compact(s) for s in slice_rows(block, rows)]


class Timer:
    """Wall and CPU time of a piece of work, as an :class:`ExecStats`."""

    def __enter__(self) -> Timer:
        self.start = time.time()
        self.cpu = time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.end = time.time()
        self.cpu = time.process_time() - self.cpu

    def stats(self) -> ExecStats:
        import os

        return ExecStats(
            wall_s=self.end - self.start,
            cpu_s=self.cpu,
            start_ts=self.start,
            end_ts=self.end,
            worker_pid=os.getpid(),
        )
