"""Convert a block once, then cut batches out of the converted columns.

Formatting a batch (Arrow -> NumPy -> torch, say) costs microseconds per
column whatever the batch size, while slicing an ndarray or a tensor that
already exists costs about one.  So the training-ingest path, on the
iterator's background thread (:func:`batch_chunks`), cuts the blocks at batch
boundaries exactly like :func:`bridge.execution.transform.rebatch` (a batch
that straddles two blocks is concatenated in Arrow, as before), converts each
*run* of whole batches -- at most ``MAX_BATCHES_PER_RUN`` of them -- once with
:attr:`BlockFormat.to_columns`, and slices the result into batches
(``{column: value[i:i + batch_size]}``).  The run's batches cross to the
consumer's thread as one list: one hand-off, one GIL switch, per run rather
than per batch, which matters because both threads compete for the GIL.

A column value is anything that slices along the rows with ``value[a:b]``:
an ``ndarray``, a ``torch.Tensor``, a Python list.  Batches share memory with
the run they were cut from, as they shared it with the Arrow block before.

Example:
    >>> import pyarrow as pa
    >>> from bridge.batch import to_numpy_batch
    >>> chunks = batch_chunks(iter([pa.table({"x": list(range(5))})]), 2, False, BlockFormat(to_numpy_batch))
    >>> [b["x"].tolist() for chunk in chunks for _, b in chunk]
    [[0, 1], [2, 3], [4]]
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import pyarrow as pa

from bridge.block import Block, concat_blocks, tail

#: Upper bound on the batches converted in one go: bounds the memory a run of
#: converted columns holds (strings become Python objects) and the delay before
#: the first batch of a very large block.
MAX_BATCHES_PER_RUN = 16


class BlockFormat:
    """A batch format whose conversion runs once per block run, not once per batch.

    Args:
        to_columns: Arrow table -> ``{column: sliceable value}`` (background thread).
        finish: ``{column: value}`` of one batch -> the batch handed to the user
            (packing, a collate function). ``None``: the dict itself.
        split: ``(value, rows per batch)`` -> the batches' pieces of one column, for
            values that split faster than they slice (``torch.Tensor.split``);
            ``None``: ``value[a:b]`` for each batch.
        per_batch_if: table -> whether that run must be converted batch by batch
            instead (still on the background thread), for formats whose output
            depends on the batch's content, e.g. NumPy's object arrays for nulls.
        handoff: batch -> batch, run on the *consumer's* thread as each batch is
            handed out (the torch exporter orders device copies against the
            consumer's CUDA stream there). ``None``: nothing to do.

    Calling the object formats one table directly: ``finish(to_columns(table))``.
    """

    def __init__(self, to_columns: Callable[[Block], dict[str, Any]],
                 finish: Callable[[dict[str, Any]], Any] | None = None,
                 per_batch_if: Callable[[Block], bool] | None = None,
                 split: Callable[[Any, int], Sequence[Any]] | None = None,
                 handoff: Callable[[Any], Any] | None = None) -> None:
        self.to_columns = to_columns
        self.handoff = handoff
        self.finish = finish
        self.per_batch_if = per_batch_if
        self.split = split

    def __call__(self, block: Block) -> Any:
        cols = self.to_columns(block)
        return cols if self.finish is None else self.finish(cols)


def batch_chunks(blocks: Iterable[Block], batch_size: int | None, drop_last: bool, fmt: BlockFormat,
                 stats: Any = None) -> Iterator[list[tuple[int, Any]]]:
    """Lists of ``(rows, batch)``: each run of batches converted once and sliced (see the module docstring).

    The batches are the ones :func:`~bridge.execution.transform.rebatch` makes:
    ``batch_size`` rows each, the last one shorter (dropped if ``drop_last``);
    ``batch_size=None`` makes each block one batch.
    """
    to_columns, finish, per_batch_if, split = fmt.to_columns, fmt.finish, fmt.per_batch_if, fmt.split

    def convert(table: Block, per_batch: int) -> list[tuple[int, Any]]:
        t0 = time.perf_counter()
        rows = table.num_rows
        if rows <= per_batch:
            parts = [(rows, to_columns(table))]
        elif per_batch_if is not None and per_batch_if(table):
            parts = [(per_batch, to_columns(table.slice(s, per_batch))) for s in range(0, rows, per_batch)]
        else:
            cols = to_columns(table)
            starts = range(0, rows, per_batch)
            if not cols:
                parts = [(per_batch, {}) for _ in starts]
            else:
                pieces = [split(v, per_batch) if split is not None else [v[s:s + per_batch] for s in starts]
                          for v in cols.values()]
                parts = [(per_batch, dict(zip(cols, p))) for p in zip(*pieces)]
        if finish is not None:
            parts = [(n, finish(cols)) for n, cols in parts]
        if stats is not None:
            stats.iter_format_s += time.perf_counter() - t0
        return parts

    if batch_size is None:
        for b in blocks:
            if b.num_rows:
                yield convert(b, b.num_rows)
        return
    run_rows = batch_size * MAX_BATCHES_PER_RUN
    pending: list[Block] = []
    have = 0
    for b in (piece for block in blocks for piece in contiguous_pieces(block, batch_size)):
        n = b.num_rows
        if not n:
            continue
        start = 0
        if have:
            need = batch_size - have
            if n < need:
                pending.append(b)
                have += n
                continue
            yield convert(concat_blocks([*pending, b.slice(0, need)]), batch_size)
            pending, have, start = [], 0, need
        full_end = start + (n - start) // batch_size * batch_size
        for s in range(start, full_end, run_rows):
            yield convert(b.slice(s, min(run_rows, full_end - s)), batch_size)
        if full_end < n:
            pending, have = [tail(b, full_end)], n - full_end
    if have and not drop_last:
        yield convert(concat_blocks(pending), have)


def contiguous_pieces(block: Block, batch_size: int) -> list[Block]:
    """``block`` as tables whose every column is one contiguous chunk, where that is worth it.

    A column of several chunks (a Parquet read hands out 131,072-row record
    batches; a concatenation keeps its inputs' chunks) becomes one array only
    by copying it: a run of batches cut across a chunk edge copied the whole
    run (``read_parquet`` -> ``iter_batches``: every byte once more).  Cut at
    the block's record batches instead (zero-copy), only the batches that
    straddle an edge are concatenated, as between two blocks.  A block whose
    chunks are mostly shorter than a batch stays whole: nearly every batch
    would straddle, and one concatenation per run is the cheaper copy.
    """
    if block.num_columns == 0 or all(c.num_chunks <= 1 for c in block.columns):
        return [block]
    pieces = block.to_batches()
    if len(pieces) <= 1 or block.num_rows < len(pieces) * batch_size:
        return [block]
    return [pa.Table.from_batches([rb], block.schema) for rb in pieces]
