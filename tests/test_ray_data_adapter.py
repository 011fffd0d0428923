"""Ray Data interop and the Arrow PyCapsule door (polars, DuckDB)."""

from __future__ import annotations

import pyarrow as pa
import pytest

import bridge


def test_from_ray_data_shares_the_arrow_blocks():
    import ray.data

    rds = ray.data.from_arrow([pa.table({"x": [1, 2]}), pa.table({"x": [3]})]).materialize()
    ray_refs = [e.ref for b in rds.iter_internal_ref_bundles() for e in b.blocks]
    ds = bridge.from_ray_data(rds)
    assert ds.to_arrow_refs() == ray_refs  # the same objects: nothing copied
    assert [r["x"] for r in ds.take_all()] == [1, 2, 3]


def test_to_ray_data_shares_the_blocks_and_back():
    ds = bridge.from_arrow(pa.table({"x": list(range(10)), "s": [str(i) for i in range(10)]}), override_num_blocks=2)
    rds = ds.to_ray_data()
    assert rds.count() == 10
    assert rds.to_arrow_refs() == ds.to_arrow_refs()
    assert bridge.from_ray_data(rds).to_arrow().to_pydict() == ds.to_arrow().to_pydict()


def test_pandas_blocks_are_converted_to_arrow():
    import pandas as pd
    import ray.data

    rds = ray.data.from_pandas(pd.DataFrame({"x": [1, 2, 3], "l": [[1], [2, 3], []]}))
    ds = bridge.from_ray_data(rds)
    assert ds.schema().field("l").type == pa.list_(pa.int64())
    assert ds.take_all()[1] == {"x": 2, "l": [2, 3]}


def test_empty_dataset_to_ray_data_keeps_the_columns():
    ds = bridge.from_arrow(pa.table({"x": pa.array([], pa.int64())}))
    rds = ds.to_ray_data()
    assert rds.count() == 0 and rds.schema().names == ["x"]


def test_polars_and_duckdb_read_a_dataset_through_the_capsule():
    pl = pytest.importorskip("polars")
    duckdb = pytest.importorskip("duckdb")
    ds = bridge.range(100, override_num_blocks=4).map_batches(lambda b: {"id": b["id"], "sq": b["id"] ** 2})
    frame = pl.from_arrow(pa.RecordBatchReader.from_stream(ds))
    assert frame.height == 100 and frame["sq"].sum() == sum(i * i for i in range(100))
    total = duckdb.sql("SELECT sum(sq) AS t FROM ds").fetchall()[0][0]  # ds found by DuckDB's replacement scan
    assert total == sum(i * i for i in range(100))


def test_polars_and_duckdb_producers_convert_without_an_adapter():
    pl = pytest.importorskip("polars")
    duckdb = pytest.importorskip("duckdb")
    frame = pl.DataFrame({"x": [1, 2, 3], "s": ["a", "b", None]})
    assert bridge.from_arrow(frame).take_all() == [{"x": 1, "s": "a"}, {"x": 2, "s": "b"}, {"x": 3, "s": None}]
    rel = duckdb.sql("SELECT range AS x FROM range(5)")
    assert [r["x"] for r in bridge.from_any(rel).take_all()] == [0, 1, 2, 3, 4]
