"""groupby / aggregate / map_groups as range-partitioning exchanges.

Aggregation: each map task computes the aggregation *states* of its block per
group (one ``Table.group_by(keys).aggregate``), then cuts that small table at
sampled key boundaries; each reduce task merges the states of its key range
and finalises them.  So a groupby over 20M rows with 1,000 groups moves a few
thousand state rows between tasks, not the rows themselves.  Output rows are
sorted by the keys (nulls last); null keys form a group of their own.  A
dictionary key (a pandas Categorical) sorts by its values, ordered or not, as
pyarrow and Ray Data sort it (``sort`` refuses an ordered one instead, where
the order is the point): the groups are the same, their order is the text's.

``map_groups`` moves the rows themselves: every group lands whole in one
reduce task, sorted by key, and the user's function sees one group at a time.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from bridge import batch as batch_mod
from bridge.block import Block, combine_column, concat_blocks, null_rows, unify_dictionaries
from bridge.context import DataContext
from bridge.execution.bundle import RefBundle
from bridge.execution.transform import TaskContext, UserFn, call_user_fn
from bridge.ops import exchange
from bridge.ops.aggregate import (
    OPTIONAL_INPUT,
    AggregateFn,
    canonical_floats,
    numeric_null_columns,
    restored,
    std_shifts,
    typed_aggregations,
)

_ROW = "__raybridge_row"
#: The constant key a whole-Dataset aggregate groups by.
_ALL = "__raybridge_all"


def _canonical(table: pa.Table, keys: list[str]) -> pa.Table:
    """``table`` as Arrow's hash grouping needs it to see equal values as equal: float keys made
    canonical (:func:`canonical_floats`: one group for 0.0 and -0.0, one for every NaN), and the
    chunks of each dictionary column on one dictionary (blocks read from several files have their
    own, and grouping or ``min`` over them raised "Unifying differing dictionaries")."""
    for k in keys:
        i = table.schema.get_field_index(k)
        if i >= 0 and pa.types.is_floating(table.schema.field(i).type):
            table = table.set_column(i, k, canonical_floats(table.column(i)))
    return unify_dictionaries(table)


def _aggregate(table: pa.Table, keys: list[str], specs: list[Any], names: list[str]) -> pa.Table:
    """``group_by(keys).aggregate(specs)`` with the result columns renamed to ``keys + names``."""
    if not table.num_rows and any(pa.types.is_dictionary(f.type) for f in table.schema):
        # pyarrow (26) aborts the whole process grouping a dictionary column of no rows ("distinct": a
        # filter's empty block under unique()): one row of nulls is aggregated instead, and none of its
        # output kept -- the same columns and types.
        one = pa.Table.from_arrays([pa.nulls(1, f.type) for f in table.schema],
                                   schema=pa.schema([f.with_nullable(True) for f in table.schema]))
        return _aggregate(one, keys, specs, names).slice(0, 0)
    out = _canonical(table, keys).group_by(keys, use_threads=False).aggregate(specs)
    # pyarrow >= 13 puts the keys first; older releases put them last.
    order = keys + names if out.column_names[: len(keys)] == keys else names + keys
    return out.rename_columns(order).select(keys + names)


def _spec(col: Any, fn: str, opts: Any) -> tuple[Any, ...]:
    return (col, fn) if opts is None else (col, fn, opts)


def _with_row_ids(table: pa.Table) -> pa.Table:
    return table.append_column(_ROW, pa.array(np.arange(table.num_rows, dtype=np.int64)))


def _key_values(groups: pa.Table, keys: list[str]) -> list[Any]:
    if keys == [_ALL]:
        return [None] * groups.num_rows
    if len(keys) == 1:
        return groups.column(keys[0]).to_pylist()
    return list(zip(*[groups.column(k).to_pylist() for k in keys]))


def _first_name(key: str) -> str:
    """The state column of a float key's first original value (:func:`partial_states`)."""
    return f"__raybridge_first_{key}"


def _is_canonical_float(t: pa.DataType) -> bool:
    return pa.types.is_float32(t) or pa.types.is_float64(t)


def partial_states(block: Block, keys: list[str], aggs: list[AggregateFn]) -> pa.Table:
    """One row per group of ``block``: the keys and every aggregation's state columns.

    Groups are formed on copies of the keys an aggregation also reads (so that the kernels' casts of its
    input, e.g. a dictionary's values for Min, leave the key's type alone) and of the float keys (made
    canonical: 0.0 and -0.0 one group); a float key also keeps its first original value per group (state
    column :func:`_first_name`), which the result reports (-0.0 stays -0.0, a value of the data).
    """
    names_in = block.column_names
    read = {on for a in aggs if isinstance(on := getattr(a, "on", None), str)}
    group_keys, firsts = [], []
    for n, k in enumerate(keys):
        i = block.schema.get_field_index(k)
        floats = i >= 0 and _is_canonical_float(block.schema.field(i).type)
        if i >= 0 and (k in read or floats):
            group_keys.append(f"__raybridge_key{n}")
            block = block.append_column(group_keys[-1], block.column(i))
            if floats:
                firsts.append(k)
                block = block.append_column(_first_name(k), block.column(i))
        else:
            group_keys.append(k)
    block = std_shifts(numeric_null_columns(block, aggs), group_keys, aggs)
    specs: list[Any] = []
    names, python_aggs, absent = [], [], []
    for k in firsts:
        specs.append((_first_name(k), "first", pc.ScalarAggregateOptions(skip_nulls=False)))
        names.append(_first_name(k))
    for i, agg in enumerate(aggs):
        map_specs = agg.block_map_specs(block.schema)
        if map_specs is None:
            python_aggs.append(i)
            continue
        for j, (col, fn, opts) in enumerate(map_specs):
            if isinstance(col, str) and col.startswith(OPTIONAL_INPUT) and col not in block.column_names:
                absent.append((f"__s{i}_{j}", f"__s{i}_0"))  # this block's sum cannot wrap: itself, as float
                continue
            specs.append(_spec(col, fn, opts))
            names.append(f"__s{i}_{j}")
    work = _with_row_ids(block) if python_aggs else block
    if python_aggs:
        specs.append((_ROW, "list"))
        names.append(_ROW)
    out = _aggregate(work, group_keys, specs, names).rename_columns(keys + names)
    for name, exact in absent:
        out = out.append_column(name, out.column(exact).cast(pa.float64(), safe=False))
    for i in python_aggs:
        states = aggs[i].accumulate_groups(block.select(names_in), _key_values(out, keys),
                                           out.column(_ROW).combine_chunks())
        out = out.append_column(f"__s{i}_0", states)
    order = keys + [_first_name(k) for k in firsts]
    order += [f"__s{i}_{j}" for i, a in enumerate(aggs) for j in range(len(a.merge_specs()))]
    return out.select(order)


def _mean_states_as_floats(partials: list[pa.Table], aggs: list[AggregateFn]) -> list[pa.Table]:
    """A Mean's state columns as float64 in every partial where the blocks gave them in different types:
    an int block's exact int64 sum next to a float block's float64 one (a Dataset whose function made the
    column int64 in one block and float64 in another). Concatenating would refuse an int sum past 2**53;
    the mean of such a column is taken from the float64 sums (:meth:`Mean.finish`)."""
    from bridge.ops.aggregate import Mean

    if len(partials) < 2:
        return partials
    names = [f"__s{i}_{j}" for i, a in enumerate(aggs) if type(a) is Mean for j in range(len(a.merge_specs()))]
    mixed = [n for n in names if len({p.schema.field(n).type for p in partials if n in p.column_names}) > 1]
    if not mixed:
        return partials
    out = []
    for p in partials:
        for n in mixed:
            i = p.schema.get_field_index(n)
            if i >= 0 and pa.types.is_integer(p.schema.field(i).type):
                p = p.set_column(i, n, p.column(i).cast(pa.float64(), safe=False))
        out.append(p)
    return out


def merge_states(partials: list[pa.Table], keys: list[str], aggs: list[AggregateFn]) -> pa.Table:
    """Merge state rows of the same group and finalise: keys + one column per aggregation, sorted by keys."""
    states = _with_row_ids(concat_blocks(_mean_states_as_floats(partials, aggs)))
    specs: list[Any] = []
    names = []
    firsts = [k for k in keys if _first_name(k) in states.column_names]
    for k in firsts:  # the first original value of a float key (see partial_states)
        specs.append((_first_name(k), "first", pc.ScalarAggregateOptions(skip_nulls=False)))
        names.append(_first_name(k))
    for i, agg in enumerate(aggs):
        for j, merge in enumerate(agg.merge_specs()):
            if merge is not None:
                specs.append(_spec(f"__s{i}_{j}", merge[0], merge[1]))
                names.append(f"__m{i}_{j}")
    specs.append((_ROW, "list"))
    names.append(_ROW)
    merged = _aggregate(states, keys, specs, names)
    # Group id of every state row, from the row lists: lets NumPy merge what pyarrow cannot.
    lists = merged.column(_ROW).combine_chunks()
    gid = np.empty(states.num_rows, dtype=np.int64)
    gid[pc.list_flatten(lists).to_numpy()] = pc.list_parent_indices(lists).to_numpy()
    n = merged.num_rows
    out = merged.select(keys)
    for k in firsts:
        out = out.set_column(keys.index(k), k, merged.column(_first_name(k)))
    for i, agg in enumerate(aggs):
        merge_specs = agg.merge_specs()
        done = [combine_column(merged.column(f"__m{i}_{j}")) if m is not None else None
                for j, m in enumerate(merge_specs)]
        raw = [combine_column(states.column(f"__s{i}_{j}")) for j in range(len(merge_specs))]
        out = out.append_column(agg.name, restored(agg, agg.finish(done, raw, gid, n)))
    return exchange.sort_table(out, [(k, "ascending") for k in keys])


# ------------------------------------------------------------------ exchange functions


def _agg_map(block: Block, index: int, keys: list[str], aggs: list[AggregateFn], bounds: pa.Table | None,
             n_out: int, schema: pa.Schema | None = None) -> list[Block]:
    if block.num_columns == 0 and block.num_rows and schema is not None and len(schema):
        block = null_rows(block.num_rows, schema)  # rows without columns among blocks with columns: nulls in them
    if block.num_columns == 0 and (block.num_rows == 0 or keys != [_ALL]):
        return [block] * n_out  # a placeholder (rows without any column count in a whole-Dataset aggregate only)
    if keys == [_ALL]:
        block = block.append_column(_ALL, pa.array(np.zeros(block.num_rows, dtype=np.int8)))
    states = partial_states(block, keys, aggs)
    return exchange.range_split(states, bounds, [(k, "ascending") for k in keys], n_out)


def _agg_reduce(pieces: list[Block], index: int, keys: list[str], aggs: list[AggregateFn]) -> Block:
    if not any(p.num_columns for p in pieces):
        return pa.table({})
    out = merge_states(pieces, keys, aggs)
    return out.drop_columns([_ALL]) if keys == [_ALL] else out


def _columns_used(aggs: list[AggregateFn]) -> list[str]:
    return [on for a in aggs if isinstance(on := getattr(a, "on", None), str)]


def aggregate_fn(keys: list[str], aggs: list[AggregateFn], label: str) -> Any:
    """The ``AllToAll`` function of ``groupby(keys).aggregate(*aggs)`` (``keys=[]``: whole Dataset)."""

    def run(bundles: list[RefBundle], ctx: DataContext) -> list[RefBundle]:
        refs, metas = exchange.flatten_refs(bundles)
        bundles.clear()
        if not refs:
            return []
        schema = exchange.input_schema(metas)
        exchange.check_columns(label, keys + _columns_used(aggs), schema)
        exchange.check_key_types(label, keys, schema, group=True)
        typed = typed_aggregations(label, aggs, schema)
        group_keys = keys or [_ALL]
        sort_keys = [(k, "ascending") for k in group_keys]
        bounds = (exchange.sample_boundaries(refs, sort_keys, exchange.num_partitions(metas), distinct=True)
                  if keys else None)
        n_out = 1 if bounds is None else bounds.num_rows + 1
        pieces = exchange.run_map(_agg_map, refs, n_out, ctx, group_keys, typed, bounds, n_out, schema)
        del refs
        return exchange.run_reduce(_agg_reduce, pieces, ctx, group_keys, typed)

    return run


def _map_groups_reduce(pieces: list[Block], index: int, keys: list[str], user: UserFn, batch_format: str,
                       label: str) -> Block:
    from bridge.errors import UserCodeError

    block = concat_blocks(pieces)
    if block.num_rows == 0:
        return block
    block = exchange.sort_table(block, [(k, "ascending") for k in keys])
    # Rows of a group are contiguous after the sort: its first row and size give its slice.
    spans = _aggregate(_with_row_ids(block), keys, [(_ROW, "min"), (_ROW, "count")], ["start", "size"])
    spans = spans.sort_by("start")
    fn = user.resolve(label)
    outs = []
    for g, (start, size) in enumerate(zip(spans["start"].to_pylist(), spans["size"].to_pylist())):
        batch = batch_mod.to_batch(block.slice(start, size), batch_format)
        result = call_user_fn(fn, batch, user, TaskContext(index, label), label)
        try:
            outs.append(batch_mod.to_block(result, block.schema))
        except batch_mod.BatchTypeError as err:
            msg = f"{label}: the function returned something raybridge cannot use (group {g} of partition {index}): {err}"
            raise UserCodeError(msg, "return a dict of column -> array, a pandas.DataFrame or a pyarrow.Table",
                                operator=label, block_index=index, original=err) from err
    return concat_blocks(outs) if outs else block.slice(0, 0)


def _whole_block(block: Block, index: int) -> list[Block]:
    return [block]


def _sorted_groups_reduce(pieces: list[Block], index: int, keys: list[str]) -> Block:
    block = concat_blocks(pieces)
    return exchange.sort_table(block, [(k, "ascending") for k in keys]) if keys and block.num_rows else block


def group_partition_fn(keys: list[str], label: str) -> Any:
    """``AllToAll`` function: blocks that each hold whole groups, sorted by ``keys`` (``[]``: one block, one group).

    ``map_groups`` runs the user's function after it, as a map operator (tasks, or an
    actor pool for a callable class), one call per group (:func:`map_groups_transform`).
    """

    def run(bundles: list[RefBundle], ctx: DataContext) -> list[RefBundle]:
        if not keys:
            refs, _ = exchange.flatten_refs(bundles)
            bundles.clear()
            if not refs:
                return []
            pieces: exchange.Pieces | None = exchange.run_map(_whole_block, refs, 1, ctx)
            del refs
        else:
            pieces = exchange.partition_by_keys(bundles, keys, label, ctx)
        return [] if pieces is None else exchange.run_reduce(_sorted_groups_reduce, pieces, ctx, keys)

    return run


def map_groups_transform(keys: list[str], user: UserFn, batch_format: str, label: str) -> Any:
    """Per block of whole, key-sorted groups (:func:`group_partition_fn`): ``fn`` once per group."""
    from bridge.errors import UserCodeError
    from bridge.execution.transform import BlockTransform

    def run(blocks: Any, ctx: TaskContext) -> Any:
        fn = user.resolve(label)
        for block in blocks:
            if block.num_rows == 0:
                continue
            if keys:
                spans = _aggregate(_with_row_ids(block), keys, [(_ROW, "min"), (_ROW, "count")], ["start", "size"])
                spans = spans.sort_by("start")
                groups = list(zip(spans["start"].to_pylist(), spans["size"].to_pylist()))
            else:
                groups = [(0, block.num_rows)]
            for g, (start, size) in enumerate(groups):
                batch = batch_mod.to_batch(block.slice(start, size), batch_format)
                result = call_user_fn(fn, batch, user, ctx, label)
                try:
                    yield batch_mod.to_block(result, block.schema)
                except batch_mod.BatchTypeError as err:
                    msg = (f"{label}: the function returned something raybridge cannot use (group {g} of block "
                           f"{ctx.task_index}): {err}")
                    raise UserCodeError(msg, "return a dict of column -> array, a pandas.DataFrame or a "
                                        "pyarrow.Table", operator=label, block_index=ctx.task_index,
                                        original=err) from err

    return BlockTransform(run, label, user)


def map_groups_fn(keys: list[str], user: UserFn, batch_format: str, label: str) -> Any:
    """The ``AllToAll`` function of ``groupby(keys).map_groups(fn)``."""

    def run(bundles: list[RefBundle], ctx: DataContext) -> list[RefBundle]:
        pieces = exchange.partition_by_keys(bundles, keys, label, ctx)
        return [] if pieces is None else exchange.run_reduce(_map_groups_reduce, pieces, ctx, keys, user,
                                                              batch_format, label)

    return run
