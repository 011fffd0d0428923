"""RefBundle: block references travelling between operators, with their metadata."""

from __future__ import annotations

import dataclasses
from typing import Any

import ray

from bridge.block import BlockMetadata


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
