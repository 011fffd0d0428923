"""``bridge.from_items``: a Python list (or any iterable) of rows."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from bridge.io.datasource import Datasource, ReadTask, default_num_blocks, meta, split_even


@dataclasses.dataclass
class ItemsDatasource(Datasource):
    items: list[Any]
    override_num_blocks: int | None = None

    name = "FromItems"
    supports_limit = True
    exact_num_rows = True

    def estimate_num_rows(self) -> int:
        return len(self.items)

    def estimate_inmemory_data_size(self) -> int:
        sample = self.items[:100]
        per = sum(sys.getsizeof(x) for x in sample) / max(len(sample), 1)
        return int(per * len(self.items))

    def with_limit(self, limit: int) -> ItemsDatasource:
        return dataclasses.replace(self, items=self.items[:limit])

    def get_read_tasks(self, parallelism: int) -> list[ReadTask]:
        n = len(self.items)
        num = default_num_blocks(self.estimate_inmemory_data_size(), n, self.override_num_blocks)
        if self.override_num_blocks is None:
            # Items are small objects converted by Python code; 2 x CPUs is plenty.
            from bridge._ray import cluster_cpus

            num = min(num, max(2 * cluster_cpus(), -(-n // 100_000)))
        tasks = []
        for start, end in split_even(n, num):
            chunk = self.items[start:end]
            tasks.append(ReadTask(_ItemsRead(chunk), meta(end - start, 0)))
        return tasks

    def describe(self) -> str:
        return f"FromItems(n={len(self.items)})"


@dataclasses.dataclass
class _ItemsRead:
    items: list[Any]

    def __call__(self) -> list[pa.Table]:
        from bridge.batch import BatchTypeError, rows_to_block

        rows = [x if isinstance(x, Mapping) else {"item": x} for x in self.items]
        try:
            return [rows_to_block(rows)]
        except BatchTypeError as err:
            from bridge.errors import BridgeTypeError

            raise BridgeTypeError(f"from_items: {err.what}", err.hint or "keep one kind of value per column") from err
