"""Convert a block once, then cut batches out of the converted columns.

Formatting a batch (Arrow -> NumPy -> torch, say) costs tens of microseconds
per column whatever the batch size, while slicing an ndarray or a tensor that
already exists costs well under one.  So the training-ingest path converts
each *run* of whole batches inside a block in one go on the background
thread, and the consumer's thread only slices the run into batches:

* background thread (:func:`column_runs`): fetch blocks, cut them at batch
  boundaries exactly like :func:`bridge.execution.transform.rebatch` (a batch
  that straddles two blocks is concatenated in Arrow, as before), and convert
  each run of full batches -- at most ``MAX_BATCHES_PER_RUN`` of them -- with
  :attr:`BlockFormat.to_columns`;
* consumer thread (:func:`slice_runs`): ``{column: value[i:i + batch_size]}``
  for each batch of the run, then :attr:`BlockFormat.finish` (cheap packing).

A column value is anything that slices along the rows with ``value[a:b]``:
an ``ndarray``, a ``torch.Tensor``, a Python list.  Batches share memory with
the run they were cut from, as they shared it with the Arrow block before.

Example:
    >>> import pyarrow as pa
    >>> from bridge.batch import to_numpy_batch
    >>> fmt = BlockFormat(to_numpy_batch)
    >>> runs = column_runs(iter([pa.table({"x": list(range(5))})]), 2, False, fmt.to_columns)
    >>> [b["x"].tolist() for _, b in slice_runs(runs, fmt.finish)]
    [[0, 1], [2, 3], [4]]
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from bridge.block import Block, concat_blocks

#: Upper bound on the batches converted in one go: bounds the memory a run of
#: converted columns holds (strings become Python objects) and the delay before
#: the first batch of a very large block.
MAX_BATCHES_PER_RUN = 16

#: One converted run: (columns, rows in the run, rows per batch); the columns
#: are a list of per-batch column dicts where the run was converted batch by batch.
Run = tuple[Any, int, int]


class BlockFormat:
    """A batch format whose conversion runs once per block run, not once per batch.

    Args:
        to_columns: Arrow table -> ``{column: sliceable value}`` (background thread).
        finish: ``{column: value}`` of one batch -> the batch handed to the user
            (consumer thread; keep it to packing, no per-row work). ``None``: the dict itself.
        per_batch_if: table -> whether that run must be converted batch by batch
            instead (still on the background thread), for formats whose output
            depends on the batch's content, e.g. NumPy's object arrays for nulls.

    Calling the object formats one table directly: ``finish(to_columns(table))``.
    """

    def __init__(self, to_columns: Callable[[Block], dict[str, Any]],
                 finish: Callable[[dict[str, Any]], Any] | None = None,
                 per_batch_if: Callable[[Block], bool] | None = None) -> None:
        self.to_columns = to_columns
        self.finish = finish
        self.per_batch_if = per_batch_if

    def __call__(self, block: Block) -> Any:
        cols = self.to_columns(block)
        return cols if self.finish is None else self.finish(cols)


def column_runs(blocks: Iterable[Block], batch_size: int | None, drop_last: bool,
                to_columns: Callable[[Block], dict[str, Any]], stats: Any = None,
                per_batch_if: Callable[[Block], bool] | None = None) -> Iterator[Run]:
    """Cut ``blocks`` at batch boundaries and convert each run of batches (see the module docstring).

    The batches are the ones :func:`~bridge.execution.transform.rebatch` makes:
    ``batch_size`` rows each, the last one shorter (dropped if ``drop_last``);
    ``batch_size=None`` makes each block one batch.
    """

    def convert(table: Block, per_batch: int) -> Run:
        t0 = time.perf_counter()
        rows = table.num_rows
        if rows > per_batch and per_batch_if is not None and per_batch_if(table):
            cols: Any = [to_columns(table.slice(s, per_batch)) for s in range(0, rows, per_batch)]
        else:
            cols = to_columns(table)
        if stats is not None:
            stats.iter_format_s += time.perf_counter() - t0
        return cols, rows, per_batch

    if batch_size is None:
        for b in blocks:
            if b.num_rows:
                yield convert(b, b.num_rows)
        return
    run_rows = batch_size * MAX_BATCHES_PER_RUN
    pending: list[Block] = []
    have = 0
    for b in blocks:
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
            pending, have = [b.slice(full_end)], n - full_end
    if have and not drop_last:
        yield convert(concat_blocks(pending), have)


def slice_runs(runs: Iterable[Run], finish: Callable[[dict[str, Any]], Any] | None
               ) -> Iterator[tuple[int, Any]]:
    """``(rows, batch)`` for every batch of every run: slices of the converted columns."""
    for cols, rows, per_batch in runs:
        if type(cols) is list:
            for batch in cols:
                yield per_batch, (batch if finish is None else finish(batch))
            continue
        if rows <= per_batch:
            yield rows, (cols if finish is None else finish(cols))
            continue
        items = list(cols.items())
        for s in range(0, rows, per_batch):
            e = s + per_batch
            batch = {k: v[s:e] for k, v in items}
            yield per_batch, (batch if finish is None else finish(batch))
