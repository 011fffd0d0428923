"""Turning a stream of block references into batches for a consumer.

Blocks are fetched and cut into batches (zero-copy slices; a batch that spans
two blocks is concatenated) and formatted on a background thread, at most
``prefetch_batches`` ahead, so that a training step overlaps with the next
batch being prepared.  An optional local shuffle buffer mixes rows across
blocks before batching.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import ray

from bridge import batch as batch_mod
from bridge.block import Block, concat_blocks
from bridge.execution.bundle import RefBundle
from bridge.execution.stats import DatasetStats
from bridge.execution.transform import rebatch

_END = object()


def blocks_from_bundles(bundles: Iterable[RefBundle]) -> Iterator[Block]:
    for bundle in bundles:
        blocks = ray.get(bundle.refs) if len(bundle.refs) > 1 else [ray.get(bundle.refs[0])]
        for b in blocks:
            if b.num_rows:
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
            merged = merged.take(pa.array(rng.permutation(merged.num_rows)))
            emit = have - buffer_size // 2
            yield merged.slice(0, emit)
            rest = merged.slice(emit)
            pending, have = [rest], rest.num_rows
    if have:
        merged = concat_blocks(pending)
        yield merged.take(pa.array(rng.permutation(merged.num_rows)))


def iter_batches(
    bundles: Iterable[RefBundle],
    *,
    batch_size: int | None,
    batch_format: str,
    prefetch_batches: int,
    drop_last: bool,
    local_shuffle_buffer_size: int | None = None,
    local_shuffle_seed: int | None = None,
    formatter: Callable[[Block], Any] | None = None,
    stats: DatasetStats | None = None,
) -> Iterator[Any]:
    """Batches of ``batch_size`` rows from ``bundles`` in ``batch_format`` (or through ``formatter``)."""
    fmt = batch_mod.normalize_format(batch_format) if formatter is None else None
    if batch_size is not None and batch_size < 1:
        from bridge.errors import BridgeError

        msg = f"batch_size must be a positive number of rows or None; got {batch_size}"
        raise BridgeError(msg, "pass batch_size=None to get whole blocks")

    def produce() -> Iterator[Any]:
        blocks = blocks_from_bundles(bundles)
        if local_shuffle_buffer_size:
            blocks = shuffle_blocks(blocks, local_shuffle_buffer_size, batch_size, local_shuffle_seed)
        for b in rebatch(blocks, batch_size):
            if drop_last and batch_size is not None and b.num_rows < batch_size:
                continue
            if b.num_rows == 0:
                continue
            t0 = time.perf_counter()
            out = formatter(b) if formatter is not None else batch_mod.to_batch(b, fmt or "numpy")
            if stats is not None:
                stats.iter_format_s += time.perf_counter() - t0
            yield out

    if prefetch_batches <= 0:
        yield from produce()
        return
    yield from _background(produce(), prefetch_batches)


def _background(gen: Iterator[Any], depth: int) -> Iterator[Any]:
    """Run ``gen`` on a thread, ``depth`` items ahead of the consumer."""
    q: queue.Queue[Any] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def work() -> None:
        try:
            for item in gen:
                while not stop.is_set():
                    try:
                        q.put(item, timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    break
            q.put(_END)
        except BaseException as err:  # noqa: BLE001 - handed to the consumer
            q.put(err)
        finally:
            close = getattr(gen, "close", None)
            if close is not None and stop.is_set():
                try:
                    close()
                except Exception:  # noqa: BLE001
                    pass

    thread = threading.Thread(target=work, name="raybridge-batcher", daemon=True)
    thread.start()
    try:
        while True:
            item = q.get()
            if item is _END:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        # Unblock a producer waiting on a full queue, then let it finish.
        while thread.is_alive():
            try:
                q.get(timeout=0.1)
            except queue.Empty:
                pass
        thread.join(timeout=5)
