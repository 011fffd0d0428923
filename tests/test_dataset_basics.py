"""The core Dataset API: constructors, lazy transforms, consumption, errors."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
import ray

import bridge
from bridge.errors import BridgeError, UserCodeError


def test_range_count_take_schema():
    ds = bridge.range(10_000)
    assert ds.count() == 10_000
    assert ds.take(3) == [{"id": 0}, {"id": 1}, {"id": 2}]
    assert ds.schema() == pa.schema([("id", pa.int64())])


def test_transforms_are_lazy_until_consumed():
    @ray.remote
    class Counter:
        def __init__(self):
            self.n = 0

        def inc(self):
            self.n += 1

        def get(self):
            return self.n

    counter = Counter.remote()

    def f(b):
        ray.get(counter.inc.remote())
        return b

    ds = bridge.range(100, override_num_blocks=4).map_batches(f)
    assert ray.get(counter.get.remote()) == 0, "map_batches ran before the Dataset was consumed"
    assert ds.count() == 100
    assert ray.get(counter.get.remote()) == 4


def test_issue_example_pipeline():
    ds = bridge.range(3000)
    ds = ds.map_batches(lambda b: {"id": b["id"], "sq": b["id"] ** 2})
    ds = ds.filter(lambda row: row["id"] % 3 == 0).map(lambda row: {**row, "x": 1})
    ds = ds.flat_map(lambda row: [row, {**row, "x": 2}])
    ds = ds.add_column("y", lambda t: pc.multiply(t["x"], 10), batch_format="pyarrow").drop_columns(["x"])
    ds = ds.select_columns(["id", "sq", "y"]).rename_columns({"sq": "square"})
    rows = ds.take_all()
    assert len(rows) == 2000
    assert rows[:2] == [{"id": 0, "square": 0, "y": 10}, {"id": 0, "square": 0, "y": 20}]
    assert rows[-1] == {"id": 2997, "square": 2997**2, "y": 20}
    assert ds.schema().names == ["id", "square", "y"]


@pytest.mark.parametrize("fmt", ["numpy", "pandas", "pyarrow"])
def test_map_batches_formats(fmt):
    def double(batch):
        if fmt == "pyarrow":
            return batch.set_column(0, "id", pc.multiply(batch["id"], 2))
        batch["id"] = batch["id"] * 2
        return batch

    out = bridge.range(10).map_batches(double, batch_format=fmt).take_all()
    assert [r["id"] for r in out] == [2 * i for i in range(10)]


def test_map_batches_batch_size_is_respected():
    def size(b):
        return {"n": np.array([len(b["id"])])}

    counts = [r["n"] for r in bridge.range(1000, override_num_blocks=1).map_batches(size, batch_size=128).take_all()]
    assert counts == [128] * 7 + [1000 - 7 * 128]
    # Small blocks are bundled up to the batch size; no batch exceeds it and no row is lost.
    small = bridge.range(1000, override_num_blocks=40).materialize()
    counts = [r["n"] for r in small.map_batches(size, batch_size=128).take_all()]
    assert sum(counts) == 1000 and max(counts) == 128 and len(counts) < 40


def test_order_is_preserved_across_many_blocks():
    ds = bridge.range(5000, override_num_blocks=50).map_batches(lambda b: b)
    assert [r["id"] for r in ds.iter_rows()] == list(range(5000))


def test_iter_batches_sizes_and_drop_last():
    sizes = [len(b["id"]) for b in bridge.range(1000, override_num_blocks=7).iter_batches(batch_size=300)]
    assert sizes == [300, 300, 300, 100]
    sizes = [len(b["id"]) for b in bridge.range(1000).iter_batches(batch_size=300, drop_last=True)]
    assert sizes == [300, 300, 300]


def test_iter_batches_formats():
    b = next(iter(bridge.range(10).iter_batches(batch_size=4, batch_format="pyarrow")))
    assert isinstance(b, pa.Table) and b.num_rows == 4
    b = next(iter(bridge.range(10).iter_batches(batch_size=4, batch_format="pandas")))
    assert list(b["id"]) == [0, 1, 2, 3]


def test_local_shuffle_is_a_seeded_permutation():
    ds = bridge.range(2000, override_num_blocks=8)
    a = [x for b in ds.iter_batches(batch_size=100, local_shuffle_buffer_size=500, local_shuffle_seed=7)
         for x in b["id"]]
    b = [x for b in ds.iter_batches(batch_size=100, local_shuffle_buffer_size=500, local_shuffle_seed=7)
         for x in b["id"]]
    assert a == b
    assert sorted(a) == list(range(2000))
    assert a != list(range(2000))


def test_limit_stops_early_and_is_pushed_into_range():
    ds = bridge.range(10_000_000).map(lambda r: {"id": r["id"] + 1}).limit(5)
    assert [r["id"] for r in ds.take_all()] == [1, 2, 3, 4, 5]
    # The limit moved below the row map into the source: the map saw 5 rows, not 10M.
    assert "5 rows" in ds.stats()


def test_fusion_runs_one_task_per_block():
    ds = bridge.range(1000, override_num_blocks=4).map_batches(lambda b: b).filter(lambda r: True).map(lambda r: r)
    ds.count()
    stats = ds.stats()
    assert "ReadRange->MapBatches(<lambda>)->Filter(<lambda>)->Map(<lambda>): 4 tasks" in stats, stats


def test_materialize_runs_once_and_later_transforms_per_epoch():
    m = bridge.range(100).map_batches(lambda b: {"id": b["id"] * 3}).materialize()
    assert isinstance(m, bridge.MaterializedDataset)
    assert m.count() == 100
    assert m.map_batches(lambda b: {"id": b["id"] + 1}).take(2) == [{"id": 1}, {"id": 4}]
    assert m.take(2) == [{"id": 0}, {"id": 3}]


def test_take_batch_and_show(capsys):
    batch = bridge.range(100).take_batch(8)
    assert list(batch["id"]) == list(range(8))
    bridge.range(2).show()
    assert capsys.readouterr().out.splitlines() == ["{'id': 0}", "{'id': 1}"]


def test_to_refs():
    ds = bridge.range(100, override_num_blocks=4)
    tables = ray.get(ds.to_arrow_refs())
    assert sum(t.num_rows for t in tables) == 100
    arrays = ray.get(ds.to_numpy_refs(column="id"))
    assert np.concatenate(arrays).tolist() == list(range(100))
    frames = ray.get(ds.to_pandas_refs())
    assert sum(len(f) for f in frames) == 100


def test_from_refs_round_trip():
    import pandas as pd

    refs = [ray.put(pa.table({"a": [1, 2]})), ray.put(pa.table({"a": [3]}))]
    assert bridge.from_arrow_refs(refs).to_arrow()["a"].to_pylist() == [1, 2, 3]
    prefs = [ray.put(pd.DataFrame({"a": [1.5, 2.5]}))]
    assert bridge.from_pandas_refs(prefs).take_all() == [{"a": 1.5}, {"a": 2.5}]
    nrefs = [ray.put(np.arange(3))]
    assert bridge.from_numpy_refs(nrefs).take_all() == [{"data": 0}, {"data": 1}, {"data": 2}]


def test_from_items_and_numpy():
    assert bridge.from_items([1, 2, 3]).take_all() == [{"item": 1}, {"item": 2}, {"item": 3}]
    ds = bridge.from_numpy(np.arange(12).reshape(3, 2, 2))
    out = ds.take_batch(3)["data"]
    assert out.shape == (3, 2, 2) and out[2, 1, 1] == 11


def test_dataset_consumed_inside_a_ray_task():
    @ray.remote
    def consume(ds):
        return sum(len(b["id"]) for b in ds.iter_batches(batch_size=100))

    lazy = bridge.range(1000).map_batches(lambda b: b)
    assert ray.get(consume.remote(lazy)) == 1000
    assert ray.get(consume.remote(lazy.materialize())) == 1000


def test_context_settings_apply():
    ctx = bridge.DataContext.get_current()
    old = ctx.target_min_block_size, ctx.read_op_min_num_blocks
    try:
        ctx.read_op_min_num_blocks = 5
        ctx.target_min_block_size = 1
        assert bridge.range(1000).num_blocks() == 5
    finally:
        ctx.target_min_block_size, ctx.read_op_min_num_blocks = old


def test_empty_dataset():
    ds = bridge.range(0)
    assert ds.count() == 0 and ds.take_all() == []
    assert list(ds.iter_batches()) == []
    assert bridge.range(10).filter(lambda r: False).take_all() == []


# ---------------------------------------------------------------- errors


def test_user_error_names_operator_and_block_and_chains_original():
    def boom(batch):
        if batch["id"][0] >= 50:
            raise ValueError("bad value")
        return batch

    with pytest.raises(UserCodeError) as info:
        bridge.range(100, override_num_blocks=4).map_batches(boom).materialize()
    err = info.value
    assert "MapBatches(boom)" in str(err) and "bad value" in str(err)
    assert "Hint:" in str(err)
    assert err.block_index in (2, 3)  # blocks 2 and 3 both fail; whichever finishes first is reported
    assert isinstance(err.__cause__, ValueError)


def test_wrong_return_type_says_what_was_expected():
    with pytest.raises(UserCodeError, match="dict of column name -> array"):
        bridge.range(10).map_batches(lambda b: [1, 2, 3]).materialize()
    with pytest.raises(UserCodeError, match="different lengths"):
        bridge.range(10).map_batches(lambda b: {"a": b["id"], "b": b["id"][:2]}).materialize()


def test_bad_arguments():
    with pytest.raises(BridgeError, match="batch_size"):
        bridge.range(10).map_batches(lambda b: b, batch_size=0)
    with pytest.raises(BridgeError, match="batch_format"):
        bridge.range(10).map_batches(lambda b: b, batch_format="xml").take()
    with pytest.raises(BridgeError, match="non-negative integer"):
        bridge.range(-1)
    with pytest.raises(bridge.SchemaMismatchError, match="not found"):
        bridge.range(3).select_columns(["nope"]).take()
    with pytest.raises(ValueError):  # SchemaMismatchError is a ValueError too
        bridge.range(3).drop_columns(["nope"]).take()


def test_blocks_put_from_threads_keep_their_order_and_stream():
    """from_pandas / from_arrow / from_blocks convert and put blocks from a few threads:
    the blocks stay in order, a generator is taken a window at a time, the first error is raised."""
    import pandas as pd

    from bridge.constructors.memory import PUT_THREADS, in_threads

    df = pd.DataFrame({"i": np.arange(100_000), "s": [f"v{k}" for k in range(100_000)]})
    ds = bridge.from_pandas(df, override_num_blocks=12)
    assert ds.num_blocks() == 12
    assert ds.to_pandas().equals(df)
    parts = [pa.table({"x": [k] * (k + 1)}) for k in range(20)]
    ds = bridge.from_arrow(parts)
    assert [len(b["x"]) for b in ds.iter_batches(batch_size=None)] == list(range(1, 21))

    taken = []

    def stream():
        for k in range(40):
            taken.append(k)
            yield k

    out = in_threads(lambda k: k * k, stream())
    assert next(out) == 0 and len(taken) <= 2 * PUT_THREADS + 1  # a window ahead, not the whole stream
    assert list(out) == [k * k for k in range(1, 40)]

    def fail_at_3(k):
        if k == 3:
            raise ValueError("item 3")
        return k

    got = []
    with pytest.raises(ValueError, match="item 3"):
        for v in in_threads(fail_at_3, range(10)):
            got.append(v)
    assert got == [0, 1, 2]
    with pytest.raises(TypeError, match="block 1"):
        bridge.from_blocks(iter([pa.table({"a": [1]}), [2]]))


class _CountingTasks:
    """Counts the metadata tasks from_arrow_refs starts (they run for real)."""

    def __init__(self, task):
        self.task, self.started = task, 0

    def remote(self, *args):
        self.started += 1
        return self.task.remote(*args)


@pytest.fixture(params=["driver", "tasks", "driver_then_tasks"])
def arrow_refs_path(request, monkeypatch):
    """from_arrow_refs reads the metadata in the driver on a one-machine cluster, else in a task per table;
    in the driver it hands the rest to tasks once a table takes it longer than the cores' share of a task."""
    from bridge import _ray
    from bridge.constructors import memory

    tasks = _CountingTasks(memory._meta_of)
    monkeypatch.setattr(memory, "_meta_of", tasks)
    if request.param == "tasks":
        monkeypatch.setattr(_ray, "cluster_is_this_machine", lambda: False)
    else:
        assert _ray.cluster_is_this_machine()  # the test session's Ray: started here, one node
    if request.param == "driver_then_tasks":
        monkeypatch.setattr(memory, "LOCAL_META_GROUP", 1)  # two groups: the switch is judged after the second
        monkeypatch.setattr(memory, "TASK_COST_S", 0.0)  # any table takes longer than a free task
        monkeypatch.setattr(_ray, "cluster_cpus", lambda: 4)
    yield request.param
    distinct = 3  # the tests below use three distinct tables
    expected = {"driver": 0, "tasks": distinct, "driver_then_tasks": distinct - 2}[request.param]
    assert tasks.started == expected, (request.param, tasks.started)


def test_from_arrow_refs_reads_each_distinct_table_once_and_keeps_order(arrow_refs_path):
    a = ray.put(pa.table({"x": pa.array([1, 2], pa.int16()), "s": ["p", None]}))
    b = ray.put(pa.table({"x": pa.array([3], pa.int16()), "s": ["q"]}))
    c = ray.put(pa.table({"x": pa.array([4, 5, 6], pa.int16()), "s": ["r", "s", "t"]}))
    ds = bridge.from_arrow_refs([a, b, a, c])
    assert ds.num_blocks() == 4 and ds.count() == 8
    assert ds.schema() == pa.schema([("x", pa.int16()), ("s", pa.string())])
    assert ds.to_arrow()["x"].to_pylist() == [1, 2, 3, 1, 2, 4, 5, 6]
    bundles = list(ds.iter_internal_ref_bundles())
    assert [m.num_rows for b in bundles for m in b.metas] == [2, 1, 2, 3]
    assert [r for b in bundles for r in b.refs] == [a, b, a, c]


def test_from_arrow_refs_names_the_reference_that_is_not_a_table(arrow_refs_path):
    import pandas as pd

    refs = [ray.put(pa.table({"x": [1]})), ray.put(pa.table({"x": [2]})), ray.put(pd.DataFrame({"x": [3]}))]
    with pytest.raises(BridgeError, match=r"reference 2 of 3 holds a DataFrame, not a pyarrow.Table") as err:
        bridge.from_arrow_refs(refs)
    assert "from_pandas_refs" in str(err.value)


def test_from_arrow_refs_rejects_a_table_passed_instead_of_a_reference():
    from bridge.errors import BridgeTypeError

    with pytest.raises(BridgeTypeError, match=r"item 1 is a Table, not a ray.ObjectRef") as err:
        bridge.from_arrow_refs([ray.put(pa.table({"x": [1]})), pa.table({"x": [2]})])
    assert "from_arrow" in str(err.value)


def test_proportional_splits_take_ray_datas_sizes_and_refuse_an_empty_part():
    from bridge.errors import BridgeValueError

    sizes = lambda parts: [p.count() for p in parts]  # noqa: E731
    assert sizes(bridge.range(10).train_test_split(0.05)) == [9, 1]  # Ray Data: int(10 * 0.95) train rows
    assert sizes(bridge.range(10).train_test_split(0.25)) == [7, 3]
    assert sizes(bridge.range(10).train_test_split(0.2)) == [8, 2]
    assert sizes(bridge.range(10).split_proportionately([0.2, 0.5])) == [2, 5, 3]
    assert sizes(bridge.range(10).split_proportionately([0.2, 0.05])) == [1, 1, 8]  # cuts 2, 2 -> 1, 2 as Ray Data
    with pytest.raises(BridgeValueError, match=r"10 rows into 2 non-empty parts[\s\S]*Hint:"):
        bridge.range(10).split_proportionately([0.05])
    with pytest.raises(BridgeValueError, match=r"test_size=0.95[\s\S]*Hint:"):
        bridge.range(10).train_test_split(0.95)
    with pytest.raises(BridgeValueError, match=r"0 rows"):
        bridge.range(0).train_test_split(0.5)


def test_proportional_splits_cut_the_rows_they_counted():
    # An unseeded sample differs per run: sizes and parts must come from one run.
    sampled = bridge.range(10_000, override_num_blocks=4).random_sample(0.5)
    first, rest = sampled.split_proportionately([0.5])
    assert first.count() in (rest.count(), rest.count() - 1)
    train, test = sampled.train_test_split(0.5, shuffle=True)
    assert test.count() in (train.count(), train.count() + 1)
    ids = [r["id"] for p in (train, test) for r in p.take_all()]
    assert len(ids) == len(set(ids))


def test_select_and_drop_columns_refuse_a_repeated_name():
    from bridge.errors import BridgeValueError

    ds = bridge.from_items([{"a": 1, "b": 2}])
    with pytest.raises(BridgeValueError, match=r"select_columns: column names must be unique; \['a'\][\s\S]*Hint:"):
        ds.select_columns(["a", "b", "a"])
    with pytest.raises(BridgeValueError, match=r"drop_columns: column names must be unique; \['b'\][\s\S]*Hint:"):
        ds.drop_columns(["b", "b"])
    assert ds.select_columns(["b", "a"]).take_all() == [{"b": 2, "a": 1}]
    assert ds.drop_columns("b").take_all() == [{"a": 1}]


def test_groupby_refuses_a_key_type_arrow_cannot_group_by_naming_it():
    from bridge.errors import UnsupportedTypeError

    ds = bridge.from_items([{"l": [i % 2], "s": {"f": i % 2}, "v": i} for i in range(6)], override_num_blocks=2)
    for key, typ in [("l", "list<item: int64>"), ("s", "struct<f: int64>")]:
        with pytest.raises(UnsupportedTypeError, match=rf"key column '{key}' has type {typ}, which cannot be grouped"):
            ds.groupby(key).count().take_all()
        with pytest.raises(UnsupportedTypeError, match=rf"'{key}' has type {typ}[\s\S]*Hint:"):
            ds.groupby(key).map_groups(lambda b: b).take_all()
        with pytest.raises(UnsupportedTypeError, match=rf"'{key}' has type"):
            ds.repartition(2, keys=[key]).materialize()
    assert ds.groupby("v").count().count() == 6
