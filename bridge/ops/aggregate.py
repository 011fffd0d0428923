"""Aggregations: the built-ins (Count, Sum, Min, Max, Mean, Std, AbsMax, Quantile, Unique, CountDistinct, AsList,
ValueCounter, MissingValuePercentage, ZeroPercentage, ApproximateQuantile, ApproximateTopK) and AggregateFn.

An aggregation runs in two steps so that it can be computed per block and
then combined (see :mod:`bridge.ops.groupby`):

* **map**: per block and group, a few *state* columns computed by one
  ``pyarrow.Table.group_by(keys).aggregate(...)`` over all aggregations;
* **merge**: the states of all blocks combined per group (again
  ``group_by().aggregate``, or NumPy over group ids for Std and Unique), then
  ``finalize`` turns the merged states into the output column.

Null rules (written here because users depend on them): with
``ignore_nulls=True`` (default) nulls are skipped, and a group without a
single non-null value gives null for Sum/Min/Max/Mean/Std (pandas gives 0 for
Sum; we do not invent a value); with ``ignore_nulls=False`` any null makes the
result null.  Std uses ``ddof=1`` by default, like pandas.  A column of Arrow's
``null`` type (every value null, as ``from_items([{"x": None}])`` makes) counts
as an all-null numeric column: its Sum/Mean/Std are null, as in Ray Data.

A user-defined :class:`AggregateFn` gives Python callables, run once per group.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from bridge.block import Block, combine_column, map_child_types, take_values

#: A pyarrow aggregation: (column or [] for count_all, function, options).
Spec = tuple[Any, str, Any]


class AggregateFn:
    """An aggregation over the rows of each group (or of the whole Dataset).

    Args:
        init: ``init(key) -> accumulator`` for a group (``key`` is the group's key
            value, a tuple for several keys, ``None`` for a whole-Dataset aggregate).
        merge: ``merge(acc1, acc2) -> accumulator``, combining partial results.
        accumulate_block: ``accumulate_block(acc, block) -> acc`` over a
            ``pyarrow.Table`` holding rows of one group (vectorised; preferred).
        accumulate_row: ``accumulate_row(acc, row) -> acc`` per row dict (slower).
        finalize: ``finalize(acc) -> value``; identity when omitted.
        name: Output column name.

    Example:
        >>> import bridge, pyarrow.compute as pc
        >>> longest = bridge.AggregateFn(
        ...     init=lambda k: 0, merge=max, name="longest",
        ...     accumulate_block=lambda acc, b: max(acc, pc.max(pc.utf8_length(b["s"])).as_py() or 0))
        >>> bridge.from_items([{"s": "ab"}, {"s": "abcd"}]).aggregate(longest)
        {'longest': 4}
    """

    def __init__(
        self,
        init: Callable[[Any], Any],
        merge: Callable[[Any, Any], Any],
        accumulate_row: Callable[[Any, dict[str, Any]], Any] | None = None,
        accumulate_block: Callable[[Any, Block], Any] | None = None,
        finalize: Callable[[Any], Any] | None = None,
        name: str | None = None,
    ) -> None:
        if (accumulate_row is None) == (accumulate_block is None):
            from bridge.errors import BridgeError

            msg = "AggregateFn needs exactly one of accumulate_row or accumulate_block"
            raise BridgeError(msg, "pass accumulate_block=lambda acc, block: ... (a pyarrow.Table per group)")
        self.init = init
        self.merge = merge
        self.accumulate_row = accumulate_row
        self.accumulate_block = accumulate_block
        self.finalize = finalize
        self.name = name or "aggregate"

    # -- the engine's protocol; built-ins override these with pyarrow kernels
    def map_specs(self) -> list[Spec] | None:
        """pyarrow aggregations producing this aggregation's state columns; ``None``: Python accumulators."""
        return None

    def block_map_specs(self, schema: pa.Schema) -> list[Spec] | None:
        """:meth:`map_specs` for a block of ``schema`` (a built-in may compute its state another way for
        some column types)."""
        return self.map_specs()

    def merge_specs(self) -> list[tuple[str, Any] | None]:
        """Per state column, the pyarrow function that merges it by group (``None``: done in ``finalize``)."""
        return [None]

    def finish(self, merged: list[pa.Array | None], states: list[pa.Array], gid: np.ndarray, n: int) -> pa.Array:
        """Output column (one value per group) from merged states, the raw states and their group ids."""
        blobs = states[0].to_pylist()
        accs: list[Any] = [None] * n
        seen = [False] * n
        for g, blob in zip(gid.tolist(), blobs):
            acc = pickle.loads(blob)
            accs[g] = self.merge(accs[g], acc) if seen[g] else acc
            seen[g] = True
        values = [self.finalize(a) if self.finalize is not None else a for a in accs]
        return _to_arrow_values(values, self.name)

    def accumulate_groups(self, block: Block, keys: list[Any], rows: pa.ListArray) -> pa.Array:
        """Python accumulators, one per group: ``rows[g]`` are the block rows of group ``g``."""
        out = []
        for key, idx in zip(keys, rows):
            part = block.take(idx.values)
            acc = self.init(key)
            if self.accumulate_block is not None:
                acc = self.accumulate_block(acc, part)
            else:
                assert self.accumulate_row is not None
                for row in part.to_pylist():
                    acc = self.accumulate_row(acc, row)
            out.append(pickle.dumps(acc))
        return pa.array(out, pa.binary())

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name})"


def _to_arrow_values(values: list[Any], name: str) -> pa.Array:
    """A custom aggregation's results (one per group) as one Arrow column.

    Values that make no Arrow column (a float for one group and a str for another, a set) are
    refused: they once came back as pickled bytes, different from the values and from group to group.
    """
    if values and all(isinstance(v, np.ndarray) for v in values):
        from bridge.batch import to_block

        return to_block({"v": np.asarray(values, dtype=object)}).column("v").combine_chunks()
    try:
        return pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OverflowError) as err:
        from bridge.errors import BridgeTypeError

        kinds = sorted({type(v).__name__ for v in values if v is not None})
        msg = (f"AggregateFn {name!r}: its results ({', '.join(kinds)}) make no Arrow column: "
               f"{str(err).splitlines()[0]}")
        raise BridgeTypeError(msg, "return one kind of value from finalize (a number, str, list or dict), "
                                   "e.g. finalize=lambda acc: float(acc)") from err


def canonical_floats(col: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray | pa.Array:
    """A float32/float64 column with -0.0 as 0.0 and every NaN one NaN (other columns as they are):
    Arrow's hashing tells those bit patterns apart where ``==``, the sort and pandas see one value."""
    t = col.type
    if not (pa.types.is_float32(t) or pa.types.is_float64(t)):
        return col
    return pc.if_else(pc.is_nan(col), pa.scalar(float("nan"), t), pc.add(col, pa.scalar(0.0, t)))


def _is_number(t: pa.DataType) -> bool:
    return (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t) or pa.types.is_boolean(t)
            or pa.types.is_null(t))


def _is_orderable(t: pa.DataType) -> bool:
    if pa.types.is_dictionary(t):
        t = t.value_type
    return _is_number(t) or pa.types.is_temporal(t) or pa.types.is_string(t) or pa.types.is_large_string(t) \
        or pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t)


def _is_hashable(t: pa.DataType) -> bool:
    """Whether Arrow's hash kernels (``distinct``, grouping) take values of type ``t``."""
    return not (pa.types.is_nested(t) or isinstance(t, pa.BaseExtensionType))


def _is_distinguishable(t: pa.DataType) -> bool:
    """Whether :class:`Unique` can tell the values of type ``t`` apart: hashable ones by Arrow's kernels,
    lists, structs and maps of them by their Python values (:func:`_value_key`); not tensors (extension
    types: a result row would give a tensor's values as a flat list, without its shape)."""
    if isinstance(t, pa.BaseExtensionType) or pa.types.is_union(t):  # (a union's 1 and True: equal in Python)
        return False
    return all(_is_distinguishable(t.field(i).type) for i in range(t.num_fields)) if pa.types.is_nested(t) else True


def _is_list(t: pa.DataType) -> bool:
    return pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)


def _value_key(value: Any) -> Any:
    """A hashable key of one Python value of a list / struct / map column, equal for values ``==`` calls
    equal and for NaNs (each NaN its own object, unequal to itself): lists and structs as tuples."""
    if isinstance(value, (float, np.floating)):  # (a float16 element comes as numpy.float16)
        return _NAN_KEY if value != value else float(value)
    if isinstance(value, list):
        return tuple(_value_key(v) for v in value)
    if isinstance(value, dict):
        return tuple((k, _value_key(v)) for k, v in value.items())
    if isinstance(value, tuple):  # a map's (key, value) pair
        return tuple(_value_key(v) for v in value)
    return value


#: The key of every NaN in :func:`_value_key` (``float("nan") != float("nan")``; this sentinel is itself).
_NAN_KEY = ("__raybridge_nan__",)


def _integer_storage(t: pa.DataType) -> pa.DataType:
    """``t`` with every date, time, timestamp and duration in it (at any depth) as the integers that store
    it: the type :func:`_python_keys` views a column as, so that no value becomes a Python ``datetime``
    (which stops at year 9999: a timestamp past it raised ``OverflowError``; a date64 of a part of a day
    came out as its day)."""
    if pa.types.is_timestamp(t) or pa.types.is_duration(t) or pa.types.is_date64(t) or pa.types.is_time64(t):
        return pa.int64()
    if pa.types.is_date32(t) or pa.types.is_time32(t):
        return pa.int32()
    return map_child_types(t, _integer_storage)  # (blocks hold no list views: ingest makes them lists)


def _python_keys(values: pa.Array) -> list[Any]:
    """:func:`_value_key` of every value of ``values`` (lists, structs, maps: what Arrow's hash kernels
    refuse), its dates, times, timestamps and durations as their integers (exact, at any magnitude)."""
    storage = _integer_storage(values.type)
    if storage != values.type:
        try:
            values = values.view(storage)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            values = values.cast(storage)
    return [_value_key(v) for v in values.to_pylist()]


def _hash_key(values: pa.Array) -> pa.Array:
    """``values`` as Arrow's grouping tells them apart where ``==`` does: floats canonical (one NaN, 0.0 for
    -0.0, :func:`canonical_floats`), float16 as float32 first (exact; Arrow has no float16 arithmetic)."""
    if pa.types.is_float16(values.type):
        values = values.cast(pa.float32())
    return canonical_floats(values)


def _distinct_rows(values: pa.Array, owner: np.ndarray, skip_nulls: bool,
                   weights: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct values of ``values`` per group (``owner[i]`` the group of ``values[i]``), ordered by
    group, then by first occurrence: three arrays of one entry per (group, distinct value), its group, the
    index of its first occurrence in ``values`` and how many times it occurs (the sum of its ``weights``,
    one each when not given).  Nulls are one value, or skipped with ``skip_nulls``.

    Values Arrow can hash are grouped by Arrow (floats canonical: one NaN, 0.0 == -0.0, as ``==``, the
    sort and pandas see them); lists, structs and maps by their Python values (:func:`_python_keys`).
    """
    index = np.arange(len(values), dtype=np.int64)
    if skip_nulls and values.null_count:
        keep = values.is_valid().to_numpy(zero_copy_only=False)
        index, owner = index[keep], owner[keep]
        if weights is not None:
            weights = weights[keep]
    counts = np.ones(len(index), dtype=np.int64) if weights is None else weights.astype(np.int64, copy=False)
    if _is_hashable(values.type):
        kept = values if len(index) == len(values) else values.take(pa.array(index))
        table = pa.table({"g": pa.array(owner, pa.int64()), "v": _hash_key(kept), "i": pa.array(index),
                          "c": pa.array(counts)})
        try:
            found = table.group_by(["g", "v"], use_threads=False).aggregate([("i", "min"), ("c", "sum")])
        except pa.ArrowNotImplementedError:  # a type Arrow's grouping refuses: by Python values, below
            pass
        else:
            g, first = found["g"].to_numpy(), found["i_min"].to_numpy()
            total = found["c_sum"].to_numpy()
            order = np.lexsort((first, g))
            return g[order], first[order], total[order]
    keys = _python_keys(values)
    seen: dict[tuple[int, Any], list[int]] = {}
    for g, i, c in zip(owner.tolist(), index.tolist(), counts.tolist()):
        entry = seen.get((g, keys[i]))
        if entry is None:
            seen[(g, keys[i])] = [g, i, c]
        else:
            entry[2] += c
    rows = sorted(seen.values())
    out = np.array(rows, dtype=np.int64).reshape(len(rows), 3)
    return out[:, 0].copy(), out[:, 1].copy(), out[:, 2].copy()


def _offsets(groups: np.ndarray, n: int) -> pa.Array:
    """List offsets of ``n`` groups (int32, as ``pa.ListArray``) from the (sorted) group of every element."""
    lengths = np.bincount(groups, minlength=n) if len(groups) else np.zeros(n, dtype=np.int64)
    return pa.array(np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32))


def _first_distinct(values: pa.Array, owner: np.ndarray, n: int, skip_nulls: bool) -> pa.Array:
    """Per group ``g`` of ``n``, the distinct values of ``values`` whose ``owner`` is ``g``, in the order
    they first occur, as one list per group (each the first of its equal values: -0.0 where it came first)."""
    g, first, _ = _distinct_rows(values, owner, skip_nulls)
    return pa.ListArray.from_arrays(_offsets(g, n), values.take(pa.array(first, pa.int64())))


def _group_values(block: Block, on: str, rows: pa.ListArray, encode_lists: bool = False) -> tuple[pa.Array,
                                                                                                   np.ndarray]:
    """The values of column ``on`` of the groups ``rows`` (block rows per group) and the group of each;
    with ``encode_lists``, a list column's elements (one level flattened; null lists have none)."""
    values = take_values(block.column(on), pc.list_flatten(rows))
    owner = pc.list_parent_indices(rows).to_numpy()
    if encode_lists and _is_list(values.type):
        owner = owner[pc.list_parent_indices(values).to_numpy()]
        values = pc.list_flatten(values)
    return values, owner


def _state_values(lists: pa.Array, gid: np.ndarray) -> tuple[pa.Array, np.ndarray]:
    """The elements of a list state column (one list per state row) and the output group of each."""
    return pc.list_flatten(lists), gid[pc.list_parent_indices(lists).to_numpy()]


def _is_summable(t: pa.DataType) -> bool:
    return _is_number(t) or pa.types.is_duration(t)


def _is_signed_magnitude(t: pa.DataType) -> bool:
    return _is_summable(t) and not pa.types.is_boolean(t)


class _Builtin(AggregateFn):
    """Base of the built-ins: pyarrow kernels only, no Python per group or row."""

    #: Which column types the aggregation reads, and those in words (for the error that refuses the others).
    _takes: Callable[[pa.DataType], bool] = staticmethod(_is_number)
    _takes_words = "numbers (integers, floats, decimals, booleans)"
    #: The type of the column it reads, set by :func:`typed_aggregations` where the kernels compute in
    #: another one (float16 as float32, durations as int64) so that ``finish`` gives it back.
    source_type: pa.DataType | None = None
    #: The type of the column it reads, as the schema gives it (set by :func:`typed_aggregations`).
    input_type: pa.DataType | None = None

    def __init__(self, on: str | None, ignore_nulls: bool, alias_name: str | None, label: str) -> None:
        self.on = on
        self.ignore_nulls = ignore_nulls
        self.name = alias_name or f"{label}({on or ''})"
        self.finalize = None

    def keeps_type(self, t: pa.DataType) -> bool:
        """Whether the result of a column of type ``t`` has its type (Min, Max, AbsMax; Sum of durations),
        so a column the kernels read as another type (:func:`_computed_as`) is cast back."""
        return False

    def _opts(self) -> pc.ScalarAggregateOptions:
        return pc.ScalarAggregateOptions(skip_nulls=self.ignore_nulls, min_count=1)

    def finish(self, merged: list[pa.Array | None], states: list[pa.Array], gid: np.ndarray, n: int) -> pa.Array:
        out = merged[0]
        assert out is not None
        return out


#: Which columns an aggregation without ``on=`` applies to, by operation.
_ORDERABLE_OPS = ("min", "max")


def default_columns(schema: pa.Schema | None, op: str) -> list[str]:
    """The columns ``ds.sum()`` / ``groupby(k).mean()`` ... use when no ``on`` is given.

    Numeric, boolean, decimal and all-null columns for every operation; ``min`` and
    ``max`` also take strings, binaries, temporal and dictionary (categorical) columns.
    (Ray Data tries every column and fails on the first that the operation cannot handle.)
    """
    if schema is None:
        return []

    def fits(t: pa.DataType) -> bool:
        if pa.types.is_dictionary(t):
            if op not in _ORDERABLE_OPS:
                return False  # a category is a label: no sum or mean of it (pandas refuses one too)
            t = t.value_type
        if (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t) or pa.types.is_decimal(t)
                or pa.types.is_null(t)):
            return True
        return op in _ORDERABLE_OPS and (pa.types.is_string(t) or pa.types.is_large_string(t)
                                         or pa.types.is_binary(t) or pa.types.is_large_binary(t)
                                         or pa.types.is_fixed_size_binary(t) or pa.types.is_temporal(t))

    return [f.name for f in schema if fits(f.type)]


def numeric_null_columns(block: Block, aggs: list[AggregateFn]) -> Block:
    """``block`` as the built-ins' pyarrow kernels take it.

    The null-typed columns that Std, AbsMax and Quantile read are cast to float64 (pyarrow has no
    variance kernel for the ``null`` type; as float64 the column is simply all null, and so is its
    standard deviation); a dictionary column Min / Max read becomes its values; Mean and Std read a
    column of their own (:func:`_float_input`), MissingValuePercentage and ZeroPercentage one of flags
    (:func:`_missing_input`, :func:`_zero_input`) that they sum.
    """
    for col in {a.on for a in aggs if isinstance(a, _Builtin) and type(a) not in _READS_VALUES and a.on is not None}:
        i = block.schema.get_field_index(col)
        computed = _computed_as(block.schema.field(i).type) if i >= 0 else None
        if computed is not None:  # Arrow has no kernels for float16, and no grouped sum / min of durations
            block = block.set_column(i, col, block.column(i).cast(computed))
    for col in {a.on for a in aggs if isinstance(a, (Std, AbsMax, Quantile, ApproximateQuantile)) and a.on is not None}:
        i = block.schema.get_field_index(col)
        if i >= 0 and pa.types.is_null(block.schema.field(i).type):
            block = block.set_column(i, col, block.column(i).cast(pa.float64()))
    for col in {a.on for a in aggs if isinstance(a, Min) and a.on is not None}:  # Max is a Min
        i = block.schema.get_field_index(col)
        if i >= 0 and pa.types.is_dictionary(block.schema.field(i).type):
            # Arrow has no grouped min/max of a dictionary: its values (the same values) instead.
            block = block.set_column(i, col, block.column(i).cast(block.schema.field(i).type.value_type))
    for kind in (Mean, Std):
        for col in {a.on for a in aggs if type(a) is kind and a.on is not None}:
            i = block.schema.get_field_index(col)
            if i >= 0 and block.schema.get_field_index(_float_input(kind, col)) < 0:
                values = block.column(i)
                t = values.type
                if kind is Mean and pa.types.is_integer(t) and t != pa.uint64():
                    # Summed exactly as int64 (see Mean.finish): a float64 sum rounded each value past 2**53
                    # and each block's partial sum, so the mean changed with the blocks' edges.
                    values = values.cast(pa.int64())
                    block = block.append_column(_float_input(kind, col), values)
                    if block.schema.get_field_index(_float_input(Sum, col)) < 0 and _may_wrap(values):
                        block = block.append_column(_float_input(Sum, col), values.cast(pa.float64(), safe=False))
                    continue
                if pa.types.is_boolean(t) or (pa.types.is_integer(t) if kind is Mean else pa.types.is_decimal(t)):
                    values = values.cast(pa.float64(), safe=False)  # rounds beyond 2**53, as NumPy does
                elif pa.types.is_decimal128(t):
                    values = values.cast(_wide_decimal(t))  # Arrow's decimal128 sum wraps past 38 digits
                block = block.append_column(_float_input(kind, col), values)
                if kind is Mean and pa.types.is_decimal256(t) \
                        and block.schema.get_field_index(_float_input(Sum, col)) < 0:
                    # A decimal256 sum wraps past 2**255: its float64 sum tells (see Mean.finish).
                    block = block.append_column(_float_input(Sum, col), values.cast(pa.float64(), safe=False))
    flag_kinds: tuple[tuple[type, Callable[[str], str]], ...] = (
        (MissingValuePercentage, _missing_input), (ZeroPercentage, _zero_input))
    for flagger, flags in flag_kinds:
        for col in {a.on for a in aggs if isinstance(a, _Builtin) and type(a) is flagger and a.on is not None}:
            i = block.schema.get_field_index(col)
            if i >= 0 and block.schema.get_field_index(flags(col)) < 0:
                values = block.column(i)
                missing = flagger is MissingValuePercentage
                block = block.append_column(flags(col), pc.is_null(values, nan_is_null=True) if missing
                                            else _zeros(values))
    for col in {a.on for a in aggs if type(a) is Sum and a.on is not None}:
        i = block.schema.get_field_index(col)
        if i >= 0 and block.schema.get_field_index(_exact_input(col)) < 0:
            # The column Sum sums exactly: itself (as the kernels read it), decimal128 as decimal256 (Arrow's
            # decimal128 sum keeps precision 38 and wraps past it without a word), in a column of its own
            # so that Min / Max / the keys of the same column keep its type.
            values = block.column(i)
            if pa.types.is_decimal128(values.type):
                values = values.cast(_wide_decimal(values.type))
            block = block.append_column(_exact_input(col), values)
            if pa.types.is_decimal256(block.schema.field(i).type) \
                    and block.schema.get_field_index(_float_input(Sum, col)) < 0:
                # A decimal256 sum wraps past 2**255: its float64 sum tells (see Sum.finish).
                block = block.append_column(_float_input(Sum, col), values.cast(pa.float64(), safe=False))
        if i >= 0 and pa.types.is_integer(block.schema.field(i).type) \
                and block.schema.get_field_index(_float_input(Sum, col)) < 0 and _may_wrap(block.column(i)):
            block = block.append_column(_float_input(Sum, col), block.column(i).cast(pa.float64(), safe=False))
    return block


def _wide_decimal(t: pa.DataType) -> pa.DataType:
    """The type a decimal column is summed in: decimal256 of its scale, the widest precision (76)."""
    return pa.decimal256(76, t.scale)


def _wrapped_groups(total: pa.Array, approx: pa.Array | None, near: float) -> list[int]:
    """The groups whose decimal256 sum ``total`` wrapped past 2**255, told by ``approx``, their float64 sum.

    Arrow's decimal256 sum wraps without a word (modulo 2**256: a partial sum may pass the range and come
    back); a wrapped total is at least 2**255 (in units of its scale) away from the true one, which the float
    sum is within a hair of.  Only groups whose float sum reaches ``near`` (a magnitude in the column's units,
    below any that can wrap) are compared exactly.
    """
    if approx is None or not pa.types.is_decimal(total.type):
        return []
    floats = np.nan_to_num(approx.to_numpy(zero_copy_only=False).astype(np.float64), nan=0.0)
    bad = []
    for r in np.flatnonzero(np.abs(floats) >= near):
        exact = total[int(r)].as_py()
        if exact is None or abs(float(exact) - floats[r]) > 1e-6 * abs(floats[r]):
            bad.append(int(r))
    return bad


def _exact_input(col: str) -> str:
    """The column :class:`Sum` sums exactly (:func:`numeric_null_columns`)."""
    return f"__raybridge_exact_{col}"


def _computed_as(t: pa.DataType) -> pa.DataType | None:
    """The type Arrow's aggregation kernels read a column of type ``t`` as, where not ``t`` itself."""
    if pa.types.is_float16(t):
        return pa.float32()
    if pa.types.is_duration(t):
        return pa.int64()
    return None


def typed_aggregations(label: str, aggs: list[AggregateFn], schema: pa.Schema | None) -> list[AggregateFn]:
    """``aggs`` checked against the types of the columns they read, before any task runs.

    A built-in given a column it cannot aggregate (the mean of a timestamp, the sum of strings) is
    refused here with what it takes; Arrow's kernels raised ``ArrowNotImplementedError`` from inside a
    reduce task.  A column the kernels read as another type (float16, durations) gets its type back in
    the result: those aggregations are copies that know it.
    """
    import copy

    from bridge.errors import UnsupportedTypeError

    if schema is None:
        return aggs
    out: list[AggregateFn] = []
    for a in aggs:
        if isinstance(a, _Builtin) and a.on is not None and a.on in schema.names:
            t = schema.field(a.on).type
            if not a._takes(t):
                msg = (f"{label}: {a.name} cannot aggregate column {a.on!r} of type {t}; "
                       f"{type(a).__name__} takes {a._takes_words}")
                hint = ("compute a numeric column first, e.g. ds.add_column('secs', lambda t: pc.cast(t[" f"{a.on!r}"
                        "], pa.int64()), batch_format='pyarrow') for epochs; Min / Max take dates and times"
                        if pa.types.is_temporal(t) else
                        "aggregate another column, or compute one this aggregation takes first (add_column / "
                        "map_batches); Count and Unique take most types, Min / Max strings and times")
                raise UnsupportedTypeError(msg, hint)
            if isinstance(a, Min) and pa.types.is_dictionary(t) and t.ordered:
                from bridge.errors import BridgeValueError

                # (as sort: the kernels compare the values, and an ordered dictionary means its own order)
                values = f"t[{a.on!r}].cast(t[{a.on!r}].type.value_type)"
                raise BridgeValueError(
                    f"{label}: {a.name} of column {a.on!r}, an ordered dictionary ({t}): its order is its meaning, "
                    f"and {type(a).__name__} compares the values themselves, not that order",
                    f"take it by the position in its order: order = [...categories...]; ds.add_column("
                    f"'{a.on}_rank', lambda t: pc.index_in({values}, value_set=pa.array(order)), "
                    f"batch_format='pyarrow'), then order[ds.{a._fn}('{a.on}_rank')]; or of the values: "
                    f"ds.add_column({a.on!r}, lambda t: {values}, batch_format='pyarrow')")
            a = copy.copy(a)
            a.input_type = t
            if _computed_as(t) is not None and a.keeps_type(t):
                a.source_type = t
        out.append(a)
    return out


def restored(agg: AggregateFn, column: pa.Array) -> pa.Array:
    """``column`` (one aggregation's results) in the type of the column it read (see ``source_type``)."""
    target = getattr(agg, "source_type", None)
    if target is None or column.type == target:
        return column
    return column.cast(target, safe=False)  # float32 -> float16 overflows to inf, as NumPy's float16 sum


def _may_wrap(col: pa.ChunkedArray) -> bool:
    """Whether an integer sum of ``col`` (any group of it) can pass 2**63: its rows times its largest
    magnitude.  One pass without a copy; almost every column answers no."""
    bounds = pc.min_max(col)
    low, high = bounds["min"].as_py(), bounds["max"].as_py()
    if low is None:
        return False
    return len(col) * max(abs(low), abs(high)) >= 2**63


def _float_input(kind: type, col: str) -> str:
    """The column :class:`Mean` / :class:`Std` reads: bools as float64; for the mean, integers as int64,
    summed exactly, with a float64 copy where the sum may pass 2**63 (:func:`_integer_means`; uint64 as
    float64, as NumPy's ``mean`` accumulates it); for the std decimals (Arrow has no variance of bools or
    decimals).  A decimal's mean is summed exactly."""
    return f"__raybridge_{kind.__name__.lower()}_{col}"


class Count(_Builtin):
    """Rows per group (``Count()``), or the values of ``on`` (``Count("x")``), as Ray Data's ``Count``.

    ``Count("x")`` counts every row, nulls included (Ray Data's default, ``ignore_nulls=False``);
    ``Count("x", ignore_nulls=True)`` counts the non-null values (pandas' ``count``).  NaN is a value,
    not a null: both count it.

    Example:
        >>> import bridge
        >>> bridge.range(10).aggregate(bridge.Count())
        {'count()': 10}
    """

    _takes = staticmethod(lambda t: True)
    _takes_words = "any type"

    def __init__(self, on: str | None = None, ignore_nulls: bool = False, alias_name: str | None = None) -> None:
        super().__init__(on, ignore_nulls, alias_name, "count")

    def map_specs(self) -> list[Spec]:
        if self.on is None:
            return [([], "count_all", None)]
        return [(self.on, "count", pc.CountOptions("only_valid" if self.ignore_nulls else "all"))]

    def merge_specs(self) -> list[tuple[str, Any] | None]:
        return [("sum", None)]

    def finish(self, merged: list[pa.Array | None], states: list[pa.Array], gid: np.ndarray, n: int) -> pa.Array:
        assert merged[0] is not None
        return merged[0].fill_null(0)


class Sum(_Builtin):
    """Sum of ``on`` (null for a group without non-null values).

    Example:
        >>> import bridge
        >>> bridge.range(4).aggregate(bridge.Sum("id"))
        {'sum(id)': 6}
    """

    _takes = staticmethod(_is_summable)
    _takes_words = "numbers (integers, floats, decimals, booleans) and durations"

    def __init__(self, on: str, ignore_nulls: bool = True, alias_name: str | None = None) -> None:
        super().__init__(on, ignore_nulls, alias_name, "sum")

    def keeps_type(self, t: pa.DataType) -> bool:
        # A float16 column sums as float32, into float64 as Arrow sums float32 (and int8 into int64): in
        # float16, two values of 60,000 sum to inf.
        return pa.types.is_duration(t)

    def map_specs(self) -> list[Spec]:
        assert self.on is not None
        # The sum of an integer column again in float64: Arrow's int sum wraps past 2**63 without a word.
        return [(_exact_input(self.on), "sum", self._opts()), (_float_input(Sum, self.on), "sum", self._opts())]

    def merge_specs(self) -> list[tuple[str, Any] | None]:
        return [("sum", self._opts()), ("sum", self._opts())]

    def finish(self, merged: list[pa.Array | None], states: list[pa.Array], gid: np.ndarray, n: int) -> pa.Array:
        total, approx = merged
        assert total is not None
        if approx is not None and pa.types.is_integer(total.type):
            # A wrapped sum is 2**64 away from the float one; rounding in the float sum is far below 2**62.
            gap = np.abs(total.to_numpy(zero_copy_only=False).astype(np.float64)
                         - approx.to_numpy(zero_copy_only=False).astype(np.float64))
            wrapped = np.flatnonzero(np.nan_to_num(gap, nan=0.0) > 2.0**62)
            if len(wrapped):
                from bridge.errors import BridgeValueError

                exact = float(approx[int(wrapped[0])].as_py())
                msg = (f"sum({self.on}): the sum of {len(wrapped)} group(s) is beyond {total.type} "
                       f"(about {exact:.6g}); Arrow's integer sum wrapped it")
                raise BridgeValueError(msg, f"sum it as decimals (exact) or floats: cast {self.on!r} first, e.g. "
                                            f"ds.add_column({self.on!r}, lambda t: pc.cast(t[{self.on!r}], "
                                            f"pa.decimal128(38, 0)), batch_format='pyarrow')")
        if pa.types.is_decimal256(total.type):
            return self._decimal_total(total, approx)
        return total

    def _decimal_total(self, total: pa.Array, approx: pa.Array | None) -> pa.Array:
        """A decimal sum (summed as decimal256, :func:`numeric_null_columns`) in its result type: decimal128 of
        precision 38 for a decimal128 column (Arrow's type for it), decimal256 of precision 76 for a decimal256
        one; a sum that type cannot hold raises instead of wrapping."""
        import decimal

        from bridge.errors import BridgeValueError

        scale = total.type.scale
        source = self.input_type
        narrow = source is None or pa.types.is_decimal128(source)
        limit = decimal.Decimal(10) ** ((38 if narrow else 76) - scale)
        # Past 2**255 the decimal256 sum wraps: check the groups whose float64 sum is near the limit exactly.
        # Whatever the schema said (``input_type`` is the first block's type; later blocks may hold decimal256
        # values of a column typed decimal128 there), the wrap is checked: a wrapped sum may fit decimal128.
        near = 0.5 * float(limit)
        bad = wrapped = _wrapped_groups(total, approx, near)
        if not bad and approx is not None:
            # A sum past the precision of its type (a decimal256 cast to itself is not checked): refused too.
            floats = np.nan_to_num(approx.to_numpy(zero_copy_only=False).astype(np.float64), nan=0.0)
            bad = [int(r) for r in np.flatnonzero(np.abs(floats) >= near) if abs(total[int(r)].as_py() or 0) >= limit]
        target = pa.decimal128(38, scale) if narrow else pa.decimal256(76, scale)
        if not bad:
            try:
                return total.cast(target, safe=True)
            except (pa.ArrowInvalid, OverflowError):
                bad = [0]
        col = self.on
        what = f"{source}" if source is not None else "decimal"
        msg = (f"sum({col}): the sum of column {col!r} ({what}) is beyond {target}, the widest decimal "
               f"{'128' if narrow else '256'} of its scale; Arrow's decimal sum would wrap it")
        hint = (f"cast {col!r} to pa.decimal256(76, {scale}) first (sums up to 76 digits), e.g. "
                f"ds.add_column({col!r}, lambda t: pc.cast(t[{col!r}], pa.decimal256(76, {scale})), "
                f"batch_format='pyarrow')" if narrow and not wrapped else
                f"sum it as floats (approximate) or at a smaller scale: cast {col!r} first, e.g. "
                f"ds.add_column({col!r}, lambda t: pc.cast(t[{col!r}], pa.float64()), batch_format='pyarrow')")
        raise BridgeValueError(msg, hint)


#: The prefix of a column an aggregation reads only for some blocks (Sum's float64 sum of an integer
#: column whose sum may pass 2**63): a block without it (:func:`bridge.ops.groupby.partial_states`) takes
#: its exact sum, in float64, instead.
OPTIONAL_INPUT = _float_input(Sum, "")


class Min(_Builtin):
    """Smallest value of ``on`` (numbers, strings, timestamps, ...).

    Example:
        >>> import bridge
        >>> bridge.from_items([{"s": "pear"}, {"s": "apple"}]).aggregate(bridge.Min("s"))
        {'min(s)': 'apple'}
    """

    _fn = "min"
    _takes = staticmethod(_is_orderable)
    _takes_words = "numbers, strings, binaries, dates, times, timestamps and durations (not lists or structs)"

    def __init__(self, on: str, ignore_nulls: bool = True, alias_name: str | None = None) -> None:
        super().__init__(on, ignore_nulls, alias_name, self._fn)

    def keeps_type(self, t: pa.DataType) -> bool:
        return True

    def map_specs(self) -> list[Spec]:
        return [(self.on, self._fn, self._opts())]

    def merge_specs(self) -> list[tuple[str, Any] | None]:
        return [(self._fn, self._opts())]


class Max(Min):
    """Largest value of ``on``.

    Example:
        >>> import bridge
        >>> bridge.range(4).aggregate(bridge.Max("id"))
        {'max(id)': 3}
    """

    _fn = "max"


class Mean(_Builtin):
    """Arithmetic mean of ``on`` as float64.

    Example:
        >>> import bridge
        >>> bridge.range(4).aggregate(bridge.Mean("id"))
        {'mean(id)': 1.5}
    """

    def __init__(self, on: str, ignore_nulls: bool = True, alias_name: str | None = None) -> None:
        super().__init__(on, ignore_nulls, alias_name, "mean")

    def map_specs(self) -> list[Spec]:
        assert self.on is not None
        # A decimal256 column's sum again in float64 (Arrow's decimal256 sum wraps past 2**255 without a word);
        # a block of another type has none (its sum cannot wrap): its exact sum stands in (OPTIONAL_INPUT).
        return [(_float_input(Mean, self.on), "sum", self._opts()), (self.on, "count", pc.CountOptions("only_valid")),
                (_float_input(Sum, self.on), "sum", self._opts())]

    def merge_specs(self) -> list[tuple[str, Any] | None]:
        return [("sum", self._opts()), ("sum", None), ("sum", self._opts())]

    def finish(self, merged: list[pa.Array | None], states: list[pa.Array], gid: np.ndarray, n: int) -> pa.Array:
        total, count, approx = merged
        assert total is not None and count is not None
        if pa.types.is_decimal(total.type):
            # Any group whose sum may pass 2**255 (in units of the scale) is checked; rounding is far below.
            wrapped = _wrapped_groups(total, approx, 0.25 * 2.0**255 / 10.0**total.type.scale)
            if wrapped:
                from bridge.errors import BridgeValueError

                assert approx is not None
                about = float(approx[wrapped[0]].as_py())
                col = self.on
                msg = (f"mean({col}): the sum of column {col!r} ({self.input_type or total.type}) in "
                       f"{len(wrapped)} group(s) is beyond decimal256 (about {about:.6g}); Arrow's decimal sum "
                       f"wrapped it, and the mean would be wrong")
                raise BridgeValueError(msg, f"take the mean as floats (approximate): cast {col!r} first, e.g. "
                                            f"ds.add_column({col!r}, lambda t: pc.cast(t[{col!r}], pa.float64()), "
                                            f"batch_format='pyarrow')")
            return _decimal_means(total, count)
        if pa.types.is_integer(total.type):
            return _integer_means(total, count, approx)
        if approx is not None:
            # The float64 sums: a float column's own sum; where an int block's exact sum was cast to float
            # to merge with a float block's (_mean_states_as_floats), its float sum, which did not wrap.
            total = approx
        mean = pc.divide(pc.cast(total, pa.float64()), pc.cast(count, pa.float64()))
        return pc.if_else(pc.greater(count, 0), mean, pa.scalar(None, pa.float64()))


def _integer_means(total: pa.Array, count: pa.Array, approx: pa.Array | None) -> pa.Array:
    """Exact int64 sums over counts, each rounded once to float64: the same mean however the rows are cut
    into blocks (a float64 sum of the values gave 1.0 on one block, 0.8 on two, for a true 1.2). A sum
    within 2**53 divides exactly in float64; a larger one by Python's correctly rounded ``int / int``.  A
    group whose int64 sum wrapped (its float64 sum ``approx`` 2**64 away) takes the float sum's mean, as
    NumPy's ``mean`` gives."""
    tot = pc.fill_null(total, 0).to_numpy(zero_copy_only=False)
    cnt = pc.fill_null(count, 0).to_numpy(zero_copy_only=False)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = tot.astype(np.float64) / cnt
        if approx is not None:
            app = pc.fill_null(approx, 0.0).to_numpy(zero_copy_only=False).astype(np.float64)
            wrapped = np.abs(tot.astype(np.float64) - app) > 2.0**62
            mean[wrapped] = app[wrapped] / cnt[wrapped]
        else:
            wrapped = np.zeros(len(tot), dtype=bool)
    for g in np.flatnonzero(~wrapped & (np.abs(tot) > 2**53) & (cnt > 0)):
        mean[g] = int(tot[g]) / int(cnt[g])
    valid = np.asarray(total.is_valid().to_numpy(zero_copy_only=False)) & (cnt > 0)
    return pa.array(mean, pa.float64(), mask=~valid)


def _decimal_means(total: pa.Array, count: pa.Array) -> pa.Array:
    """Exact decimal sums over counts, each rounded once to float64 (the float64 of a sum past 2**53 divided
    in float64 rounded twice: the mean of six values 9 * 10**75 came out 8.999999999999999e+75)."""
    import decimal

    with decimal.localcontext() as ctx:
        ctx.prec = 100  # beyond any decimal256 sum (78 digits): the quotient is exact to far below a float's ulp
        means = [float(t / c) if t is not None and c else None for t, c in zip(total.to_pylist(), count.to_pylist())]
    return pa.array(means, pa.float64())


class Std(_Builtin):
    """Standard deviation of ``on`` (``ddof=1`` like pandas), merged exactly.

    Each block keeps (count, shift, mean, M2) per group, the mean and M2 of its values
    less the shift (the group's first finite value in that block, :func:`std_shifts`):
    Arrow's variance kernel is exact to rounding on such values, where on values whose
    mean is large against their spread it was not.  The merge uses the parallel formula
    ``M2 = sum(M2_i) + sum(n_i * (mean_i - mean)^2)`` in NumPy over group ids, the
    blocks' means taken relative to one shift per group.  A group
    of no more than ``ddof`` values gives NaN (as Ray Data, pandas and NumPy), one
    of no value null.

    Example:
        >>> import bridge
        >>> bridge.from_items([{"x": 1.0}, {"x": 3.0}]).aggregate(bridge.Std("x"))
        {'std(x)': 1.4142135623730951}
    """

    def __init__(self, on: str, ddof: int = 1, ignore_nulls: bool = True, alias_name: str | None = None) -> None:
        super().__init__(on, ignore_nulls, alias_name, "std")
        self.ddof = ddof

    def map_specs(self) -> list[Spec]:
        assert self.on is not None
        shifted = _shifted_input(self.on)
        return [
            (self.on, "count", pc.CountOptions("only_valid")),
            (_shift_input(self.on), "min", pc.ScalarAggregateOptions(skip_nulls=True, min_count=1)),
            (shifted, "mean", pc.ScalarAggregateOptions(skip_nulls=True, min_count=1)),
            (shifted, "variance", pc.VarianceOptions(ddof=0, skip_nulls=True, min_count=1)),
            (self.on, "count", pc.CountOptions("only_null")),
        ]

    def merge_specs(self) -> list[tuple[str, Any] | None]:
        return [("sum", None), None, None, None, ("sum", None)]

    def finish(self, merged: list[pa.Array | None], states: list[pa.Array], gid: np.ndarray, n: int) -> pa.Array:
        counts = states[0].to_numpy(zero_copy_only=False).astype(np.float64)
        # Each block's values were taken less a value of their group (the shift, :func:`std_shifts`), so its
        # mean and variance are those of small numbers; block i's mean relative to the group's reference
        # shift S (a block that has values) is (shift_i - S) + mean_i, exact where the shifts are close.
        shifts = states[1]
        means = states[2].fill_null(0.0).to_numpy(zero_copy_only=False).astype(np.float64)
        m2 = states[3].fill_null(0.0).to_numpy(zero_copy_only=False).astype(np.float64) * counts
        rel = _relative_shifts(shifts, counts > 0, gid, n) + means
        total = np.bincount(gid, counts, minlength=n)
        safe_total = np.where(total > 0, total, 1.0)
        group_mean = np.bincount(gid, counts * rel, minlength=n) / safe_total
        spread = np.bincount(gid, m2 + counts * (rel - group_mean[gid]) ** 2, minlength=n)
        denom = total - self.ddof
        std = np.sqrt(np.where(denom > 0, spread, 0.0) / np.where(denom > 0, denom, 1.0))
        # No value: null.  Values, but no more than ddof: NaN, undefined (Ray Data, pandas, NumPy).
        std = np.where(denom > 0, std, np.nan)
        valid = total > 0
        nulls = merged[4]
        if not self.ignore_nulls and nulls is not None:
            valid &= nulls.to_numpy(zero_copy_only=False) == 0
        return pa.array(std, pa.float64(), mask=~valid)


def _shift_input(col: str) -> str:
    """The column of each row's shift for :class:`Std` (:func:`std_shifts`)."""
    return f"__raybridge_std_shift_{col}"


def _shifted_input(col: str) -> str:
    """The column :class:`Std` takes the mean and variance of: its values less the shift."""
    return f"__raybridge_std_shifted_{col}"


def _relative_shifts(shifts: pa.Array, has_values: np.ndarray, gid: np.ndarray, n: int) -> np.ndarray:
    """Each state row's shift less its group's reference shift (that of the group's first row with
    values), as float64: integer shifts are subtracted as integers, so their difference is exact."""
    filled = shifts.fill_null(0)
    ints = pa.types.is_integer(filled.type)
    values = np.array(filled.to_pylist(), dtype=object) if ints else filled.to_numpy(zero_copy_only=False)
    rows = np.flatnonzero(has_values)
    groups, first = np.unique(gid[rows], return_index=True)
    ref = np.zeros(n, dtype=object if ints else np.float64)
    ref[groups] = values[rows[first]]
    diff = values - ref[gid]
    return np.asarray(diff, dtype=np.float64)


def _row_groups(block: Block, keys: list[str]) -> np.ndarray | None:
    """A group number per row, equal for rows Arrow's grouping on ``keys`` puts together (values
    compared as values: dictionaries decoded, 0.0 and -0.0 one, every NaN one, nulls one);
    ``None`` for key types that cannot be numbered here (lists, structs)."""
    codes = []
    for k in keys:
        col = block.column(k)
        if pa.types.is_dictionary(col.type):
            col = col.cast(col.type.value_type)
        if pa.types.is_floating(col.type):
            col = canonical_floats(col)
        try:
            encoded = pc.dictionary_encode(col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col)
        except (pa.ArrowNotImplementedError, pa.ArrowTypeError, pa.ArrowInvalid):
            return None
        codes.append(encoded.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64))
    if not codes:
        return np.zeros(block.num_rows, dtype=np.int64)
    if len(codes) == 1:
        return codes[0] + 1
    return np.unique(np.stack(codes, axis=1), axis=0, return_inverse=True)[1].reshape(-1)


def std_shifts(block: Block, keys: list[str], aggs: list[AggregateFn]) -> Block:
    """``block`` with, for each column a :class:`Std` reads, each row's shift (the first finite value of
    its group in this block) and its value less that shift.

    Arrow's variance kernel loses precision as the mean grows against the spread (a mean of ``1e12``
    and a spread of ``0.5`` gave a std ``1e-6`` off in relative terms); of the shifted values, whose
    mean is near zero, it is exact to rounding, and the variance is the same.  Integer columns are
    shifted as integers (exact); where that would overflow, or the keys cannot be numbered, the
    shift is zero (the values as they are).
    """
    cols = {a.on for a in aggs if type(a) is Std and a.on is not None}
    if not cols:
        return block
    groups = _row_groups(block, keys)
    for col in sorted(cols):
        if block.schema.get_field_index(_shifted_input(col)) >= 0:
            continue
        values = combine_column(block.column(_float_input(Std, col)))
        if not pa.types.is_integer(values.type):
            values = values.cast(pa.float64())  # (float16 / float32 exactly; Arrow has no float16 arithmetic)
        shift = _shifts(values, groups)
        try:
            shifted = pc.subtract_checked(values, shift) if pa.types.is_integer(values.type) \
                else pc.subtract(values, shift)
        except pa.ArrowInvalid:  # an integer difference beyond the type: no shift
            shift = pa.array(np.zeros(len(values), dtype=values.type.to_pandas_dtype()), values.type)
            shifted = values
        block = block.append_column(_shift_input(col), shift).append_column(_shifted_input(col), shifted)
    return block


def _shifts(values: pa.Array, groups: np.ndarray | None) -> pa.Array:
    """Each row's shift: the first finite value of its group (zero where the group has none)."""
    n = len(values)
    ints = pa.types.is_integer(values.type)
    t = values.type if ints else pa.float64()
    if groups is None or n == 0:
        return pa.array(np.zeros(n, dtype=t.to_pandas_dtype()), t)
    data = values.fill_null(0).to_numpy(zero_copy_only=False)
    usable = ~np.asarray(values.is_null().to_numpy(zero_copy_only=False))
    if not ints:
        data = data.astype(np.float64)
        usable &= np.isfinite(data)
    rows = np.flatnonzero(usable)
    per_group = np.zeros(int(groups.max()) + 1 if len(groups) else 1, dtype=data.dtype)
    found, first = np.unique(groups[rows], return_index=True)
    per_group[found] = data[rows[first]]
    return pa.array(per_group[groups], t)


class AbsMax(_Builtin):
    """Largest absolute value of ``on`` (``abs_max(on)``), in the column's type.

    A signed integer column holding its type's smallest value (int8's -128, whose magnitude int8 cannot
    hold) gives its results in the unsigned type of the same width (uint8).

    Example:
        >>> import bridge
        >>> bridge.from_items([{"x": -5}, {"x": 3}]).aggregate(bridge.AbsMax("x"))
        {'abs_max(x)': 5}
    """

    _takes = staticmethod(_is_signed_magnitude)
    _takes_words = "numbers (integers, floats, decimals; not booleans) and durations"

    def __init__(self, on: str, ignore_nulls: bool = True, alias_name: str | None = None) -> None:
        super().__init__(on, ignore_nulls, alias_name, "abs_max")

    def keeps_type(self, t: pa.DataType) -> bool:
        return True

    def map_specs(self) -> list[Spec]:
        return [(self.on, "min", self._opts()), (self.on, "max", self._opts())]

    def merge_specs(self) -> list[tuple[str, Any] | None]:
        return [("min", self._opts()), ("max", self._opts())]

    def finish(self, merged: list[pa.Array | None], states: list[pa.Array], gid: np.ndarray, n: int) -> pa.Array:
        low, high = merged
        assert low is not None and high is not None
        try:
            return pc.max_element_wise(pc.abs_checked(low), pc.abs_checked(high), skip_nulls=False)
        except pa.ArrowInvalid:
            # The magnitude of a signed type's smallest value (int8's -128) is one past its largest: every
            # magnitude in the unsigned type of the same width (two's complement: the wrapped abs, unsigned).
            unsigned = pa.from_numpy_dtype(np.dtype(low.type.to_pandas_dtype()).str.replace("i", "u"))
            return pc.max_element_wise(pc.abs(low).view(unsigned), pc.abs(high).view(unsigned), skip_nulls=False)


class Quantile(_Builtin):
    """The ``q`` quantile of ``on`` (``quantile(on)``), linear interpolation as ``numpy.quantile``.

    Not approximate: each group's values are gathered (so a group must fit in a task's memory).  The
    result is a float64, computed from the values as float64 as ``numpy.quantile`` does: integers past
    2**53 round to the nearest float64.  NaN values are skipped, as Arrow's ``quantile`` (which Ray Data
    uses) and pandas skip them: a group of only NaNs gives null.

    Example:
        >>> import bridge
        >>> bridge.from_items([{"x": v} for v in (-5, 1, 3, 10)]).aggregate(bridge.Quantile("x", q=0.25))
        {'quantile(x)': -0.5}
    """

    def __init__(self, on: str, q: float = 0.5, ignore_nulls: bool = True, alias_name: str | None = None) -> None:
        if not 0.0 <= q <= 1.0:
            from bridge.errors import BridgeValueError

            raise BridgeValueError(f"Quantile: q must be in [0, 1]; got {q}", "pass e.g. q=0.5 for the median")
        super().__init__(on, ignore_nulls, alias_name, "quantile")
        self.q = q

    def map_specs(self) -> list[Spec]:
        return [(self.on, "list", None), (self.on, "count", pc.CountOptions("only_null"))]

    def merge_specs(self) -> list[tuple[str, Any] | None]:
        return [None, ("sum", None)]

    def finish(self, merged: list[pa.Array | None], states: list[pa.Array], gid: np.ndarray, n: int) -> pa.Array:
        lists = states[0]
        values = canonical_floats(pc.list_flatten(lists))
        owner = gid[pc.list_parent_indices(lists).to_numpy()]
        valid = values.is_valid().to_numpy(zero_copy_only=False)
        numbers = values.cast(pa.float64(), safe=False).to_numpy(zero_copy_only=False)  # uint64 rounds, as NumPy
        valid &= ~np.isnan(numbers)  # NaN is skipped, as Arrow's quantile kernel (Ray Data) and pandas do
        out = np.full(n, np.nan)
        has = np.zeros(n, dtype=bool)
        for g in range(n):
            picked = numbers[(owner == g) & valid]
            if picked.size:
                out[g], has[g] = np.quantile(picked, self.q), True
        nulls = merged[1]
        if not self.ignore_nulls and nulls is not None:
            has &= nulls.to_numpy(zero_copy_only=False) == 0
        return pa.array(out, pa.float64(), mask=~has)


class Unique(_Builtin):
    """The distinct values of ``on`` per group, as a list (nulls included unless ``ignore_nulls``).

    Values Arrow can hash, and with ``encode_lists=True`` the elements of a list column of them (its lists
    flattened one level, as Ray Data's ``encode_lists``; null lists have none, null elements are values), are
    told apart by Arrow's kernels; lists, structs and maps by their Python values, their dates, times,
    timestamps and durations as the integers that store them (exact past year 9999).  Every NaN is one value
    (as Ray Data does for lists), and so are 0.0 and -0.0 (the first that occurs is kept).

    Example:
        >>> import bridge
        >>> out = bridge.from_items([{"k": 2}, {"k": 1}, {"k": 2}]).aggregate(bridge.Unique("k"))
        >>> sorted(out["unique(k)"])
        [1, 2]
        >>> bridge.from_items([{"x": [1]}, {"x": [1]}, {"x": [2]}]).unique("x")
        [[1], [2]]
    """

    _takes = staticmethod(_is_distinguishable)
    _takes_words = "values Arrow can hash, and lists, structs and maps of them (not tensors)"

    _label = "unique"

    def __init__(self, on: str, ignore_nulls: bool = False, alias_name: str | None = None,
                 encode_lists: bool = False) -> None:
        super().__init__(on, ignore_nulls, alias_name, self._label)
        if not isinstance(encode_lists, bool):
            from bridge.errors import BridgeValueError

            msg = f"{self.name}: encode_lists must be True or False; got {encode_lists!r}"
            raise BridgeValueError(msg, "pass encode_lists=True for the distinct elements of a list column")
        #: The distinct ELEMENTS of a list column (its lists flattened one level), as Ray Data's ``encode_lists``.
        self.encode_lists = encode_lists

    def _count(self) -> pc.CountOptions:
        return pc.CountOptions("only_valid" if self.ignore_nulls else "all")

    def map_specs(self) -> list[Spec]:
        return [(self.on, "distinct", self._count())]

    def block_map_specs(self, schema: pa.Schema) -> list[Spec] | None:
        i = schema.get_field_index(self.on) if self.on is not None else -1
        t = schema.field(i).type if i >= 0 else None
        if t is not None and (not _is_hashable(t) or (self.encode_lists and _is_list(t))):
            return None  # Arrow's distinct takes no lists: accumulate_groups (Arrow's grouping where it can)
        if t is not None and pa.types.is_null(t):
            # Arrow's grouped distinct of the null type skipping nulls crashes the process (pyarrow 26):
            # keep the null, finish skips it.
            return [(self.on, "distinct", pc.CountOptions("all"))]
        return self.map_specs()

    def accumulate_groups(self, block: Block, keys: list[Any], rows: pa.ListArray) -> pa.Array:
        """The state of a column Arrow's ``distinct`` takes not (lists, structs, maps; a list column's
        elements with ``encode_lists``): per group, its distinct values (first occurrences), grouped by
        Arrow where it can hash them (:func:`_distinct_rows`)."""
        assert self.on is not None
        values, owner = _group_values(block, self.on, rows, self.encode_lists)
        return _first_distinct(values, owner, len(rows), self.ignore_nulls)

    def merge_specs(self) -> list[tuple[str, Any] | None]:
        return [None]

    def finish(self, merged: list[pa.Array | None], states: list[pa.Array], gid: np.ndarray, n: int) -> pa.Array:
        values, owner = _state_values(states[0], gid)
        return _first_distinct(values, owner, n, self.ignore_nulls)


class CountDistinct(Unique):
    """How many distinct values ``on`` has per group (``count_distinct(on)``; SQL's ``COUNT(DISTINCT on)``).

    Null is not counted unless ``ignore_nulls=False`` (Ray Data's default, ``True``); every NaN counts once.

    Example:
        >>> import bridge
        >>> bridge.from_items([{"c": "A"}, {"c": "B"}, {"c": "A"}, {"c": None}]).aggregate(bridge.CountDistinct("c"))
        {'count_distinct(c)': 2}
    """

    _label = "count_distinct"

    def __init__(self, on: str, ignore_nulls: bool = True, alias_name: str | None = None) -> None:
        super().__init__(on, ignore_nulls, alias_name)

    def finish(self, merged: list[pa.Array | None], states: list[pa.Array], gid: np.ndarray, n: int) -> pa.Array:
        return pc.list_value_length(super().finish(merged, states, gid, n)).cast(pa.int64())


class AsList(_Builtin):
    """Every value of ``on`` per group, as one list (``list(on)``), nulls included unless ``ignore_nulls``.

    Example:
        >>> import bridge
        >>> bridge.from_items([{"x": 1}, {"x": None}, {"x": 3}]).aggregate(bridge.AsList("x"))
        {'list(x)': [1, None, 3]}
    """

    _takes = staticmethod(_is_distinguishable)
    _takes_words = "any type but tensors"

    def __init__(self, on: str, alias_name: str | None = None, ignore_nulls: bool = False) -> None:
        super().__init__(on, ignore_nulls, alias_name, "list")

    def map_specs(self) -> None:
        return None  # accumulate_groups: Arrow's hash_list takes no lists

    def accumulate_groups(self, block: Block, keys: list[Any], rows: pa.ListArray) -> pa.Array:
        """Per group, its values in the order of the block."""
        assert self.on is not None
        values = take_values(block.column(self.on), pc.list_flatten(rows))
        return _group_lists(values, pc.list_parent_indices(rows).to_numpy(), len(rows), self.ignore_nulls)

    def merge_specs(self) -> list[tuple[str, Any] | None]:
        return [None]

    def finish(self, merged: list[pa.Array | None], states: list[pa.Array], gid: np.ndarray, n: int) -> pa.Array:
        lists = states[0]
        return _group_lists(pc.list_flatten(lists), gid[pc.list_parent_indices(lists).to_numpy()], n, False)


def _group_lists(values: pa.Array, owner: np.ndarray, n: int, skip_nulls: bool) -> pa.Array:
    """One list per group ``g`` of ``n``: the ``values`` whose ``owner`` is ``g``, in their order."""
    if skip_nulls:
        keep = values.is_valid()
        values, owner = values.filter(keep), owner[keep.to_numpy(zero_copy_only=False)]
    order = np.argsort(owner, kind="stable")
    lengths = np.bincount(owner, minlength=n).astype(np.int32) if len(owner) else np.zeros(n, dtype=np.int32)
    offsets = pa.array(np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32))
    return pa.ListArray.from_arrays(offsets, values.take(pa.array(order, pa.int64())))


def _percentages(numerator: pa.Array, denominator: pa.Array) -> pa.Array:
    """``numerator / denominator * 100`` in float64 (Ray Data's arithmetic), null where the denominator is 0."""
    num, den = pc.cast(numerator, pa.float64()), pc.cast(denominator, pa.float64())
    pct = pc.multiply(pc.divide(num, pc.if_else(pc.greater(den, 0.0), den, pa.scalar(1.0))), 100.0)
    return pc.if_else(pc.equal(den, 0.0), pa.scalar(None, pa.float64()), pct)


def _missing_input(col: str) -> str:
    """The column :class:`MissingValuePercentage` sums: whether each value is null or NaN."""
    return f"__raybridge_missing_{col}"


def _zero_input(col: str) -> str:
    """The column :class:`ZeroPercentage` sums: whether each value is zero (null where null)."""
    return f"__raybridge_zero_{col}"


def _zeros(values: pa.ChunkedArray) -> pa.ChunkedArray | pa.Array:
    """Whether each value of a numeric column is zero (-0.0 is; NaN is not), null where it is null."""
    t = values.type
    if pa.types.is_null(t):
        return pa.nulls(len(values), pa.bool_())
    if pa.types.is_boolean(t):
        return pc.invert(values)
    return pc.equal(values, 0)


class ValueCounter(_Builtin):
    """How many times each value of ``on`` occurs per group (``value_counter(on)``), as Ray Data's
    ``ValueCounter`` (pandas' ``value_counts``): ``{"values": [...], "counts": [...]}``, the values in the
    order they first occur, null one of them (counted, as Arrow's ``value_counts`` that Ray Data uses).

    Values are told apart as :class:`Unique` tells them (every NaN one value, 0.0 and -0.0 one value: Ray
    Data tells those apart inside a block but not across blocks); lists, structs and maps are counted too
    (Ray Data raises Arrow's ``ArrowNotImplementedError``).  The values keep the column's type.

    Example:
        >>> import bridge
        >>> ds = bridge.from_items([{"c": "A"}, {"c": "B"}, {"c": "A"}, {"c": None}])
        >>> ds.aggregate(bridge.ValueCounter("c"))
        {'value_counter(c)': {'values': ['A', 'B', None], 'counts': [2, 1, 1]}}
    """

    _takes = staticmethod(_is_distinguishable)
    _takes_words = "values Arrow can hash, and lists, structs and maps of them (not tensors)"

    def __init__(self, on: str, alias_name: str | None = None) -> None:
        super().__init__(on, True, alias_name, "value_counter")

    def map_specs(self) -> None:
        return None  # accumulate_groups: a count per (group, value)

    def accumulate_groups(self, block: Block, keys: list[Any], rows: pa.ListArray) -> pa.Array:
        """Per group, its distinct values and how often each occurs (one list of (value, count) structs)."""
        assert self.on is not None
        values, owner = _group_values(block, self.on, rows)
        return _counts_state(values, owner, len(rows), skip_nulls=False)

    def merge_specs(self) -> list[tuple[str, Any] | None]:
        return [None]

    def finish(self, merged: list[pa.Array | None], states: list[pa.Array], gid: np.ndarray, n: int) -> pa.Array:
        values, g, counts = _merged_counts(states[0], gid, skip_nulls=False)
        offsets = _offsets(g, n)
        return pa.StructArray.from_arrays(
            [pa.ListArray.from_arrays(offsets, values), pa.ListArray.from_arrays(offsets, pa.array(counts, pa.int64()))],
            names=["values", "counts"])


def _counts_state(values: pa.Array, owner: np.ndarray, n: int, skip_nulls: bool) -> pa.Array:
    """The state of :class:`ValueCounter` / :class:`ApproximateTopK` for ``n`` groups: per group, a list
    of (value, count) structs, one per distinct value, in first-occurrence order."""
    g, first, counts = _distinct_rows(values, owner, skip_nulls)
    pairs = pa.StructArray.from_arrays([values.take(pa.array(first, pa.int64())), pa.array(counts, pa.int64())],
                                       names=["value", "count"])
    return pa.ListArray.from_arrays(_offsets(g, n), pairs)


def _merged_counts(lists: pa.Array, gid: np.ndarray, skip_nulls: bool) -> tuple[pa.Array, np.ndarray, np.ndarray]:
    """The (value, count) states of every block merged per output group: the distinct values (the first of
    each), their group and total count, ordered by group, then by first occurrence."""
    pairs, owner = _state_values(lists, gid)
    values = pairs.field("value")
    counts = pairs.field("count").to_numpy(zero_copy_only=False)
    g, first, total = _distinct_rows(values, owner, skip_nulls, weights=counts)
    return values.take(pa.array(first, pa.int64())), g, total


class _Percentage(_Builtin):
    """A percentage per group: ``map_specs`` gives the numerator's and the denominator's partial sums."""

    def merge_specs(self) -> list[tuple[str, Any] | None]:
        return [("sum", pc.ScalarAggregateOptions(min_count=0)), ("sum", pc.ScalarAggregateOptions(min_count=0))]

    def finish(self, merged: list[pa.Array | None], states: list[pa.Array], gid: np.ndarray, n: int) -> pa.Array:
        part, total = merged
        assert part is not None and total is not None
        return _percentages(part, total)


class MissingValuePercentage(_Percentage):
    """The percentage of null or NaN values of ``on`` per group (``missing_pct(on)``), as Ray Data's
    ``MissingValuePercentage``: a float64 in [0, 100] (a NaN inside a list is not missing; the list is not).

    Example:
        >>> import bridge
        >>> ds = bridge.from_items([{"x": 1.0}, {"x": None}, {"x": float("nan")}, {"x": 4.0}])
        >>> ds.aggregate(bridge.MissingValuePercentage("x"))
        {'missing_pct(x)': 50.0}
    """

    _takes = staticmethod(lambda t: True)
    _takes_words = "any type"

    def __init__(self, on: str, alias_name: str | None = None) -> None:
        super().__init__(on, False, alias_name, "missing_pct")

    def map_specs(self) -> list[Spec]:
        assert self.on is not None
        return [(_missing_input(self.on), "sum", pc.ScalarAggregateOptions(min_count=0)), ([], "count_all", None)]


class ZeroPercentage(_Percentage):
    """The percentage of zeros among the values of ``on`` per group (``zero_pct(on)``), as Ray Data's
    ``ZeroPercentage``: a float64 in [0, 100], null for a group without values.

    With ``ignore_nulls=True`` (default) nulls count in neither part; with ``False`` they count in the
    denominator.  NaN is a value and not a zero; -0.0 is a zero.  Booleans count ``False`` as zero (Ray
    Data raises Arrow's ``ArrowNotImplementedError`` for them).

    Example:
        >>> import bridge
        >>> ds = bridge.from_items([{"v": 0}, {"v": 1}, {"v": 0}, {"v": None}])
        >>> ds.aggregate(bridge.ZeroPercentage("v"))
        {'zero_pct(v)': 66.66666666666666}
        >>> ds.aggregate(bridge.ZeroPercentage("v", ignore_nulls=False))
        {'zero_pct(v)': 50.0}
    """

    def __init__(self, on: str, ignore_nulls: bool = True, alias_name: str | None = None) -> None:
        super().__init__(on, ignore_nulls, alias_name, "zero_pct")

    def map_specs(self) -> list[Spec]:
        assert self.on is not None
        count: Spec = (self.on, "count", pc.CountOptions("only_valid")) if self.ignore_nulls else ([], "count_all",
                                                                                                     None)
        return [(_zero_input(self.on), "sum", pc.ScalarAggregateOptions(min_count=0)), count]


def _kll_precision(name: str, k: Any) -> int:
    from bridge.errors import BridgeValueError

    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 8 <= k <= 65535:
        raise BridgeValueError(f"{name}: quantile_precision must be an integer from 8 to 65535 (the K of a KLL "
                               f"sketch); got {k!r}", "leave it at 800, or pass e.g. quantile_precision=200")
    return int(k)


class ApproximateQuantile(_Builtin):
    """The ``quantiles`` of ``on`` per group (``approx_quantile(on)``), a list of float64, one per quantile,
    with Ray Data's ``ApproximateQuantile`` arguments and answers.

    Ray Data builds a KLL sketch (``datasketches``, with ``quantile_precision`` as its K); this computes the
    answer such a sketch gives when it holds every value, exactly: the value of rank ``floor(q * n)`` (0-based,
    at most ``n - 1``) among the ``n`` sorted values, the definition of the sketch's ``get_quantiles`` (no
    interpolation: always a value of the data).  That is within the sketch's documented rank error of Ray
    Data's answer, and the same answer as long as the sketch is exact (up to about ``quantile_precision``
    values); a sketch holds float32, so Ray Data's values are also rounded to float32 (these are not).  Each
    group's values are gathered, so a group must fit in a task's memory.  ``quantile_precision`` is checked
    as the sketch would and otherwise unused.

    Nulls and NaNs are skipped (as the sketch skips them); a group without other values gives ``[]``.

    Example:
        >>> import bridge
        >>> ds = bridge.from_items([{"v": v} for v in (20.0, 40.0, 60.0, 80.0, 100.0)])
        >>> ds.aggregate(bridge.ApproximateQuantile("v", quantiles=[0.1, 0.5, 0.9]))
        {'approx_quantile(v)': [20.0, 60.0, 100.0]}
    """

    def __init__(self, on: str, quantiles: list[float], quantile_precision: int = 800,
                 alias_name: str | None = None) -> None:
        super().__init__(on, True, alias_name, "approx_quantile")
        from bridge.errors import BridgeValueError

        qs = list(quantiles) if isinstance(quantiles, (list, tuple, np.ndarray)) else None
        if qs is None or not all(isinstance(q, (int, float, np.integer, np.floating)) and not isinstance(q, bool)
                                 and 0.0 <= q <= 1.0 for q in qs):
            raise BridgeValueError(f"{self.name}: quantiles must be a list of numbers in [0, 1]; got {quantiles!r}",
                                   "pass e.g. quantiles=[0.5] for the median, [0.25, 0.5, 0.75] for the quartiles")
        self.quantiles = [float(q) for q in qs]
        self.quantile_precision = _kll_precision(self.name, quantile_precision)

    def map_specs(self) -> list[Spec]:
        return [(self.on, "list", None)]

    def merge_specs(self) -> list[tuple[str, Any] | None]:
        return [None]

    def finish(self, merged: list[pa.Array | None], states: list[pa.Array], gid: np.ndarray, n: int) -> pa.Array:
        values, owner = _state_values(states[0], gid)
        numbers = values.cast(pa.float64(), safe=False).to_numpy(zero_copy_only=False)  # uint64 rounds, as float()
        keep = values.is_valid().to_numpy(zero_copy_only=False) & ~np.isnan(numbers)
        numbers, owner = numbers[keep], owner[keep]
        order = np.lexsort((numbers, owner))
        numbers = numbers[order]
        sizes = np.bincount(owner, minlength=n) if len(owner) else np.zeros(n, dtype=np.int64)
        starts = (np.cumsum(sizes) - sizes).astype(np.int64)
        has = sizes > 0
        picked = np.empty((int(has.sum()), len(self.quantiles)), dtype=np.float64)
        for j, q in enumerate(self.quantiles):
            # The sketch's rule (inclusive=False): the first value whose cumulative weight passes q * n,
            # the weight computed in float64 as the sketch does.
            rank = np.minimum(np.floor(q * sizes[has].astype(np.float64)).astype(np.int64), sizes[has] - 1)
            picked[:, j] = numbers[starts[has] + rank]
        lengths = np.where(has, len(self.quantiles), 0)
        offsets = pa.array(np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32))
        return pa.ListArray.from_arrays(offsets, pa.array(picked.reshape(-1), pa.float64()))


class ApproximateTopK(_Builtin):
    """The ``k`` most frequent values of ``on`` per group (``approx_topk(on)``), with Ray Data's
    ``ApproximateTopK`` arguments and output: a list of ``{on: value, "count": n}``, most frequent first.

    Ray Data counts with a frequent-items sketch (``datasketches``, ``2**log_capacity`` counters) whose counts
    are exact while the distinct values fit in it and otherwise off by at most ``N / 2**log_capacity``; this
    counts exactly (the answer of a sketch that holds every value), so it is within that documented error
    of Ray Data's, and each group's distinct values are held in memory.  Values of equal count come in the
    order they first occur (the sketch's order among them is arbitrary).  ``log_capacity`` is checked and
    otherwise unused.

    Nulls are skipped; with ``encode_lists=True`` the elements of a list column are counted (one level
    flattened, null elements skipped), as Ray Data does.  Values are told apart as :class:`Unique` tells
    them (every NaN one value; 0.0 and -0.0 one value, which Ray Data's pickled keys tell apart); they keep
    the column's type.

    Example:
        >>> import bridge
        >>> ds = bridge.from_items([{"w": w} for w in ("apple", "banana", "apple", "cherry", "apple", "cherry")])
        >>> ds.aggregate(bridge.ApproximateTopK("w", k=2))
        {'approx_topk(w)': [{'w': 'apple', 'count': 3}, {'w': 'cherry', 'count': 2}]}
    """

    _takes = staticmethod(_is_distinguishable)
    _takes_words = "values Arrow can hash, and lists, structs and maps of them (not tensors)"

    def __init__(self, on: str, k: int, log_capacity: int = 15, alias_name: str | None = None,
                 encode_lists: bool = False) -> None:
        super().__init__(on, True, alias_name, "approx_topk")
        from bridge.errors import BridgeValueError

        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 0:
            raise BridgeValueError(f"{self.name}: k must be an integer >= 0; got {k!r}", "pass e.g. k=10")
        if isinstance(log_capacity, bool) or not isinstance(log_capacity, (int, np.integer)) \
                or not 3 <= log_capacity <= 31:
            raise BridgeValueError(f"{self.name}: log_capacity must be an integer from 3 to 31 (the base-2 log of "
                                   f"the sketch's size); got {log_capacity!r}", "leave it at 15")
        if not isinstance(encode_lists, bool):
            raise BridgeValueError(f"{self.name}: encode_lists must be True or False; got {encode_lists!r}",
                                   "pass encode_lists=True to count the elements of a list column")
        self.k = int(k)
        self.log_capacity = int(log_capacity)
        self.encode_lists = encode_lists

    def map_specs(self) -> None:
        return None  # accumulate_groups: a count per (group, value)

    def accumulate_groups(self, block: Block, keys: list[Any], rows: pa.ListArray) -> pa.Array:
        """Per group, its distinct non-null values and how often each occurs (a list of (value, count))."""
        assert self.on is not None
        values, owner = _group_values(block, self.on, rows, self.encode_lists)
        return _counts_state(values, owner, len(rows), skip_nulls=True)

    def merge_specs(self) -> list[tuple[str, Any] | None]:
        return [None]

    def finish(self, merged: list[pa.Array | None], states: list[pa.Array], gid: np.ndarray, n: int) -> pa.Array:
        assert self.on is not None
        values, g, counts = _merged_counts(states[0], gid, skip_nulls=True)
        # Within a group (already in first-occurrence order): most frequent first, ties as they came.
        order = np.lexsort((np.arange(len(g)), -counts, g))
        g, counts = g[order], counts[order]
        top = np.arange(len(g)) - np.searchsorted(g, g, side="left") < self.k  # (the place within its group)
        picked = order[top]
        pairs = pa.StructArray.from_arrays([values.take(pa.array(picked, pa.int64())),
                                            pa.array(counts[top], pa.int64())], names=[self.on, "count"])
        return pa.ListArray.from_arrays(_offsets(g[top], n), pairs)


#: The built-ins whose results hold the values of the column they read: :func:`numeric_null_columns` leaves
#: its type alone (a float16 or duration column is not read as float32 / int64 for them).
_READS_VALUES = (Count, Unique, ValueCounter, ApproximateTopK)


__all__ = ["AbsMax", "AggregateFn", "ApproximateQuantile", "ApproximateTopK", "AsList", "Count", "CountDistinct", "Max",
           "Mean", "Min", "MissingValuePercentage", "Quantile", "Std", "Sum", "Unique", "ValueCounter", "ZeroPercentage"]
