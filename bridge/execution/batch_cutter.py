"""Cutting a stream of blocks into actor calls of exactly ``batch_size`` rows.

An actor pool sends each actor one :class:`WorkItem` per call: block refs and, when
batching, the ``(offset, length)`` of each block to use.  :class:`BatchCutter`
combines small blocks and cuts large ones on the driver from their metadata alone
(no block is read or copied here; the actor slices zero-copy), so every call but
the last gets exactly ``rows`` rows and batches spread over actors as they stream.
"""

from __future__ import annotations

import collections
import dataclasses
from typing import Any

import ray

from bridge.block import BlockMetadata
from bridge.execution.bundle import RefBundle


@dataclasses.dataclass
class WorkItem:
    """One call's input: block refs, with the (offset, length) of each to use when batching."""

    refs: list[ray.ObjectRef]
    slices: list[tuple[int, int]] | None
    num_rows: int
    size_bytes: int

    @classmethod
    def whole(cls, bundle: RefBundle) -> WorkItem:
        return cls(list(bundle.refs), None, bundle.num_rows, bundle.size_bytes)


class BatchCutter:
    """Rows not yet cut into a call, cut into calls of ``rows`` rows as blocks arrive."""

    def __init__(self, rows: int) -> None:
        self.rows = rows
        #: [block ref, metadata, first unused row] of each block with rows left.
        self._carry: collections.deque[list[Any]] = collections.deque()
        self.carry_rows = 0
        self._empty_seen: tuple[ray.ObjectRef, BlockMetadata] | None = None

    def add(self, bundle: RefBundle) -> list[WorkItem]:
        """Take a bundle's blocks; return the calls that are now full."""
        for ref, meta in zip(bundle.refs, bundle.metas):
            if meta.num_rows == 0:
                self._empty_seen = self._empty_seen or (ref, meta)
                continue
            self._carry.append([ref, meta, 0])
            self.carry_rows += meta.num_rows
        items = []
        while self.carry_rows >= self.rows:
            items.append(self._cut(self.rows))
        return items

    def finish(self, *, keep_schema: bool) -> list[WorkItem]:
        """No more input: the last, shorter call; or, if only empty blocks came and ``keep_schema``,
        one call on an empty block, so the output still has a schema."""
        items = []
        if self.carry_rows:
            items.append(self._cut(self.carry_rows))
        elif self._empty_seen is not None and keep_schema:
            ref, meta = self._empty_seen
            items.append(WorkItem([ref], None, 0, meta.size_bytes))
        self._empty_seen = None
        return items

    def pending_bytes(self) -> int:
        return sum(m.size_bytes * (m.num_rows - off) // max(m.num_rows, 1) for _, m, off in self._carry)

    def clear(self) -> None:
        self._carry.clear()
        self.carry_rows = 0

    def _cut(self, rows: int) -> WorkItem:
        refs, slices, size, need = [], [], 0.0, rows
        while need > 0:
            piece = self._carry[0]
            ref, meta, offset = piece
            take = min(meta.num_rows - offset, need)
            refs.append(ref)
            slices.append((offset, take))
            size += meta.size_bytes * take / meta.num_rows
            need -= take
            if offset + take == meta.num_rows:
                self._carry.popleft()
            else:
                piece[2] = offset + take
        self.carry_rows -= rows
        return WorkItem(refs, slices, rows, int(size))


__all__ = ["BatchCutter", "WorkItem"]
