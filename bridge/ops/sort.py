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

from typing import Any

import pyarrow as pa

from bridge.block import Block, concat_blocks
from bridge.context import DataContext
from bridge.errors import BridgeError
from bridge.execution.bundle import RefBundle
from bridge.ops import exchange
from bridge.ops.exchange import SortKeys


def normalize_sort_keys(key: str | list[str], descending: bool | list[bool]) -> SortKeys:
    """``key``/``descending`` as given by the user -> ``[(column, order), ...]``."""
    keys = [key] if isinstance(key, str) else list(key)
    if not keys or not all(isinstance(k, str) for k in keys):
        msg = f"sort: key must be a column name or a non-empty list of column names; got {key!r}"
        raise BridgeError(msg, 'call ds.sort("x") or ds.sort(["x", "y"], descending=[False, True])')
    flags = [descending] * len(keys) if isinstance(descending, bool) else list(descending)
    if len(flags) != len(keys):
        msg = f"sort: {len(keys)} key(s) {keys} but {len(flags)} descending flag(s) {flags}"
        raise BridgeError(msg, "pass one descending flag per key, or a single bool for all keys")
    return [(k, "descending" if d else "ascending") for k, d in zip(keys, flags)]


def _sort_map(block: Block, index: int, bounds: pa.Table | None, sort_keys: SortKeys, n_out: int) -> list[Block]:
    # The reducer sorts its range anyway; a single numeric key is placed by binary search alone.
    return exchange.range_split(block, bounds, sort_keys, n_out, sort=False)


def _sort_reduce(pieces: list[Block], index: int, sort_keys: SortKeys) -> Block:
    block = concat_blocks([p for p in pieces if p.num_columns] or pieces[:1])
    return exchange.sort_table(block, sort_keys)


def sort_fn(sort_keys: SortKeys, label: str) -> Any:
    """The ``AllToAll`` function of ``sort``."""

    def run(bundles: list[RefBundle], ctx: DataContext) -> list[RefBundle]:
        refs, metas = exchange.flatten_refs(bundles)
        bundles.clear()
        if not refs:
            return []
        exchange.check_columns(label, [c for c, _ in sort_keys], exchange.input_schema(metas))
        if sum(m.num_rows for m in metas) == 0:
            return [RefBundle(refs, metas)]
        bounds = exchange.sample_boundaries(refs, sort_keys, exchange.num_partitions(metas))
        n_out = 1 if bounds is None else bounds.num_rows + 1
        pieces = exchange.run_map(_sort_map, refs, n_out, ctx, bounds, sort_keys, n_out)
        del refs
        return exchange.run_reduce(_sort_reduce, pieces, ctx, sort_keys)

    return run
