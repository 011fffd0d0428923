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


def test_ray_data_tensor_columns_become_this_librarys_tensors():
    """from_ray_data kept Ray Data's ArrowTensorTypeV2 columns: the torch and tf exporters refused them
    ("no tensor equivalent"), to_numpy_refs gave flat object rows (the shape lost), union with this
    library's tensors failed."""
    import numpy as np
    import ray
    import ray.data
    import torch

    from bridge.tensor import is_fixed_tensor, is_variable_tensor

    rows = [{"id": i, "t": np.full((2, 3), i, np.float32) + np.arange(6, dtype=np.float32).reshape(2, 3)}
            for i in range(5)]
    ds = bridge.from_ray_data(ray.data.from_items(rows, override_num_blocks=2))
    t = ds.schema().field("t").type
    assert is_fixed_tensor(t) and list(t.shape) == [2, 3] and t.value_type == pa.float32()
    batch = next(ds.iter_torch_batches(batch_size=5))
    assert batch["t"].shape == (5, 2, 3) and batch["t"].dtype == torch.float32
    np.testing.assert_array_equal(batch["t"].numpy(), np.stack([r["t"] for r in rows]))
    first = ray.get(ds.to_numpy_refs()[0])
    assert first["t"].shape[1:] == (2, 3) and first["t"].dtype == np.float32
    ours = bridge.from_numpy(np.zeros((1, 2, 3), np.float32)).rename_columns({"data": "t"})
    assert ds.select_columns(["t"]).union(ours).count() == 6

    ragged = bridge.from_ray_data(ray.data.from_items([{"r": np.ones((1, k), np.int64) * k} for k in (1, 2, 3)]))
    assert is_variable_tensor(ragged.schema().field("r").type)
    got = sorted((r["r"] for r in ragged.take_all()), key=lambda a: a.shape)
    assert [a.shape for a in got] == [(1, 1), (1, 2), (1, 3)]
    assert all(a.dtype == np.int64 and (a == a.shape[1]).all() for a in got)


def test_from_ray_data_without_tensors_is_not_converted():
    import ray.data

    rds = ray.data.from_arrow(pa.table({"x": [1.5, None]})).materialize()
    ds = bridge.from_ray_data(rds)
    assert ds.to_arrow_refs() == [e.ref for b in rds.iter_internal_ref_bundles() for e in b.blocks]
