"""The schema a plan knows is shown and returned without running anything."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

import bridge


def _parquet(tmp_path) -> str:
    table = pa.table({"a": pa.array([1, 2, 3], pa.int32()), "b": ["x", "y", "z"], "c": [0.5, 1.5, 2.5]})
    pq.write_table(table, tmp_path / "part-0.parquet")
    return str(tmp_path)


def test_repr_shows_known_schema_without_running():
    ds = bridge.range(10).limit(5)
    assert repr(ds) == "Dataset(ReadRange -> Limit[5], schema={id: int64})"
    assert ds._last_stats is None  # nothing ran


def test_repr_of_unknown_schema_runs_nothing():
    ds = bridge.range(10).map_batches(lambda b: {"y": b["id"] * 2})
    assert "schema" not in repr(ds)
    assert ds._last_stats is None


def test_parquet_schema_comes_from_the_footers(tmp_path):
    ds = bridge.read_parquet(_parquet(tmp_path)).select_columns(["c", "a"])
    schema = ds.schema()
    assert ds._last_stats is None  # no block was read for it
    assert schema.names == ["c", "a"] and schema.field("a").type == pa.int32()
    assert schema == ds.materialize().schema()
    assert "schema={c: double, a: int32}" in repr(ds)


def test_schema_still_runs_when_a_transform_changes_it():
    ds = bridge.range(10).map_batches(lambda b: {"y": b["id"] * 0.5})
    assert ds.schema() == pa.schema([("y", pa.float64())])
