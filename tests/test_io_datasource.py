"""read_datasource with a third-party Datasource that splits its work by ``parallelism`` (Ray Data's contract)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import bridge
from bridge.block import BlockMetadata
from bridge.errors import BridgeError
from bridge.io.datasource import Datasource, ReadTask


class Squares(Datasource):
    """Rows 0..n-1 and their squares, cut into ``parallelism`` read tasks as Ray Data's examples do."""

    name = "Squares"

    def __init__(self, n: int) -> None:
        self.n = n
        self.asked: list[int] = []

    def estimate_num_rows(self) -> int:
        return self.n

    def estimate_inmemory_data_size(self) -> int:
        return self.n * 16

    def get_read_tasks(self, parallelism: int) -> list[ReadTask]:
        self.asked.append(parallelism)
        tasks = []
        for part in np.array_split(np.arange(self.n), parallelism):  # parallelism 0 would raise here
            if len(part) == 0:
                continue
            lo, hi = int(part[0]), int(part[-1]) + 1

            def read(lo: int = lo, hi: int = hi) -> list[pa.Table]:
                x = np.arange(lo, hi)
                return [pa.table({"x": x, "x2": x * x})]

            tasks.append(ReadTask(read, BlockMetadata(num_rows=hi - lo, size_bytes=(hi - lo) * 16)))
        return tasks


def test_a_datasource_gets_a_positive_parallelism_and_every_row():
    source = Squares(1000)
    ds = bridge.read_datasource(source)
    rows = ds.take_all()
    assert [r["x"] for r in rows] == list(range(1000))
    assert all(r["x2"] == r["x"] ** 2 for r in rows)
    assert source.asked and min(source.asked) >= 1


def test_override_num_blocks_is_the_parallelism_the_datasource_is_asked_for():
    source = Squares(1000)
    ds = bridge.read_datasource(source, override_num_blocks=3).materialize()
    assert set(source.asked) == {3}
    assert ds.num_blocks() == 3
    assert ds.count() == 1000


def test_override_num_blocks_survives_a_column_selection_and_a_limit():
    source = Squares(1000)
    ds = bridge.read_datasource(source, override_num_blocks=4).map_batches(lambda b: b)
    assert ds.limit(10).count() == 10
    assert set(source.asked) == {4}


@pytest.mark.parametrize("bad", [0, -2])
def test_override_num_blocks_below_one_is_refused_at_the_call(bad):
    with pytest.raises(BridgeError, match="override_num_blocks must be at least 1"):
        bridge.read_datasource(Squares(10), override_num_blocks=bad)


def test_something_that_is_not_a_datasource_is_refused():
    with pytest.raises(BridgeError, match="needs a bridge.io.datasource.Datasource"):
        bridge.read_datasource([1, 2, 3])  # type: ignore[arg-type]
