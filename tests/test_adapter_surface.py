"""The public surface an adapter (a third-party one too) builds on: registry, from_blocks, from_block_refs,
block_layout -- no private core function needed."""

from __future__ import annotations

import pyarrow as pa
import pytest
import ray

import bridge
from bridge.block import BlockMetadata
from bridge.registry import get_adapter, register


class Columns:
    """A toy 'framework' object: a dict of equal-length lists."""

    def __init__(self, data: dict[str, list]) -> None:
        self.data = data


class ColumnsAdapter:
    name = "toy_columns"
    package = "pyarrow"
    extra = "raybridge"

    def is_native(self, obj):
        return isinstance(obj, Columns)

    def to_dataset(self, obj, *, rows_per_block: int = 2):
        table = pa.table(obj.data)
        blocks = (table.slice(s, rows_per_block) for s in range(0, table.num_rows, rows_per_block))
        return bridge.from_blocks(blocks, name="FromToyColumns")

    def from_dataset(self, ds, **options):
        layout = ds.block_layout()
        tables = ray.get(layout.refs)
        out = {name: [] for name in layout.schema.names}
        for t in tables:
            for name in out:
                out[name].extend(t.column(name).to_pylist())
        return Columns(out), layout


def test_a_registered_adapter_round_trips_through_the_public_surface():
    register(ColumnsAdapter())
    ds = bridge.from_any(Columns({"x": [1, 2, 3, 4, 5], "s": list("abcde")}))
    assert ds.num_blocks() == 3 and ds.take_all()[4] == {"x": 5, "s": "e"}
    assert ds._plan.name == "FromToyColumns"  # the source label stats and progress show
    back, layout = get_adapter("toy_columns").from_dataset(ds.filter(lambda r: r["x"] != 3))
    assert back.data == {"x": [1, 2, 4, 5], "s": list("abde")}
    assert [n for _, n in layout.blocks] == [2, 1, 1] and layout.starts == [0, 2, 3] and layout.num_rows == 4


def test_from_block_refs_wraps_blocks_already_in_the_store():
    tables = [pa.table({"a": [1, 2]}), pa.table({"a": [3]})]
    refs = [ray.put(t) for t in tables]
    ds = bridge.from_block_refs(refs, [BlockMetadata.of(t) for t in tables], name="FromMine")
    assert ds.take_all() == [{"a": 1}, {"a": 2}, {"a": 3}]
    with pytest.raises(ValueError, match="2 refs but 1 metadata"):
        bridge.from_block_refs(refs, [BlockMetadata.of(tables[0])])


def test_empty_dataset_layout_keeps_the_schema():
    layout = bridge.from_arrow(pa.table({"a": pa.array([], pa.int32())})).block_layout()
    assert layout.blocks == [] and layout.num_rows == 0 and layout.schema.field("a").type == pa.int32()
