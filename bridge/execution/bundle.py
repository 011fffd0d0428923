"""RefBundle: block references travelling between operators, with their metadata."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

import pyarrow as pa
import ray

from bridge.block import Block, BlockMetadata, compact


@dataclasses.dataclass
class RefBundle:
    """One or more blocks in the object store, in order.

    ``refs[i]`` holds a ``pyarrow.Table`` described by ``metas[i]``.  The driver
    (or the owner actor) owns every ref, so the blocks outlive the tasks and
    engines that produced them.
    """

    refs: list[ray.ObjectRef]
    metas: list[BlockMetadata]

    @property
    def num_rows(self) -> int:
        return sum(m.num_rows for m in self.metas)

    @property
    def size_bytes(self) -> int:
        return sum(m.size_bytes for m in self.metas)

    @property
    def schema(self) -> Any:
        for m in self.metas:
            if m.schema is not None and (m.num_rows or len(m.schema)):
                return m.schema
        return self.metas[0].schema if self.metas else None

    @classmethod
    def merge(cls, bundles: list[RefBundle]) -> RefBundle:
        return cls([r for b in bundles for r in b.refs], [m for b in bundles for m in b.metas])

    def split_singletons(self) -> list[RefBundle]:
        return [RefBundle([r], [m]) for r, m in zip(self.refs, self.metas)]


@ray.remote(num_returns=2)
def slice_block(block: Block, start: int, length: int) -> tuple[Block, BlockMetadata]:
    """A task: rows ``[start, start + length)`` of a block as a block of its own, copied into buffers of
    its own where it was a slice (:func:`bridge.block.compact`), and its metadata."""
    out = compact(block.slice(start, length))
    return out, BlockMetadata.of(out)


def first_schema(metas: Iterable[BlockMetadata]) -> pa.Schema | None:
    """The schema of the first block with rows, else of the first block that has one."""
    fallback = None
    for m in metas:
        if m.schema is not None:
            if m.num_rows:
                return m.schema
            fallback = fallback or m.schema
    return fallback


class ReadyBundles:
    """An iterator over bundles whose blocks all exist (a materialized dataset's), with ``take_ready``.

    ``take_ready(max_bundles, max_bytes)`` hands out the next bundles that are
    already done without waiting for more, as the streaming executor's output
    does: the iterators fetch such a group of blocks in one ``ray.get``
    (``bridge/iteration/batch_iterator.blocks_from_bundles``).
    """

    def __init__(self, bundles: Iterable[RefBundle]) -> None:
        self._bundles = list(bundles)
        self._next = 0

    def __iter__(self) -> ReadyBundles:
        return self

    def __next__(self) -> RefBundle:
        if self._next >= len(self._bundles):
            raise StopIteration
        self._next += 1
        return self._bundles[self._next - 1]

    def take_ready(self, max_bundles: int, max_bytes: int) -> list[RefBundle]:
        taken: list[RefBundle] = []
        size = 0
        while self._next < len(self._bundles) and len(taken) < max_bundles:
            bundle = self._bundles[self._next]
            if taken and size + bundle.size_bytes > max_bytes:
                break
            taken.append(bundle)
            size += bundle.size_bytes
            self._next += 1
        return taken


@dataclasses.dataclass
class BlockLayout:
    """A materialized Dataset's blocks as an adapter needs them: ``Dataset.block_layout()``.

    ``blocks`` are the non-empty blocks as ``(ref, rows)`` in order and ``starts``
    each one's first row in the Dataset; ``schema`` is the first non-empty
    block's (an empty Dataset keeps its schema); ``index_columns`` the pandas
    index columns the schema's pandas metadata names.
    """

    schema: pa.Schema
    blocks: list[tuple[ray.ObjectRef, int]]
    starts: list[int]
    num_rows: int
    #: The blocks of no rows (what an empty Dataset still says of its dictionaries' values).
    empty: list[ray.ObjectRef] = dataclasses.field(default_factory=list)
    #: Whether every non-empty block has ``schema``'s types (blocks a function made may differ: int64 and
    #: float64), so that what ``schema`` says of a column holds for every block.
    one_schema: bool = True

    @classmethod
    def of(cls, bundles: Iterable[RefBundle]) -> BlockLayout:
        metas: list[BlockMetadata] = []
        refs: list[ray.ObjectRef] = []
        for b in bundles:
            refs.extend(b.refs)
            metas.extend(b.metas)
        blocks = [(r, m.num_rows) for r, m in zip(refs, metas) if m.num_rows]
        starts, total = [], 0
        for _, n in blocks:
            starts.append(total)
            total += n
        empty = [r for r, m in zip(refs, metas) if not m.num_rows]
        first = first_schema(metas)
        same = first is None or all(m.schema is None or m.schema.equals(first) for m in metas if m.num_rows)
        return cls(first or pa.schema([]), blocks, starts, total, empty, same)

    @property
    def index_columns(self) -> list[str]:
        meta = self.schema.pandas_metadata or {}
        return [c for c in meta.get("index_columns", []) if isinstance(c, str)]

    @property
    def refs(self) -> list[ray.ObjectRef]:
        return [r for r, _ in self.blocks]
