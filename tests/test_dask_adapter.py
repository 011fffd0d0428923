"""Dask <-> Dataset beyond the conformance suite: nested values, index, partitions, schedulers."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import bridge

dd = pytest.importorskip("dask.dataframe")
dask = pytest.importorskip("dask")


def _frame(n=12):
    return pd.DataFrame({"i": np.arange(n), "l": [[k, k + 1] for k in range(n)], "s": [f"s{k}" for k in range(n)]})


def test_list_columns_stay_lists_despite_string_conversion():
    ddf = dd.from_pandas(_frame(), npartitions=3)
    assert str(ddf.dtypes["l"]) == "string"  # what Dask itself would compute: '[0, 1]'
    ds = bridge.from_dask(ddf)
    assert ds.schema().field("l").type.value_type == "int64"
    assert ds.take(2)[1]["l"] == [1, 2]
    back = ds.to_dask().compute()
    assert list(back["l"].iloc[3]) == [3, 4]
    assert back["s"].tolist() == [f"s{k}" for k in range(12)]


def test_named_index_survives_the_round_trip_with_known_divisions():
    pdf = _frame().set_index(pd.Index(np.arange(100, 112), name="key"))
    ds = bridge.from_dask(dd.from_pandas(pdf, npartitions=3))
    assert "key" in ds.schema().names
    back = ds.to_dask()
    assert back.known_divisions and back.divisions[0] == 100 and back.divisions[-1] == 111
    out = back.compute()
    assert out.index.name == "key" and out.index.tolist() == list(range(100, 112))


def test_default_index_gets_global_offsets_and_npartitions():
    ds = bridge.range(100, override_num_blocks=4)
    ddf = ds.to_dask(npartitions=3)
    assert ddf.npartitions == 3 and ddf.known_divisions
    out = ddf.compute()
    assert out.index.tolist() == list(range(100)) and out["id"].tolist() == list(range(100))
    assert ddf.get_partition(2).compute()["id"].iloc[0] == 67


def test_one_partition_and_two_hundred_partitions():
    pdf = pd.DataFrame({"x": np.arange(400)})
    one = bridge.from_dask(dd.from_pandas(pdf, npartitions=1))
    assert one.num_blocks() == 1 and one.count() == 400
    many = bridge.from_dask(dd.from_pandas(pdf, npartitions=200))
    assert many.num_blocks() == 200
    assert many.to_dask().npartitions == 200
    assert many.to_dask()["x"].sum().compute() == pdf["x"].sum()


def test_empty_partitions_and_empty_frames():
    ddf = dd.from_pandas(pd.DataFrame({"x": np.arange(10)}), npartitions=5)
    filtered = ddf[ddf.x >= 8]  # most partitions become empty
    ds = bridge.from_dask(filtered)
    assert ds.num_blocks() == 5 and [r["x"] for r in ds.take_all()] == [8, 9]
    assert ds.to_dask().compute()["x"].tolist() == [8, 9]
    empty = bridge.from_dask(dd.from_pandas(pd.DataFrame({"x": pd.Series([], dtype="int64")}), npartitions=1))
    assert empty.count() == 0
    back = empty.to_dask()
    assert list(back.columns) == ["x"] and len(back.compute()) == 0


def test_shuffled_graph_runs_shared_work_once_and_keeps_order():
    ddf = dd.from_pandas(_frame(20).sample(frac=1, random_state=0), npartitions=4).set_index("i")
    ds = bridge.from_dask(ddf)
    out = ds.to_pandas()
    assert out.index.tolist() == list(range(20))


def test_dask_on_ray_scheduler_both_directions():
    from ray.util.dask import ray_dask_get

    ddf = dd.from_pandas(pd.DataFrame({"x": np.arange(30)}), npartitions=3)
    with dask.config.set(scheduler=ray_dask_get):
        ds = bridge.from_dask((ddf.x * 2).to_frame())
        assert ds.to_dask().x.sum().compute() == 2 * sum(range(30))
    assert [r["x"] for r in ds.take(3)] == [0, 2, 4]


def test_to_dask_changes_no_global_configuration():
    before = dict(dask.config.config)
    ddf = bridge.range(10).to_dask()
    ddf.compute()
    assert dict(dask.config.config) == before
    assert dask.config.get("scheduler", None) is None


def test_dataset_outlives_a_closed_distributed_client():
    distributed = pytest.importorskip("distributed")
    ddf = dd.from_pandas(pd.DataFrame({"x": np.arange(50)}), npartitions=5)
    # tcp, so that the Ray tasks can reach the scheduler and fetch the persisted partitions.
    with distributed.Client(processes=False, protocol="tcp", n_workers=1, threads_per_worker=1,
                            dashboard_address=None) as client:
        persisted = client.persist(ddf + 1)
        ds = bridge.from_dask(persisted)
        assert ds.to_dask().x.sum().compute() == sum(range(1, 51))  # computed under the client
    assert [r["x"] for r in ds.take_all()] == list(range(1, 51))


def test_in_process_distributed_cluster_is_fetched_through_the_driver():
    distributed = pytest.importorskip("distributed")
    ddf = dd.from_pandas(pd.DataFrame({"x": np.arange(6)}), npartitions=2)
    with distributed.Client(processes=False, n_workers=1, threads_per_worker=1, dashboard_address=None) as client:
        ds = bridge.from_dask(client.persist(ddf))
    assert [r["x"] for r in ds.take_all()] == list(range(6))


def test_not_a_dask_frame_is_refused_with_a_hint():
    from raybridge_adapters import get_adapter

    with pytest.raises(bridge.BridgeError, match="Hint:"):
        get_adapter("dask").to_dataset(pd.DataFrame({"x": [1]}))


@pytest.mark.parametrize("persist", [False, True])
def test_partitions_this_process_holds_are_put_without_a_task(persist):
    # from_pandas, and a frame persisted with a local scheduler, hold their partitions in this
    # process: they are converted here and put once, not pickled into a task and copied again.
    from raybridge_adapters.dask_adapter import _held_by_driver, _keep_nested_objects, _subgraphs

    pdf = pd.DataFrame({"a": np.arange(40), "s": [f"x{i}" for i in range(40)]})
    ddf = dd.from_pandas(pdf, npartitions=4)
    if persist:
        ddf = ddf.persist(scheduler="sync")
    subs, keys, _ = _subgraphs(_keep_nested_objects(ddf).optimize())
    held = [_held_by_driver(sub, key) for sub, key in zip(subs, keys)]
    assert [len(p) for p in held] == [10, 10, 10, 10]
    assert pd.concat(held)["a"].tolist() == list(range(40))
    assert bridge.from_dask(ddf).to_pandas()["s"].tolist() == pdf["s"].tolist()


def test_partitions_that_disagree_about_their_index_all_keep_it():
    # A filter left one partition with a RangeIndex piece and others with labels: each decided alone,
    # the blocks differed in columns and the index came back renumbered (or as a stray column).
    ddf = dd.from_pandas(pd.DataFrame({"a": range(10)}), npartitions=5)
    f = ddf[(ddf.a < 2) | (ddf.a > 7)]
    out = bridge.from_dask(f).to_pandas()
    assert out.index.tolist() == f.compute().index.tolist() == [0, 1, 8, 9]
    assert out.columns.tolist() == ["a"]
    a = dd.from_pandas(pd.DataFrame({"a": [1, 2]}), npartitions=1)
    b = dd.from_pandas(pd.DataFrame({"a": [3, 4]}, index=[100, 101]), npartitions=1)
    out = bridge.from_dask(dd.concat([a, b])).to_pandas()
    assert out.index.tolist() == [0, 1, 100, 101] and out.columns.tolist() == ["a"]
    # Partitions that all hold default pieces still give one default index.
    assert isinstance(bridge.from_dask(dd.from_pandas(pd.DataFrame({"a": range(6)}), npartitions=3)).to_pandas()
                      .index, pd.RangeIndex)
