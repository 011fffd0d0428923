"""Map -> reduce exchange over Ray tasks: the machinery every all-to-all operator shares.

An all-to-all operator receives every input :class:`RefBundle` on the driver
(see :class:`bridge.plan.logical.AllToAll`), then:

1. submits one *map* task per input block, which cuts its block into
   ``n_out`` pieces that stay in the object store (and spill to disk when the
   store is full);
2. submits one *reduce* task per output partition, which gets its piece of
   every map task's output and returns ``(block, metadata)``.

How the pieces travel depends on the cluster.  Across machines each piece is
its own object (``num_returns=n_out``), so a reducer fetches only its rows.
On a cluster of one machine (:func:`bridge._ray.cluster_is_this_machine`) a
map task that passes every row on (shuffle, sort, key partitions) returns its
pieces as one table, side by side, plus their row edges (:class:`PackedPieces`),
and every reducer slices its rows out of each map task's table, zero-copy from
the shared store: ``n_in`` objects instead of ``n_in * n_out``, each of which
costs Ray a store entry, a task return and a deserialisation.  Pieces of
differing schemas travel as one list.  Every reducer then holds every map
output as an argument, pinned in the store until it finishes, so packing is
only for data well within the store (:data:`PACK_STORE_FRACTION`); nor where
the map outputs would be small enough for Ray to copy them into every reducer's
task (:data:`INLINE_BYTES`), nor for partial aggregates, whose outputs are small.

Only metadata, small key samples and the packed pieces' row edges ever reach the driver.  Map and reduce
functions are plain module-level functions passed to two generic remote
tasks, so each operator writes pure ``pyarrow.Table -> pyarrow.Table`` code.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any, Union

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import ray

from bridge.block import Block, BlockMetadata, Timer, concat_blocks, concat_same_schema, take_rows
from bridge.context import DataContext
from bridge.execution.bundle import RefBundle

#: ``[(column, "ascending" | "descending"), ...]``
SortKeys = list[tuple[str, str]]

#: Rows each block contributes to the sample that picks range boundaries.
SAMPLES_PER_BLOCK = 100

_BOUNDARY_TAG = "__raybridge_boundary"

#: Ray returns task results under 100 KiB inline, into the memory of the process that owns
#: them (the driver), not into the object store.  Pieces are kept above this size so that an
#: exchange of a Dataset larger than memory lives in the object store (and spills) instead.
MIN_PIECE_BYTES = 512 * 1024


def sort_indices(table: pa.Table, sort_keys: SortKeys) -> pa.Array:
    """Row order of ``table`` by ``sort_keys``, nulls (and NaN) last in either direction.

    A dictionary-encoded key orders by its values (Arrow cannot sort a table by one).
    """
    names = list(dict.fromkeys(c for c, _ in sort_keys))
    if any(pa.types.is_dictionary(table.schema.field(c).type) for c in names):
        keys = table.select(names)
        for i, field in enumerate(keys.schema):
            if pa.types.is_dictionary(field.type):
                keys = keys.set_column(i, field.name, keys.column(i).cast(field.type.value_type))
        table = keys
    return pc.sort_indices(table, sort_keys=[(c, o, "at_end") for c, o in sort_keys])


def sort_table(table: pa.Table, sort_keys: SortKeys) -> pa.Table:
    if table.num_rows <= 1:
        return table
    return take_rows(table, sort_indices(table, sort_keys))


def flatten_refs(bundles: Sequence[RefBundle]) -> tuple[list[ray.ObjectRef], list[BlockMetadata]]:
    refs = [r for b in bundles for r in b.refs]
    metas = [m for b in bundles for m in b.metas]
    return refs, metas


def input_schema(metas: Sequence[BlockMetadata]) -> pa.Schema | None:
    """The schema of the first non-empty block (or of any block), from metadata only.

    A Dataset whose only rows have no columns (``select_columns([])``) has the empty schema;
    ``None`` where no block tells (no rows, no columns: placeholders, not a schema).
    """
    fallback = columnless = None
    for m in metas:
        if m.schema is not None and len(m.schema):
            if m.num_rows:
                return m.schema
            fallback = fallback or m.schema
        elif m.schema is not None and m.num_rows and columnless is None:
            columnless = m.schema
    return fallback if fallback is not None else columnless


def num_partitions(metas: Sequence[BlockMetadata], requested: int | None = None) -> int:
    """Output partitions of an exchange: ``requested``, else one per input block while the
    pieces each map task cuts stay above :data:`MIN_PIECE_BYTES`."""
    if requested:
        return requested
    n_in = max(len(metas), 1)
    total = sum(m.size_bytes for m in metas)
    return max(1, min(n_in, total // (n_in * MIN_PIECE_BYTES)))


def check_columns(op: str, columns: Sequence[str], schema: pa.Schema | None) -> None:
    """Raise :class:`SchemaMismatchError` naming any of ``columns`` the Dataset lacks."""
    if schema is None:
        return
    missing = [c for c in columns if c not in schema.names]
    if missing:
        from bridge.errors import SchemaMismatchError, missing_columns_hint

        msg = f"{op}: column(s) {missing} not found; the Dataset has columns {schema.names}"
        raise SchemaMismatchError(msg, missing_columns_hint(missing, schema.names, "pass one of the existing "
                                                                                   "column names (see ds.schema())"))



def check_key_types(op: str, columns: Sequence[str], schema: pa.Schema | None, *, group: bool = False) -> None:
    """Raise :class:`UnsupportedTypeError` naming a key column whose type Arrow cannot sort (``group``: nor group by).

    Probed on an empty table of the column's type, with the kernels the tasks run.
    """
    if schema is None:
        return
    for column in dict.fromkeys(c for c in columns if c in schema.names):
        field = schema.field(column)
        from bridge.block import empty_table

        empty = empty_table(pa.schema([field]))
        try:
            sort_indices(empty, [(column, "ascending")])
            if group:
                empty.group_by([column], use_threads=False).aggregate([])
        except (pa.ArrowNotImplementedError, pa.ArrowTypeError) as err:
            from bridge.errors import UnsupportedTypeError

            what = "grouped by" if group else "sorted"
            msg = f"{op}: key column {column!r} has type {field.type}, which cannot be {what} ({err})"
            raise UnsupportedTypeError(msg, "use a key column of scalar values (numbers, strings, dates); for a "
                                            "list or struct, first derive one, e.g. with ds.map_batches") from err

# ------------------------------------------------------------------ generic tasks


@ray.remote
def _map_task(map_fn: Callable[..., list[Block]], n_out: int, index: int, block: Block, *args: Any) -> Any:
    pieces = map_fn(block, index, *args)
    assert len(pieces) == n_out, (len(pieces), n_out)
    return pieces[0] if n_out == 1 else tuple(pieces)


def reduce_with_stats(reduce_fn: Callable[..., Block], pieces: list[Block], index: int,
                      args: Any) -> tuple[Block, BlockMetadata]:
    """``reduce_fn(pieces, index, *args)`` and the output's metadata with its timing (tasks and holders)."""
    with Timer() as timer:
        out = reduce_fn(pieces, index, *args)
    return out, BlockMetadata.of(out, exec_stats=timer.stats())


@ray.remote(num_returns=2)
def _reduce_task(reduce_fn: Callable[..., Block], index: int, args: Any, *pieces: Block) -> tuple[Block, BlockMetadata]:
    return reduce_with_stats(reduce_fn, list(pieces), index, args)


def get_all(refs: Sequence[ray.ObjectRef], also: Sequence[ray.ObjectRef] = ()) -> list[Any]:
    """``ray.get(refs)``; on a failure, first collect every sibling's outcome, then raise the first error.

    Without this, Ray prints "Unhandled error" for each sibling task that failed
    too but whose result nobody fetched, burying the one error that matters.
    ``also[i]``: the other return of the task of ``refs[i]`` (the block next to
    its metadata), fetched only where that task failed, so it raises at once and
    no successful task's block is pulled into the driver.
    """
    try:
        return ray.get(list(refs))
    except Exception:
        for i, ref in enumerate(refs):
            try:
                ray.get(ref, timeout=30)
            except Exception:  # noqa: BLE001 - this task failed: its other return holds the same error
                if i < len(also):
                    try:
                        ray.get(also[i], timeout=30)
                    except Exception:  # noqa: BLE001, S110 - the first error is re-raised below
                        pass
        raise


@dataclasses.dataclass
class PackedPieces:
    """The map side on one machine: per map task, its pieces in one object and their row edges.

    ``tables[i]``: map task ``i``'s pieces side by side in one table, piece ``j``
    being rows ``edges[i][j]:edges[i][j + 1]``; or, where its pieces' schemas
    differ, the list of pieces itself, with ``None`` as its edges.
    """

    tables: list[ray.ObjectRef]
    edges: list[ray.ObjectRef]
    n_out: int


#: What the map side hands the reduce side: piece refs per reducer, or :class:`PackedPieces`.
Pieces = Union[list[list[ray.ObjectRef]], PackedPieces]


def pack_pieces(pieces: Sequence[Block]) -> tuple[Any, np.ndarray | None]:
    """``pieces`` -> ``(one table, row edges)``, or ``(list of pieces, None)`` where they do not concatenate."""
    if isinstance(pieces, SlicedPieces):
        assert len(pieces.edges) == len(pieces) + 1, "SlicedPieces changed after it was cut"
        return pieces.whole, pieces.edges
    try:
        packed = concat_same_schema(pieces).combine_chunks()
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        return list(pieces), None
    return packed, np.cumsum([0, *(p.num_rows for p in pieces)], dtype=np.int64)


def piece_span(edges: np.ndarray | None, j: int) -> tuple[int, int] | None:
    """``(offset, rows)`` of piece ``j`` in a packed table with these edges (``None``: a list of pieces)."""
    if edges is None:
        return None
    start = int(edges[j])
    return start, int(edges[j + 1]) - start


def unpack_piece(packed: Any, span: tuple[int, int] | None, j: int) -> Block:
    """Piece ``j`` of what :func:`pack_pieces` made, ``span`` being its :func:`piece_span`."""
    return packed[j] if span is None else packed.slice(*span)


@ray.remote(num_returns=2)
def _packed_map_task(map_fn: Callable[..., list[Block]], n_out: int, index: int, block: Block,
                     *args: Any) -> tuple[Any, np.ndarray | None]:
    pieces = map_fn(block, index, *args)
    assert len(pieces) == n_out, (len(pieces), n_out)
    return pack_pieces(pieces)


@ray.remote(num_returns=2)
def _packed_reduce_task(reduce_fn: Callable[..., Block], index: int, args: Any,
                        spans: list[tuple[int, int] | None], *tables: Any) -> tuple[Block, BlockMetadata]:
    pieces = [unpack_piece(t, span, index) for t, span in zip(tables, spans)]
    return reduce_with_stats(reduce_fn, pieces, index, args)


#: Ray returns a task result under 100 KiB inline, and sends an inline argument inside every
#: task that takes it: a packed map output that small would be copied to each of the ``n_out``
#: reducers. Blocks below this size count as inline ...
INLINE_BYTES = 128 * 1024
#: ... and an exchange packs only while ``n_out`` times their bytes stays under this.
MAX_INLINE_FANOUT_BYTES = 32 * 1024 * 1024
#: Packing needs the data within this fraction of the object store: each reducer pins every map
#: output while it runs (the per-piece path lets each reducer's pieces go when it finishes).
PACK_STORE_FRACTION = 0.3


def _packs_pieces(n_out: int, metas: Sequence[BlockMetadata]) -> bool:
    """Whether this exchange's map tasks pack their pieces (see the module docstring)."""
    if n_out <= 1:
        return False
    inline = sum(m.size_bytes for m in metas if m.size_bytes < INLINE_BYTES)
    if inline * n_out > MAX_INLINE_FANOUT_BYTES:
        return False
    from bridge._ray import cluster_is_this_machine, object_store_capacity

    if sum(m.size_bytes for m in metas) > PACK_STORE_FRACTION * object_store_capacity():
        return False
    return cluster_is_this_machine()


def run_map(
    map_fn: Callable[..., list[Block]], refs: Sequence[ray.ObjectRef], n_out: int, ctx: DataContext, *args: Any,
    metas: Sequence[BlockMetadata] | None = None,
) -> Pieces:
    """Submit ``map_fn(block, index, *args) -> n_out pieces`` per block; returns what :func:`run_reduce` takes.

    ``metas`` (the input blocks'), from callers whose map tasks pass every row on (shuffles, sorts,
    key partitions; not partial aggregates), lets the pieces be packed where the module docstring says.
    """
    if metas is not None and _packs_pieces(n_out, metas):
        packed_task = _packed_map_task.options(max_retries=ctx.max_task_retries)
        outs = [packed_task.remote(map_fn, n_out, i, ref, *args) for i, ref in enumerate(refs)]
        return PackedPieces([t for t, _ in outs], [e for _, e in outs], n_out)
    by_reducer: list[list[ray.ObjectRef]] = [[] for _ in range(n_out)]
    task = _map_task.options(num_returns=n_out, max_retries=ctx.max_task_retries)
    for i, ref in enumerate(refs):
        out = task.remote(map_fn, n_out, i, ref, *args)
        out = [out] if n_out == 1 else out
        for j, piece in enumerate(out):
            by_reducer[j].append(piece)
    return by_reducer


def run_reduce(reduce_fn: Callable[..., Block], pieces: Pieces, ctx: DataContext, *args: Any) -> list[RefBundle]:
    """Submit ``reduce_fn(pieces, index, *args) -> block`` per partition; wait for the metadata only.

    ``pieces``: what :func:`run_map` returned; cleared (the tasks hold what they need).
    Packed pieces: the map tasks' row edges are fetched first, then the reducers submitted.
    """
    if isinstance(pieces, PackedPieces):
        # The edges come to the driver (a few bytes per piece; every reducer needs every map task
        # anyway), so that each reducer is sent only its own offsets, not every map task's edges.
        edges = get_all(pieces.edges, also=pieces.tables)
        packed_task = _packed_reduce_task.options(max_retries=ctx.max_task_retries)
        outs = [packed_task.remote(reduce_fn, j, args, [piece_span(e, j) for e in edges], *pieces.tables)
                for j in range(pieces.n_out)]
        pieces.tables.clear()
        pieces.edges.clear()
    else:
        task = _reduce_task.options(max_retries=ctx.max_task_retries)
        outs = [task.remote(reduce_fn, j, args, *refs) for j, refs in enumerate(pieces)]
        pieces.clear()  # let each reducer's pieces go when it finishes
    metas = get_all([m for _, m in outs], also=[b for b, _ in outs])
    return [RefBundle([b], [m]) for (b, _), m in zip(outs, metas)]


# ------------------------------------------------------------------ range partitioning


@ray.remote
def _sample_task(block: Block, columns: list[str], k: int, seed: int) -> Block:
    if block.num_rows == 0 or not all(c in block.column_names for c in columns):
        return pa.table({})
    keys = block.select(columns)
    if keys.num_rows <= k:
        return keys
    rng = np.random.default_rng(seed)
    return keys.take(pa.array(rng.choice(keys.num_rows, size=k, replace=False)))


def sample_boundaries(
    refs: Sequence[ray.ObjectRef], sort_keys: SortKeys, n_out: int, *, distinct: bool = False, seed: int = 0
) -> pa.Table | None:
    """At most ``n_out - 1`` boundary rows that split the key space into ranges of similar size.

    Each block contributes a small random sample (a Ray task; only the sample
    reaches the driver).  ``distinct`` drops repeated boundaries, for
    groupings where equal keys must share a partition anyway.
    """
    if n_out <= 1 or not refs:
        return None
    columns = [c for c, _ in sort_keys]
    samples = get_all([_sample_task.remote(r, columns, SAMPLES_PER_BLOCK, seed + i) for i, r in enumerate(refs)])
    samples = [s for s in samples if s.num_rows]
    if not samples:
        return None
    sample = sort_table(concat_blocks(samples), sort_keys)
    if distinct:
        sample = sort_table(sample.group_by(columns, use_threads=False).aggregate([]).select(columns), sort_keys)
    if sample.num_rows == 0:
        return None
    positions = sorted({int(i * sample.num_rows / n_out) for i in range(1, n_out)} - {0} or {0})
    return sample.take(pa.array(positions, pa.int64()))


class SlicedPieces(list):
    """Pieces that are consecutive slices of one table: piece ``j`` is rows ``edges[j]:edges[j + 1]`` of ``whole``.

    A plain list of the pieces to every caller; :func:`pack_pieces` sends ``whole``
    as it is instead of concatenating the pieces into a copy of it.
    """

    def __init__(self, whole: Block, edges: Sequence[int] | np.ndarray) -> None:
        self.whole = whole
        self.edges = np.asarray(edges, dtype=np.int64)
        bounds = self.edges.tolist()
        super().__init__(whole.slice(s, e - s) for s, e in zip(bounds[:-1], bounds[1:]))

    def padded(self, n_out: int) -> SlicedPieces:
        """These pieces, then empty ones up to ``n_out``."""
        extra = n_out - len(self)
        return self if extra <= 0 else SlicedPieces(self.whole, [*self.edges.tolist(), *[int(self.edges[-1])] * extra])


def split_by_partition(block: Block, part: np.ndarray, n_out: int) -> SlicedPieces:
    """Cut ``block`` into ``n_out`` pieces: row ``i`` goes to piece ``part[i]`` (order kept within a piece).

    A stable argsort of small integers is a radix sort (O(n)); then one ``take``
    and zero-copy slices.
    """
    if n_out == 1:
        return SlicedPieces(block, [0, block.num_rows])
    order = np.argsort(part, kind="stable")
    counts = np.bincount(part, minlength=n_out)
    grouped = take_rows(block, pa.array(order))
    return SlicedPieces(grouped, np.concatenate([[0], np.cumsum(counts)]))


def _numeric_partition(table: Block, bounds: pa.Table, sort_keys: SortKeys,
                       ties_after: bool = False) -> np.ndarray | None:
    """Partition ids by binary search, for one numeric key without nulls or NaN; else ``None``."""
    if len(sort_keys) != 1:
        return None
    column, order = sort_keys[0]
    col, bcol = table.column(column), bounds.column(column)
    if col.null_count or bcol.null_count or not (
        pa.types.is_integer(col.type) or pa.types.is_floating(col.type)) or col.type != bcol.type:
        return None
    keys = col.to_numpy()
    edges = bcol.to_numpy()
    if keys.dtype.kind == "f" and (np.isnan(keys).any() or np.isnan(edges).any()):
        return None
    # A row equal to a boundary belongs to the range before it (as in the tagged sort below),
    # or after it with ``ties_after``.
    if order == "ascending":
        part = np.searchsorted(edges, keys, side="right" if ties_after else "left")
    else:
        part = len(edges) - np.searchsorted(edges[::-1], keys, side="left" if ties_after else "right")
    return part.astype(np.uint16 if len(edges) < np.iinfo(np.uint16).max else np.uint32)


def range_split(
    table: Block, bounds: pa.Table | None, sort_keys: SortKeys, n_out: int, *, sort: bool = True,
    ties_after: bool = False,
) -> list[Block]:
    """Cut ``table`` into ``n_out`` pieces at the boundary rows (each piece sorted unless ``sort=False``).

    With ``sort=False`` and a single numeric key, rows are placed by binary
    search over the boundaries and a radix partition, without sorting the block.

    Boundaries are appended to the key columns, tagged, and sorted together
    with the rows; a row equal to a boundary sorts before it (after it with
    ``ties_after``, Ray Data's rule for ``sort(boundaries=)``), in every block,
    so equal keys always land in the same piece.  Works for any sortable types
    and several keys without comparing rows in Python.

    Rows without columns (a ``select_columns([])`` block among blocks with columns) have null keys,
    which sort last: they go to the last range.
    """
    if table.num_columns == 0:
        last = 0 if bounds is None else bounds.num_rows
        return SlicedPieces(table, [*[0] * (last + 1), table.num_rows]).padded(n_out)
    if bounds is None or bounds.num_rows == 0 or table.num_rows == 0:
        first = sort_table(table, sort_keys) if sort else table
        return SlicedPieces(first, [0, first.num_rows]).padded(n_out)
    if not sort:
        part = _numeric_partition(table, bounds, sort_keys, ties_after)
        if part is not None:
            return split_by_partition(table, part, bounds.num_rows + 1).padded(n_out)
    columns = [c for c, _ in sort_keys]
    keys = table.select(columns)
    bounds = bounds.select(columns)
    n = table.num_rows
    tagged = concat_blocks([
        keys.append_column(_BOUNDARY_TAG, pa.array(np.zeros(n, dtype=np.int8))),
        bounds.append_column(_BOUNDARY_TAG, pa.array(np.ones(bounds.num_rows, dtype=np.int8))),
    ])
    order = sort_indices(tagged, [*sort_keys, (_BOUNDARY_TAG, "descending" if ties_after else "ascending")]).to_numpy()
    is_bound = order >= n
    data_order = order[~is_bound]
    # Position of each boundary among data rows = rows sorted before it.
    cuts = np.flatnonzero(is_bound) - np.arange(int(is_bound.sum()))
    sorted_table = table.take(pa.array(data_order))
    return SlicedPieces(sorted_table, [0, *cuts.tolist(), n]).padded(n_out)


def _range_pieces(block: Block, index: int, bounds: pa.Table | None, sort_keys: SortKeys, n_out: int,
                  sort: bool) -> list[Block]:
    return range_split(block, bounds, sort_keys, n_out, sort=sort)


def partition_by_keys(
    bundles: list[RefBundle], keys: list[str], label: str, ctx: DataContext, n_out: int | None = None,
    *, sort: bool = True,
) -> Pieces | None:
    """The map side of a key exchange (for :func:`run_reduce`): every key value in one reducer's pieces.

    ``n_out``: exactly that many reducers (some may get nothing); default: as many as
    the sampled distinct boundaries allow.  ``None`` when there is no input block.
    Clears ``bundles`` (the map tasks hold their inputs).
    """
    refs, metas = flatten_refs(bundles)
    bundles.clear()
    if not refs:
        return None
    check_columns(label, keys, input_schema(metas))

    check_key_types(label, keys, input_schema(metas), group=True)
    sort_keys: SortKeys = [(k, "ascending") for k in keys]
    bounds = sample_boundaries(refs, sort_keys, n_out or num_partitions(metas), distinct=True)
    n = n_out if n_out is not None else 1 if bounds is None else bounds.num_rows + 1
    return run_map(_range_pieces, refs, n, ctx, bounds, sort_keys, n, sort, metas=metas)
