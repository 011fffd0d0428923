"""random_shuffle, repartition and random_sample as all-to-all (or per-block) operators.

A shuffle is map -> reduce: each map task gives every row a random output
partition and cuts its block into one piece per partition (a radix sort on the
partition ids, then zero-copy slices); each reduce task concatenates its
pieces and permutes them.  With a seed, both steps draw from generators seeded
by ``(seed, task index)``, so the output is identical on every run; without one,
a fresh seed is drawn each time the plan runs, so every epoch differs.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import ray

from bridge.block import Block, BlockMetadata, compact, concat_blocks, take_rows
from bridge.context import DataContext
from bridge.execution.bundle import RefBundle
from bridge.execution.transform import BlockTransform, TaskContext
from bridge.ops import exchange
from bridge.ops.epochs import EPOCH_SEED_ATTR
from bridge.ops.held_exchange import run_exchange


def _rng(seed: int, index: int, stage: int) -> np.random.Generator:
    return np.random.default_rng([seed, index, stage])


def _shuffle_map(block: Block, index: int, n_out: int, seed: int) -> list[Block]:
    if n_out == 1 or block.num_rows == 0:
        return [block] * n_out
    dtype = np.uint16 if n_out <= np.iinfo(np.uint16).max else np.uint32
    part = _rng(seed, index, 0).integers(0, n_out, size=block.num_rows, dtype=dtype)
    return exchange.split_by_partition(block, part, n_out)


def _shuffle_reduce(pieces: list[Block], index: int, seed: int) -> Block:
    block = concat_blocks(pieces)
    if block.num_rows <= 1:
        return compact(block)
    perm = _rng(seed, index, 1).permutation(block.num_rows)
    return take_rows(block, pa.array(perm))


def _fresh_seed() -> int:
    return int(np.random.SeedSequence().generate_state(2, np.uint64)[0] % (2**63))


def random_shuffle_fn(seed: int | None, num_blocks: int | None) -> Any:
    """The ``AllToAll`` function of ``random_shuffle``."""

    def run(bundles: list[RefBundle], ctx: DataContext) -> list[RefBundle]:
        refs, metas = exchange.flatten_refs(bundles)
        bundles.clear()  # the map tasks keep their inputs alive; nothing else needs to
        if not refs or sum(m.num_rows for m in metas) == 0:
            return [RefBundle(refs, metas)] if refs else []
        # A consumer's epoch seed (every rank of to_torch(rank=, world_size=) runs this plan and must
        # cut the same permutation: ranks once shuffled apart, and their shares overlapped).
        fixed = seed if seed is not None else getattr(ctx, EPOCH_SEED_ATTR, None)
        this_seed = _fresh_seed() if fixed is None else int(fixed)
        n_out = exchange.num_partitions(metas, num_blocks)
        return run_exchange(_shuffle_map, (n_out, this_seed), _shuffle_reduce, (this_seed,), refs, metas, n_out, ctx)

    return run


# ------------------------------------------------------------------ repartition without shuffle


@ray.remote(num_returns=2)
def _concat_slices(spans: list[tuple[int, int]], *blocks: Block) -> tuple[Block, BlockMetadata]:
    parts = [b.slice(start, length) for b, (start, length) in zip(blocks, spans)]
    out = compact(concat_blocks(parts))
    return out, BlockMetadata.of(out)


def row_spans(metas: list[BlockMetadata], start: int, stop: int) -> list[tuple[int, int, int]]:
    """``(block index, offset, length)`` covering global rows ``start..stop`` of the blocks."""
    spans = []
    offset = 0
    for i, m in enumerate(metas):
        lo, hi = max(start, offset), min(stop, offset + m.num_rows)
        if lo < hi:
            spans.append((i, lo - offset, hi - lo))
        offset += m.num_rows
        if offset >= stop:
            break
    return spans


def repartition_fn(num_blocks: int, rows_per_block: int | None = None) -> Any:
    """The ``AllToAll`` function of ``repartition(n, shuffle=False)``: rows keep their order.

    ``rows_per_block``: cut every ``rows_per_block`` rows instead of into near-equal parts.
    """

    def run(bundles: list[RefBundle], ctx: DataContext) -> list[RefBundle]:
        refs, metas = exchange.flatten_refs(bundles)
        bundles.clear()
        if not refs:
            return []
        total = sum(m.num_rows for m in metas)
        task = _concat_slices.options(max_retries=ctx.max_task_retries)
        outs = []
        for j in range(num_blocks):
            if rows_per_block is None:
                start, stop = total * j // num_blocks, total * (j + 1) // num_blocks
            else:
                start, stop = min(total, j * rows_per_block), min(total, (j + 1) * rows_per_block)
            spans = row_spans(metas, start, stop) or [(0, 0, 0)]
            outs.append(task.remote([(s, n) for _, s, n in spans], *[refs[i] for i, _, _ in spans]))
        del refs
        out_metas = exchange.get_all([m for _, m in outs], also=[b for b, _ in outs])
        return [RefBundle([b], [m]) for (b, _), m in zip(outs, out_metas)]

    return run


def repartition_rows_fn(rows_per_block: int) -> Any:
    """The ``AllToAll`` function of ``repartition(target_num_rows_per_block=n)``: n-row blocks, order kept."""

    def run(bundles: list[RefBundle], ctx: DataContext) -> list[RefBundle]:
        total = sum(m.num_rows for b in bundles for m in b.metas)
        num_blocks = max(1, -(-total // rows_per_block))
        return repartition_fn(num_blocks, rows_per_block)(bundles, ctx)

    return run


def _key_reduce(pieces: list[Block], index: int, sort_keys: exchange.SortKeys, sort: bool) -> Block:
    block = concat_blocks(pieces)
    return exchange.sort_table(block, sort_keys) if sort and block.num_rows > 1 else compact(block)


def repartition_keys_fn(num_blocks: int, keys: list[str], sort: bool, label: str) -> Any:
    """The ``AllToAll`` function of ``repartition(n, keys=[...])``: exactly ``n`` blocks, equal keys together.

    Ray Data hashes the keys; here the key space is cut into ``n`` ranges at sampled
    boundaries (the exchange ``groupby`` uses), which gives the same promise (every row
    with one key value sits in one block) with balanced blocks.  ``sort`` sorts each
    block by the keys (ascending, nulls last).
    """
    sort_keys: exchange.SortKeys = [(k, "ascending") for k in keys]

    def run(bundles: list[RefBundle], ctx: DataContext) -> list[RefBundle]:
        pieces = exchange.partition_by_keys(bundles, keys, label, ctx, num_blocks, sort=sort)
        return [] if pieces is None else exchange.run_reduce(_key_reduce, pieces, ctx, sort_keys, sort)

    return run


# ------------------------------------------------------------------ random_sample (per block, no exchange)


def random_sample_transform(fraction: float, seed: int | None, context: DataContext | None = None) -> BlockTransform:
    """Keep each row with probability ``fraction`` (seeded per block index when ``seed`` is given).

    Without ``seed``, the epoch seed a consumer fixed on the executing ``context`` (the ranks of
    ``to_torch(rank=, world_size=)``, a resumed epoch) stands in for it: each rank once drew its own
    sample, so the ranks' shares overlapped and differed in size.
    """
    if seed is None and context is not None:
        seed = getattr(context, EPOCH_SEED_ATTR, None)

    def sample(blocks: Iterable[Block], ctx: TaskContext) -> Iterator[Block]:
        rng = np.random.default_rng() if seed is None else _rng(int(seed), ctx.task_index, 2)
        for block in blocks:
            keep = rng.random(block.num_rows) < fraction
            yield block.filter(pa.array(keep))

    return BlockTransform(sample, f"RandomSample({fraction})")
