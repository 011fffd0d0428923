"""Turning a stream of block references into batches for a consumer.

Blocks are fetched and cut into batches (zero-copy slices; a batch that spans
two blocks is concatenated) and formatted on a background thread, at most
``prefetch_batches`` ahead, so that a training step overlaps with the next
batch being prepared -- or, while the consumer's loop does too little for that
overlap to pay, on the consumer's thread when it asks (:func:`_background`).
An optional local shuffle buffer mixes rows across blocks before batching.
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np
import pyarrow as pa

from bridge import batch as batch_mod
from bridge.block import Block, concat_blocks, tail, take_rows
from bridge.execution.bundle import RefBundle
from bridge.execution.lineage import get_blocks
from bridge.execution.stats import DatasetStats
from bridge.execution.transform import rebatch
from bridge.iteration.block_format import BlockFormat, batch_chunks
from bridge.iteration.options import BatchOptions

_END = object()


#: At most this many blocks, and this many bytes (or one block), are fetched in one ``ray.get``.
FETCH_GROUP_BLOCKS = 8
FETCH_GROUP_BYTES = 128 * 1024**2


def blocks_from_bundles(bundles: Iterable[RefBundle], skip_rows: int = 0) -> Iterator[Block]:
    """Fetch the blocks of ``bundles`` in order, dropping the first ``skip_rows`` rows.

    Blocks that lie wholly inside the skipped prefix are never fetched: their
    row counts come from the metadata.  Where ``bundles`` can hand out the
    bundles that are already done without waiting (``take_ready``: the
    streaming executor's output, a materialized dataset), those are fetched
    together with the next one, up to ``FETCH_GROUP_BLOCKS`` blocks and
    ``FETCH_GROUP_BYTES``: each ``ray.get`` call has a fixed cost beyond its
    objects' deserialisation, which a group of a few blocks shares (benchmark
    ``torch_ingest``).  Nothing waits for a block that is not done yet.  A stream with
    ``iter_blocks`` (a read in this process) hands out its blocks directly.
    """
    local_blocks: Callable[[], Iterator[Block]] | None = getattr(bundles, "iter_blocks", None)
    if local_blocks is not None:
        # A read running in this process (bridge.execution.driver_read): its blocks, no refs.
        yield from skip_leading_rows(local_blocks(), skip_rows)
        return
    take_ready: Callable[[int, int], list[RefBundle]] | None = getattr(bundles, "take_ready", None)
    for first in bundles:
        group = [first]
        if take_ready is not None and len(first.refs) < FETCH_GROUP_BLOCKS:
            group += take_ready(FETCH_GROUP_BLOCKS - len(first.refs), FETCH_GROUP_BYTES - first.size_bytes)
        refs = []
        first_offset = 0  # rows to drop from the first block fetched
        for bundle in group:
            for ref, meta in zip(bundle.refs, bundle.metas):
                if skip_rows and skip_rows >= meta.num_rows:
                    skip_rows -= meta.num_rows
                    continue
                if skip_rows:
                    first_offset, skip_rows = skip_rows, 0
                refs.append(ref)
        if not refs:
            continue
        blocks = get_blocks(refs)  # a lost block raises BlockLostError naming its source
        if first_offset:
            blocks[0] = tail(blocks[0], first_offset)
        for b in blocks:
            if b.num_rows:
                yield b


def first_rows(blocks: Iterable[Block], n: int) -> Iterator[Block]:
    """The first ``n`` rows of a block stream; stops pulling blocks once they are out."""
    if n <= 0:
        return
    for b in blocks:
        if b.num_rows >= n:
            yield b.slice(0, n)
            return
        n -= b.num_rows
        yield b


def skip_leading_rows(blocks: Iterable[Block], skip_rows: int) -> Iterator[Block]:
    """Drop the first ``skip_rows`` rows of a block stream (zero-copy slices)."""
    for b in blocks:
        if skip_rows >= b.num_rows:
            skip_rows -= b.num_rows
            continue
        if skip_rows:
            b, skip_rows = tail(b, skip_rows), 0
        yield b


def shuffle_blocks(blocks: Iterable[Block], buffer_size: int, batch_size: int | None, seed: int | None
                   ) -> Iterator[Block]:
    """Mix rows across blocks: hold ``buffer_size`` rows, emit random ones.

    The buffer is shuffled as a whole (one ``take``), then emptied down to half
    before refilling, so each row is copied about twice.
    """
    rng = np.random.default_rng(seed)
    pending: list[Block] = []
    have = 0
    chunk = max(batch_size or 1, buffer_size // 2, 1)
    for b in blocks:
        pending.append(b)
        have += b.num_rows
        if have >= buffer_size + chunk:
            merged = concat_blocks(pending)
            merged = take_rows(merged, _permutation(rng, merged.num_rows))
            emit = have - buffer_size // 2
            yield merged.slice(0, emit)
            rest = tail(merged, emit)
            pending, have = [rest], rest.num_rows
    if have:
        merged = concat_blocks(pending)
        yield take_rows(merged, _permutation(rng, merged.num_rows))


def _permutation(rng: np.random.Generator, n: int) -> pa.Array:
    """A random order of ``n`` rows as Arrow indices, built from the NumPy buffer: ``pa.array`` would import
    pandas on its first call in a process, and two split readers' threads importing it at once died with
    Python's ``_DeadlockError`` (pandas' modules import each other)."""
    from bridge.tensor import numeric_array

    order = numeric_array(rng.permutation(n))
    assert order is not None  # (an int64 vector always converts)
    return order


def iter_batches(
    bundles: Iterable[RefBundle],
    options: BatchOptions,
    *,
    formatter: Callable[[Block], Any] | None = None,
    stats: DatasetStats | None = None,
    skip_rows: int = 0,
) -> Iterator[Any]:
    """Batches from ``bundles`` as ``options`` say, in its ``batch_format`` (or through ``formatter``).

    ``skip_rows`` drops that many leading rows of the (shuffled, if asked) row
    stream first: how a resumed iterator continues mid-epoch.
    """
    for _, out in iter_counted_batches(bundles, options, formatter=formatter, stats=stats, skip_rows=skip_rows):
        yield out


def iter_counted_batches(
    bundles: Iterable[RefBundle],
    options: BatchOptions,
    *,
    formatter: Callable[[Block], Any] | None = None,
    stats: DatasetStats | None = None,
    skip_rows: int = 0,
    stop_row: int | None = None,
) -> Iterator[tuple[int, Any]]:
    """Like :func:`iter_batches`, yielding ``(rows in the batch, batch)``.

    ``stop_row`` ends the row stream at that position (counted before ``skip_rows``).  A pass whose
    ``drop_last`` dropped every row it had (fewer than one batch) warns: a training loop would run no step.
    """
    brought = [0]
    handed = 0
    for item in _counted_batches(bundles, options, formatter, stats, skip_rows, stop_row, brought):
        handed += 1
        yield item
    if options.drop_last and not handed and brought[0]:
        import warnings

        # (Also where the pass is a rank's share or a resumed epoch's rest: no batch came either way.)
        warnings.warn(f"drop_last=True with batch_size={options.batch_size}: all {brought[0]} rows of this pass "
                      f"were dropped (fewer than one batch), so no batch came; pass a smaller batch_size, or "
                      f"drop_last=False to get them as one short batch", UserWarning, stacklevel=3)


def _counted_batches(bundles: Iterable[RefBundle], options: BatchOptions, formatter: Callable[[Block], Any] | None,
                     stats: DatasetStats | None, skip_rows: int, stop_row: int | None, brought: list[int],
                     ) -> Iterator[tuple[int, Any]]:
    batch_size, drop_last, prefetch_batches = options.batch_size, options.drop_last, options.prefetch_batches
    shuffle_buffer, shuffle_seed = options.local_shuffle_buffer_size, options.local_shuffle_seed
    fmt = batch_mod.normalize_format(options.batch_format) if formatter is None else None
    block_format = formatter if isinstance(formatter, BlockFormat) else None
    # Run on this (the consumer's) thread for each batch handed out, e.g. CUDA stream ordering.
    handoff: Callable[[Any], Any] | None = getattr(formatter, "handoff", None)
    if formatter is None and fmt == "numpy":
        block_format = BlockFormat(batch_mod.to_numpy_batch, per_batch_if=_has_nulls)

    def row_stream() -> Iterator[Block]:
        if shuffle_buffer:
            blocks = blocks_from_bundles(bundles)
            blocks = shuffle_blocks(blocks, shuffle_buffer, batch_size, shuffle_seed)
            if stop_row is not None:
                blocks = first_rows(blocks, stop_row)
            blocks = skip_leading_rows(blocks, skip_rows)
        else:
            blocks = blocks_from_bundles(bundles, skip_rows)
            if stop_row is not None:
                blocks = first_rows(blocks, max(stop_row - skip_rows, 0))
        return _counting(blocks, brought) if drop_last else blocks

    if block_format is not None:
        # Runs of batches converted once and sliced on the background thread; one hand-off per run.
        chunks = batch_chunks(row_stream(), batch_size, drop_last, block_format, stats)
        if prefetch_batches > 0:
            chunks = _background(chunks, prefetch_batches, weight=len)
        for chunk in chunks:
            if handoff is None:
                yield from chunk
            else:
                for rows, batch in chunk:
                    yield rows, handoff(batch)
        return

    def produce() -> Iterator[tuple[int, Any]]:
        for b in rebatch(row_stream(), batch_size):
            if drop_last and batch_size is not None and b.num_rows < batch_size:
                continue
            if b.num_rows == 0:
                continue
            t0 = time.perf_counter()
            out = formatter(b) if formatter is not None else batch_mod.to_batch(b, fmt or "numpy")
            if stats is not None:
                stats.iter_format_s += time.perf_counter() - t0
            yield b.num_rows, out

    batches = produce() if prefetch_batches <= 0 else _background(produce(), prefetch_batches)
    if handoff is None:
        yield from batches
        return
    for rows, batch in batches:
        yield rows, handoff(batch)


def _counting(blocks: Iterable[Block], rows: list[int]) -> Iterator[Block]:
    for b in blocks:
        rows[0] += b.num_rows
        yield b


def _has_nulls(table: Block) -> bool:
    # NumPy batches of a column with nulls are object arrays, of one without them
    # numeric: converting batch by batch keeps each batch's dtype what it was.  A list
    # column's rows are object arrays where a null lies inside some row: those count too.
    return any(col.null_count or batch_mod.inner_nulls(col) for col in table.columns)


#: The consumer's own time over the last ``_WINDOW`` items (its loop body) above this share of the
#: time it took to produce them: produce on the background thread; below ``_INLINE_BELOW``: on the
#: consumer's thread, when it asks. Between the two the current way stays (no flapping).
_THREAD_ABOVE = 0.5
_INLINE_BELOW = 0.2
_WINDOW = 16


def _background(gen: Iterator[Any], depth: int, weight: Callable[[Any], int] | None = None) -> Iterator[Any]:
    """Produce ``gen`` ahead of the consumer on a thread, at most ``depth`` items ahead, while that pays.

    A thread overlaps producing the next item with the consumer's own work on
    the last one, and costs a hand-off per item: the two threads pass the GIL
    and wake each other.  With a consumer that does little between items (a
    loop that only reads each batch) the overlap is nothing and the hand-offs
    are all that is left.  So the consumer's own time and the time spent
    producing are summed over the last ``_WINDOW`` items: the items are
    produced on the consumer's thread, when it asks for one, until its own
    time exceeds ``_THREAD_ABOVE`` of the production time; then the thread
    takes over, and hands back when the consumer's time falls below
    ``_INLINE_BELOW`` of it.  The first item is produced on the consumer's
    thread.  Either way the items and their order are ``gen``'s: one lock
    makes whoever produces the only one inside ``gen``, and the thread queues
    what it made before letting go of it.

    With ``weight``, an item counts as ``weight(item)`` items (a list of batches
    as its length); one item is always let through so that a heavy item
    cannot block the producer for good.
    """
    items: collections.deque[Any] = collections.deque()
    cond = threading.Condition()
    gen_lock = threading.Lock()  # held by whoever is inside ``gen``
    queued = [0]  # total weight waiting in ``items``
    stop = threading.Event()
    threaded = [False]  # the background thread produces (else the consumer does, on demand)
    finished = [False]  # ``gen`` ended (or raised); its end is in ``items`` or was handed out
    produce_s: collections.deque[float] = collections.deque(maxlen=_WINDOW)
    consume_s: collections.deque[float] = collections.deque(maxlen=_WINDOW)
    thread: threading.Thread | None = None

    def hand_over(item: Any, w: int) -> None:
        with cond:
            items.append((item, w))
            queued[0] += w
            cond.notify_all()

    def produce_one() -> Any:
        """The next item of ``gen``, ``_END`` after its last (called holding ``gen_lock``)."""
        t0 = time.perf_counter()
        try:
            item = next(gen)
        except StopIteration:
            finished[0] = True
            return _END
        except BaseException:
            finished[0] = True
            raise
        produce_s.append(time.perf_counter() - t0)
        return item

    def work() -> None:
        try:
            while True:
                with cond:
                    while not stop.is_set() and not threaded[0]:
                        cond.wait(0.1)
                if stop.is_set():
                    break
                with gen_lock:
                    if finished[0]:
                        break
                    try:
                        item = produce_one()
                        w = weight(item) if weight is not None and item is not _END else 1
                    except BaseException as err:  # noqa: BLE001 - queued before the lock is let go
                        finished[0] = True
                        hand_over(err, 0)
                        break
                    if item is _END:
                        hand_over(_END, 0)
                        break
                    with cond:
                        while queued[0] and queued[0] + w > depth and not stop.is_set():
                            cond.wait(0.1)
                    if stop.is_set():
                        break
                    hand_over(item, w)
        except BaseException as err:  # noqa: BLE001 - handed to the consumer
            finished[0] = True
            hand_over(err, 0)
        finally:
            close = getattr(gen, "close", None)
            if close is not None and stop.is_set():
                try:
                    close()
                except Exception:  # noqa: BLE001
                    pass

    def next_item() -> Any:
        while True:
            with cond:
                if items or threaded[0]:
                    while not items:
                        cond.wait()
                    item, w = items.popleft()
                    queued[0] -= w
                    cond.notify_all()
                    return item
            with gen_lock:  # the thread may still be finishing an item it started
                if items:
                    continue
                return _END if finished[0] else produce_one()

    try:
        while True:
            item = next_item()
            if item is _END:
                return
            if isinstance(item, BaseException):
                raise item
            handed = time.perf_counter()
            yield item
            consume_s.append(time.perf_counter() - handed)
            if not produce_s:
                continue
            ratio = sum(consume_s) / max(sum(produce_s), 1e-9)
            if not threaded[0] and ratio > _THREAD_ABOVE:
                with cond:
                    threaded[0] = True
                    cond.notify_all()
                if thread is None:
                    started = threading.Thread(target=work, name="raybridge-batcher", daemon=True)
                    started.start()
                    thread = started
            elif threaded[0] and ratio < _INLINE_BELOW:
                with cond:
                    threaded[0] = False
    finally:
        stop.set()
        with cond:
            items.clear()
            queued[0] = 0
            cond.notify_all()
        if thread is not None:
            thread.join(timeout=5)
        else:
            close = getattr(gen, "close", None)
            if close is not None:
                close()
