"""sort: sampled range boundaries, then a range-partitioning exchange.

1. A small random sample of the sort keys from every block picks ``n - 1``
   boundary rows (only the sample reaches the driver).
2. Each map task sorts its block (``pyarrow.compute.sort_indices``) and cuts it
   at the boundaries; each reduce task sorts the pieces of its range.

Output block ``j`` holds the ``j``-th key range, so the blocks in order are
globally sorted.  Nulls and NaN sort last, ascending or descending (as pandas'
``na_position="last"``).
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable
from typing import Any

import pyarrow as pa

from bridge.block import Block, concat_blocks
from bridge.context import DataContext
from bridge.errors import BridgeValueError
from bridge.execution.bundle import RefBundle
from bridge.ops import exchange
from bridge.ops.exchange import SortKeys
from bridge.ops.held_exchange import run_exchange


def normalize_sort_keys(key: str | list[str], descending: bool | list[bool]) -> SortKeys:
    """``key``/``descending`` as given by the user -> ``[(column, order), ...]``."""
    keys = [key] if isinstance(key, str) else list(key) if isinstance(key, Iterable) else []
    if not keys or not all(isinstance(k, str) for k in keys):
        msg = f"sort: key must be a column name or a non-empty list of column names; got {key!r}"
        raise BridgeValueError(msg, 'call ds.sort("x") or ds.sort(["x", "y"], descending=[False, True])')
    if getattr(descending, "ndim", None) == 0 and hasattr(descending, "item"):
        descending = descending.item()  # a NumPy scalar (numpy.bool_)
    if isinstance(descending, numbers.Integral) and not isinstance(descending, bool) and descending in (0, 1):
        descending = bool(descending)  # (0 / 1, as Python's own `reverse=` takes them)
    if isinstance(descending, str) or not isinstance(descending, (bool, list, tuple)) and not hasattr(descending, "__iter__"):
        msg = f"sort: descending must be a bool or a list of bools, one per key; got {descending!r}"
        raise BridgeValueError(msg, "pass descending=True, or descending=[False, True] for two keys")
    flags = [descending] * len(keys) if isinstance(descending, bool) else list(descending)
    if len(flags) != len(keys):
        msg = f"sort: {len(keys)} key(s) {keys} but {len(flags)} descending flag(s) {flags}"
        raise BridgeValueError(msg, "pass one descending flag per key, or a single bool for all keys")
    return [(k, "descending" if d else "ascending") for k, d in zip(keys, flags)]


#: The sort key cast to the boundaries' type, for comparing them by value (dropped from the pieces).
_CMP_KEY = "__raybridge_sort_cmp"


def _sort_map(block: Block, index: int, bounds: pa.Table | None, sort_keys: SortKeys, n_out: int,
              ties_after: bool = False) -> list[Block]:
    if bounds is not None and block.num_rows and len(sort_keys) == 1 and bounds.num_columns == 1:
        column, order = sort_keys[0]
        bound_type = bounds.schema.field(column).type
        if column in block.column_names and block.schema.field(column).type != bound_type:
            # Boundaries the column's type cannot hold as they are (see _boundary_table): compare by value, in theirs.
            # A dictionary on either side compares by its values (blocks of one Dataset may index theirs with
            # other widths: a cast between index types would wrap the indices, not compare the values).
            key, bound = block.column(column), bounds.column(0)
            if pa.types.is_dictionary(key.type):
                key = key.cast(key.type.value_type)
            if pa.types.is_dictionary(bound.type):
                bound = bound.cast(bound.type.value_type)
            if key.type != bound.type:
                key = key.cast(bound.type, safe=False)
            keyed = block.append_column(_CMP_KEY, key)
            pieces = exchange.range_split(keyed, pa.table({_CMP_KEY: bound}), [(_CMP_KEY, order)], n_out,
                                          sort=False, ties_after=ties_after)
            return [p.drop_columns([_CMP_KEY]) for p in pieces]
    # The reducer sorts its range anyway; a single numeric key is placed by binary search alone.
    return exchange.range_split(block, bounds, sort_keys, n_out, sort=False, ties_after=ties_after)


def _sort_reduce(pieces: list[Block], index: int, sort_keys: SortKeys) -> Block:
    block = concat_blocks(pieces)
    return exchange.sort_table(block, sort_keys)


def check_boundaries(sort_keys: SortKeys, boundaries: Any) -> list[Any] | None:
    """``sort(boundaries=)`` as given -> a list of ascending values for the one ascending key."""
    if boundaries is None:
        return None
    from bridge.errors import BridgeValueError

    if len(sort_keys) != 1 or sort_keys[0][1] != "ascending":
        msg = f"sort(boundaries=...) needs one ascending key; got {sort_keys}"
        raise BridgeValueError(msg, "sort by a single column with descending=False, or drop boundaries=")
    values = list(boundaries)
    if any(v is None for v in values) or any(b <= a for a, b in zip(values, values[1:])):
        msg = f"sort(boundaries={values!r}): boundaries must be distinct values in ascending order, without None"
        raise BridgeValueError(msg, "pass e.g. boundaries=[10, 20]: rows < 10, then 10 <= rows < 20, then >= 20")
    return values


def _is_number_type(t: pa.DataType | None) -> bool:
    return t is not None and (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t))


def _exactly(values: list[Any], t: pa.DataType) -> pa.Array | None:
    """``values`` as an array of type ``t``, or ``None`` where that would change one."""
    try:
        arr = pa.array(values, type=t)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        return None
    return arr if arr.to_pylist() == values else None


def _boundary_table(column: str, values: list[Any], schema: pa.Schema | None) -> pa.Table:
    """The boundaries in the column's type when it holds them exactly, else (numbers) in float64.

    A boundary is compared by value: ``5.5`` on an integer column is not ``5``, nor ``0.7``
    on a float32 column its float32 neighbour; such boundaries stay float64 and the map
    tasks compare the column cast to float64 (as Ray Data compares them, with NumPy).
    """
    t = schema.field(column).type if schema is not None and column in schema.names else None
    try:
        bounds = None
        if _is_number_type(t) and all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in values):
            bounds = _exactly(values, t)
            if bounds is None:
                bounds = pa.array([float(v) for v in values], type=pa.float64())
        return pa.table({column: pa.array(values, type=t) if bounds is None else bounds})
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as err:
        from bridge.errors import BridgeValueError

        msg = f"sort(boundaries={values!r}): the values do not fit column {column!r} of type {t}: {err}"
        raise BridgeValueError(msg, f"pass boundaries of the column's type {t}") from err


def _refuse_ordered_dictionaries(label: str, columns: list[str], schema: pa.Schema | None) -> None:
    """A sort compares a dictionary column by its values (Arrow's rule, text order for text); an *ordered*
    dictionary -- a pandas ``Categorical(ordered=True)`` -- means its own order ("lo" < "hi" < "top"),
    which pandas sorts by. Sorting it by its text would put "hi" first: refused, naming both ways."""
    for column in columns:
        t = schema.field(column).type if schema is not None and column in schema.names else None
        if t is None or not (pa.types.is_dictionary(t) and t.ordered):
            continue
        msg = (f"{label}: key column {column!r} is an ordered dictionary ({t}): its order is its meaning, "
               f"and a sort compares the values themselves, not that order")
        values = f"t[{column!r}].cast(t[{column!r}].type.value_type)"
        raise BridgeValueError(
            msg, f"sort by the position in its order: order = [...categories...]; "
                 f"ds.add_column('{column}_rank', lambda t: pc.index_in({values}, value_set=pa.array(order)), "
                 f"batch_format='pyarrow').sort('{column}_rank'); or by the values: "
                 f"ds.add_column({column!r}, lambda t: {values}, batch_format='pyarrow')")


def sort_fn(sort_keys: SortKeys, label: str, boundaries: list[Any] | None = None) -> Any:
    """The ``AllToAll`` function of ``sort``.

    ``boundaries`` (one ascending key): output block ``j`` holds the rows with
    ``boundaries[j-1] <= key < boundaries[j]`` (Ray Data's rule; nulls in the last),
    ``len(boundaries) + 1`` blocks, empty ones included.
    """

    def run(bundles: list[RefBundle], ctx: DataContext) -> list[RefBundle]:
        refs, metas = exchange.flatten_refs(bundles)
        bundles.clear()
        if not refs:
            return []
        exchange.check_columns(label, [c for c, _ in sort_keys], exchange.input_schema(metas))
        exchange.check_key_types(label, [c for c, _ in sort_keys], exchange.input_schema(metas))
        _refuse_ordered_dictionaries(label, [c for c, _ in sort_keys], exchange.input_schema(metas))
        if boundaries is not None:
            bounds: pa.Table | None = _boundary_table(sort_keys[0][0], boundaries, exchange.input_schema(metas))
            n_out = len(boundaries) + 1
        elif sum(m.num_rows for m in metas) == 0:
            return [RefBundle(refs, metas)]
        else:
            bounds = exchange.sample_boundaries(refs, sort_keys, exchange.num_partitions(metas))
            n_out = 1 if bounds is None else bounds.num_rows + 1
        map_args = (bounds, sort_keys, n_out, boundaries is not None)
        return run_exchange(_sort_map, map_args, _sort_reduce, (sort_keys,), refs, metas, n_out, ctx)

    return run
