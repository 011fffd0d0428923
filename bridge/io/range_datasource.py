"""``bridge.range`` and ``bridge.range_tensor``: generated integers, read in parallel."""

from __future__ import annotations

import dataclasses

import numpy as np
import pyarrow as pa

from bridge import tensor
from bridge.io.datasource import Datasource, ReadTask, default_num_blocks, meta, split_even


@dataclasses.dataclass
class RangeDatasource(Datasource):
    n: int
    column: str = "id"
    shape: tuple[int, ...] | None = None
    override_num_blocks: int | None = None

    name = "Range"
    supports_limit = True
    exact_num_rows = True

    def _row_bytes(self) -> int:
        return 8 * (int(np.prod(self.shape)) if self.shape else 1)

    def estimate_inmemory_data_size(self) -> int:
        return self.n * self._row_bytes()

    def estimate_num_rows(self) -> int:
        return self.n

    def with_limit(self, limit: int) -> RangeDatasource:
        return dataclasses.replace(self, n=min(self.n, limit))

    def get_read_tasks(self, parallelism: int) -> list[ReadTask]:
        num = default_num_blocks(self.estimate_inmemory_data_size(), self.n, self.override_num_blocks)
        tasks = []
        schema = self._schema()
        for start, end in split_even(self.n, num):
            tasks.append(
                ReadTask(
                    _RangeRead(start, end, self.column, self.shape),
                    meta(end - start, (end - start) * self._row_bytes(), schema),
                )
            )
        return tasks

    def _schema(self) -> pa.Schema:
        if self.shape:
            return pa.schema([(self.column, pa.fixed_shape_tensor(pa.int64(), list(self.shape)))])
        return pa.schema([(self.column, pa.int64())])

    def known_schema(self) -> pa.Schema:
        return self._schema()

    def describe(self) -> str:
        return f"Range(n={self.n})"


@dataclasses.dataclass
class _RangeRead:
    start: int
    end: int
    column: str
    shape: tuple[int, ...] | None

    def __call__(self) -> list[pa.Table]:
        ids = np.arange(self.start, self.end, dtype=np.int64)
        if self.shape:
            data = np.broadcast_to(ids.reshape((-1,) + (1,) * len(self.shape)), (len(ids), *self.shape))
            return [pa.table({self.column: tensor.fixed_tensor_array(np.ascontiguousarray(data))})]
        return [pa.table({self.column: ids})]
