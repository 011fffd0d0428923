"""Dealing one stream of blocks to ``n`` consumers, optionally in exactly equal shares.

:class:`SplitDispatcher` is the pure bookkeeping behind ``streaming_split``:
each arriving block goes to the consumer with the fewest rows so far, so the
shares never differ by more than one block.  With ``equal=True`` it also holds
back a reserve of at least ``(n - 1) x`` the largest block seen; when the
stream ends the reserve tops every consumer up to the same row count (cutting
blocks where needed).  So every consumer gets the same number of rows, hence
of batches, every epoch, and collective ops (DDP all-reduce) never wait on a
rank that ran out.

When the rows do not divide by ``n`` the remainder is handled the way
``torch.utils.data.DistributedSampler`` does it: by default every consumer gets
``ceil(rows / n)`` rows, the missing ones (``padded_rows``, fewer than ``n``)
repeated from the start of the epoch's stream, wrapping around when the epoch
has fewer rows than that; with ``drop_last=True`` every consumer gets
``rows // n`` and the rest (``dropped_rows``) is dropped.  The dispatcher
keeps the first blocks of the stream (``n - 1`` rows' worth) for the padding.
"""

from __future__ import annotations

import collections
from collections.abc import Callable

from bridge.execution.bundle import RefBundle

#: ``slicer(single_block_bundle, start, length) -> bundle`` (cuts a block in a Ray task).
Slicer = Callable[[RefBundle, int, int], RefBundle]


class SplitDispatcher:
    """Assigns single-block bundles to ``n`` output queues (see the module docstring)."""

    def __init__(self, n: int, equal: bool, slicer: Slicer, drop_last: bool = False) -> None:
        self.n = n
        self.equal = equal
        self.drop_last = drop_last
        self.slicer = slicer
        self.queues: list[collections.deque[RefBundle | None]] = [collections.deque() for _ in range(n)]
        self.assigned = [0] * n
        self.reserve: collections.deque[RefBundle] = collections.deque()
        self.reserve_rows = 0
        self.max_block_rows = 0
        self.dropped_rows = 0
        self.padded_rows = 0
        self.total_rows = 0
        #: The stream's first blocks (at least ``n - 1`` rows, or all): the padding source.
        self.head: list[RefBundle] = []
        self.head_rows = 0
        self.finished = False

    def add(self, bundle: RefBundle) -> None:
        for single in bundle.split_singletons():
            if single.num_rows == 0:
                continue
            self.max_block_rows = max(self.max_block_rows, single.num_rows)
            self.total_rows += single.num_rows
            if self.equal and not self.drop_last and self.head_rows < self.n - 1:
                self.head.append(single)
                self.head_rows += single.num_rows
            if not self.equal:
                self._assign(single)
                continue
            self.reserve.append(single)
            self.reserve_rows += single.num_rows
        self._release()

    def _release(self) -> None:
        needed = (self.n - 1) * self.max_block_rows
        while self.reserve and self.reserve_rows - self.reserve[0].num_rows >= needed:
            head = self.reserve.popleft()
            self.reserve_rows -= head.num_rows
            self._assign(head)

    def _assign(self, single: RefBundle, to: int | None = None) -> None:
        i = min(range(self.n), key=lambda k: self.assigned[k]) if to is None else to
        self.assigned[i] += single.num_rows
        self.queues[i].append(single)

    def finish(self) -> None:
        """The stream ended: share out the reserve (padding or dropping) and mark every queue's end (``None``)."""
        if self.equal and self.total_rows:
            total = self.total_rows
            target = total // self.n if self.drop_last else -(-total // self.n)
            self.padded_rows = self.n * target - total if not self.drop_last else 0
            pieces = collections.deque(self.reserve)
            pieces.extend(self._padding(self.padded_rows))
            self.reserve.clear()
            for i in range(self.n):
                want = target - self.assigned[i]
                while want > 0 and pieces:
                    head = pieces.popleft()
                    if head.num_rows <= want:
                        self._assign(head, i)
                        want -= head.num_rows
                        continue
                    self._assign(self.slicer(head, 0, want), i)
                    pieces.appendleft(self.slicer(head, want, head.num_rows - want))
                    want = 0
            self.dropped_rows = sum(p.num_rows for p in pieces)
            self.reserve_rows = 0
        self.head = []
        for q in self.queues:
            q.append(None)
        self.finished = True

    def _padding(self, rows: int) -> list[RefBundle]:
        """``rows`` rows from the start of the stream, wrapping around (the head holds them all if fewer)."""
        out: list[RefBundle] = []
        while rows > 0:
            for single in self.head:
                take = min(single.num_rows, rows)
                out.append(single if take == single.num_rows else self.slicer(single, 0, take))
                rows -= take
                if rows == 0:
                    break
        return out

    def queued(self, i: int) -> int:
        return sum(1 for b in self.queues[i] if b is not None)
