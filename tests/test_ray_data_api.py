"""Ray Data API that raybridge mirrors: the values asserted here are what Ray Data 2.60 returns."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import bridge

# ------------------------------------------------------------------ DataIterator


@pytest.mark.timeout(120)
def test_iterator_has_the_data_iterator_methods():
    it = bridge.range(10, override_num_blocks=2).iterator()
    assert isinstance(it, bridge.DataIterator)
    assert [len(b["id"]) for b in it.iter_batches(batch_size=4)] == [4, 4, 2]
    assert [r["id"] for r in it.iter_rows()] == list(range(10))
    assert it.schema().names == ["id"]
    assert it.materialize().count() == 10


@pytest.mark.timeout(120)
def test_iter_rows_makes_a_full_second_pass():
    for rows in (bridge.range(5).iter_rows(), bridge.range(5).iterator().iter_rows()):
        assert [r["id"] for r in rows] == [r["id"] for r in rows] == list(range(5))
    rows = bridge.range(3).iter_rows()
    assert next(rows) == {"id": 0}  # next() works on it too


@pytest.mark.timeout(180)
def test_iter_torch_batches_from_the_iterator():
    pytest.importorskip("torch")
    it = bridge.range(6).iterator()
    assert [b["id"].tolist() for b in it.iter_torch_batches(batch_size=4)] == [[0, 1, 2, 3], [4, 5]]


@pytest.mark.timeout(240)
def test_iter_tf_batches_on_dataset_iterator_and_split():
    tf = pytest.importorskip("tensorflow")
    ds = bridge.from_items([{"x": float(i), "n": i} for i in range(5)])
    batches = list(ds.iter_tf_batches(batch_size=2))
    assert [b["n"].numpy().tolist() for b in batches] == [[0, 1], [2, 3], [4]]
    assert batches[0]["x"].dtype == tf.float64
    cast = next(iter(ds.iterator().iter_tf_batches(batch_size=5, dtypes=tf.float32)))
    assert cast["n"].dtype == tf.float32 and cast["n"].numpy().tolist() == [0, 1, 2, 3, 4]
    (split,) = ds.streaming_split(1)
    assert [b["n"].numpy().tolist() for b in split.iter_tf_batches(batch_size=3)] == [[0, 1, 2], [3, 4]]
    tfds = split.to_tf("x", "n", batch_size=5)  # one epoch of the split per pass
    (features, labels), = list(tfds)
    assert features.numpy().tolist() == [0.0, 1.0, 2.0, 3.0, 4.0] and labels.numpy().tolist() == [0, 1, 2, 3, 4]
    assert split.schema().names == ["x", "n"]


# ------------------------------------------------------------------ compute=ActorPoolStrategy


class AddConst:
    def __init__(self, k: int = 1) -> None:
        self.k = k

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return {"id": batch["id"] + self.k}


@pytest.mark.timeout(180)
def test_compute_actor_pool_strategy_is_concurrency():
    ds = bridge.range(8, override_num_blocks=4)
    out = ds.map_batches(AddConst, compute=bridge.ActorPoolStrategy(size=1), fn_constructor_args=(10,)).take_all()
    assert [r["id"] for r in out] == list(range(10, 18))
    pooled = ds.map_batches(AddConst, compute=bridge.ActorPoolStrategy(min_size=1, max_size=2))
    assert sorted(r["id"] for r in pooled.take_all()) == list(range(1, 9))
    assert ds.filter(lambda r: r["id"] % 2 == 0, compute=bridge.TaskPoolStrategy(size=1)).count() == 4


def test_compute_strategy_argument_errors():
    ds = bridge.range(4)
    with pytest.raises(ValueError, match="needs a callable class"):
        ds.map_batches(lambda b: b, compute=bridge.ActorPoolStrategy(size=1))
    with pytest.raises(ValueError, match="both compute"):
        ds.map_batches(AddConst, compute=bridge.ActorPoolStrategy(size=1), concurrency=1)
    with pytest.raises(ValueError, match="min_size"):
        bridge.ActorPoolStrategy(min_size=3, max_size=1)
    assert bridge.ActorPoolStrategy(min_size=1, max_size=4).concurrency() == (1, 4)
    assert bridge.ActorPoolStrategy(size=3).concurrency() == 3


# ------------------------------------------------------------------ aggregates without on=


@pytest.mark.timeout(120)
def test_whole_dataset_aggregates_over_every_numeric_column():
    ds = bridge.from_items([{"a": 1, "b": 2.0, "s": "x"}, {"a": 3, "b": 4.0, "s": "y"}])
    assert ds.sum() == {"sum(a)": 4, "sum(b)": 6.0}  # strings skipped (Ray Data raises on them)
    assert ds.mean() == {"mean(a)": 2.0, "mean(b)": 3.0}
    assert ds.min() == {"min(a)": 1, "min(b)": 2.0, "min(s)": "x"}
    assert ds.std() == {"std(a)": pytest.approx(2 ** 0.5), "std(b)": pytest.approx(2 ** 0.5)}
    assert ds.sum(["a", "b"]) == {"sum(a)": 4, "sum(b)": 6.0}
    assert ds.sum(["a"]) == 4 and bridge.range(4).sum() == 6  # one column: the value itself
    assert ds.filter(lambda r: False).sum() == {"sum(a)": None, "sum(b)": None}


@pytest.mark.timeout(180)
def test_groupby_aggregates_without_on_and_groupby_none():
    ds = bridge.from_items([{"k": 1, "a": 1, "b": 2.0}, {"k": 1, "a": 3, "b": 4.0}, {"k": 2, "a": 5, "b": 1.0}])
    assert ds.groupby("k").mean().take_all() == [{"k": 1, "mean(a)": 2.0, "mean(b)": 3.0},
                                                 {"k": 2, "mean(a)": 5.0, "mean(b)": 1.0}]
    assert ds.groupby(None).count().take_all() == [{"count()": 3}]
    assert ds.groupby(None).sum("a").take_all() == [{"sum(a)": 9}]
    assert ds.groupby(None).map_groups(lambda g: {"n": [len(g)]}).take_all() == [{"n": 3}]


@pytest.mark.timeout(120)
def test_abs_max_quantile_unique():
    ds = bridge.from_items([{"x": -5}, {"x": 3}, {"x": 1}])
    assert ds.aggregate(bridge.AbsMax("x"), bridge.Quantile("x"), bridge.Unique("x")) == {
        "abs_max(x)": 5, "quantile(x)": 1.0, "unique(x)": [-5, 3, 1]}
    four = bridge.from_items([{"x": v} for v in (-5, 1, 3, 10)])
    assert four.aggregate(bridge.Quantile("x", q=0.25)) == {"quantile(x)": -0.5}
    nulls = bridge.from_items([{"x": None}, {"x": 3.0}, {"x": 1.0}])
    assert nulls.aggregate(bridge.Quantile("x")) == {"quantile(x)": 2.0}
    assert nulls.aggregate(bridge.Quantile("x", ignore_nulls=False)) == {"quantile(x)": None}
    grouped = bridge.from_items([{"k": 1, "a": 1, "b": 2.0}, {"k": 1, "a": -3, "b": 4.0}, {"k": 2, "a": 5, "b": 1.0}])
    grouped = grouped.repartition(3)
    assert grouped.groupby("k").aggregate(bridge.AbsMax("a"), bridge.Quantile("b")).take_all() == [
        {"k": 1, "abs_max(a)": 3, "quantile(b)": 3.0}, {"k": 2, "abs_max(a)": 5, "quantile(b)": 1.0}]


class GroupTotal:
    def __init__(self, offset: int) -> None:
        self.offset = offset

    def __call__(self, group: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return {"k": group["k"][:1], "total": np.array([group["a"].sum() + self.offset])}


@pytest.mark.timeout(180)
def test_map_groups_default_is_pandas_and_takes_actor_arguments():
    ds = bridge.from_items([{"k": k, "a": a} for k, a in [(1, 1), (2, 5), (1, 3)]], override_num_blocks=2)
    kinds = ds.groupby("k").map_groups(lambda g: {"t": [type(g).__name__]}).take_all()
    assert kinds == [{"t": "DataFrame"}, {"t": "DataFrame"}]  # Ray Data 2.60 hands pandas by default
    out = ds.groupby("k").map_groups(GroupTotal, batch_format="numpy", fn_constructor_args=(100,), concurrency=1)
    assert out.take_all() == [{"k": 1, "total": 104}, {"k": 2, "total": 105}]
    via_compute = ds.groupby("k").map_groups(GroupTotal, batch_format="numpy", fn_constructor_args=(0,),
                                             compute=bridge.ActorPoolStrategy(size=1))
    assert via_compute.take_all() == [{"k": 1, "total": 4}, {"k": 2, "total": 5}]


# ------------------------------------------------------------------ zero_copy_batch


def _increment(batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    batch["x"] += 1
    return batch


class Doubler:
    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        batch["x"] *= 2
        return batch


@pytest.mark.timeout(180)
def test_zero_copy_batch_false_hands_writable_arrays():
    ds = bridge.from_arrow(pa.table({"x": [1, 2, 3]}))
    assert [r["x"] for r in ds.map_batches(_increment, zero_copy_batch=False).take_all()] == [2, 3, 4]
    assert [r["x"] for r in ds.map_batches(Doubler, zero_copy_batch=False).take_all()] == [2, 4, 6]
    with pytest.raises(bridge.UserCodeError, match="read-only"):  # zero-copy views of Arrow, as in Ray Data
        ds.map_batches(_increment).take_all()
    assert ds.take_all() == [{"x": 1}, {"x": 2}, {"x": 3}]  # the source blocks are untouched


# ------------------------------------------------------------------ repartition, from_blocks, zip, filter, columns


@pytest.mark.timeout(120)
def test_repartition_by_target_rows_per_block():
    ds = bridge.range(10, override_num_blocks=3).repartition(target_num_rows_per_block=3)
    assert [m.num_rows for b in ds.iter_internal_ref_bundles() for m in b.metas] == [3, 3, 3, 1]
    assert [r["id"] for r in ds.take_all()] == list(range(10))
    with pytest.raises(ValueError, match="exactly one of"):
        bridge.range(10).repartition(2, target_num_rows_per_block=3)


@pytest.mark.timeout(120)
def test_from_blocks_keeps_each_block():
    pd = pytest.importorskip("pandas")
    ds = bridge.from_blocks([pa.table({"a": [1, 2]}), pd.DataFrame({"a": [3]})])
    assert ds.num_blocks() == 2 and ds.take_all() == [{"a": 1}, {"a": 2}, {"a": 3}]
    with pytest.raises(TypeError, match="block 0"):
        bridge.from_blocks([[1, 2]])


@pytest.mark.timeout(120)
def test_zip_of_several_datasets():
    out = bridge.range(3).zip(bridge.range(3, override_num_blocks=2), bridge.from_items([{"y": i} for i in "abc"]))
    assert out.take_all() == [{"id": 0, "id_1": 0, "y": "a"}, {"id": 1, "id_1": 1, "y": "b"},
                              {"id": 2, "id_1": 2, "y": "c"}]
    assert bridge.range(2).zip(bridge.range(2), bridge.range(2)).columns() == ["id", "id_1", "id_2"]


@pytest.mark.timeout(120)
@pytest.mark.parametrize(("expr", "want"), [
    ("id > 5 and id < 8", [6, 7]),
    ("id == 2 or id >= 8", [2, 8, 9]),
    ("not (id > 1)", [0, 1]),
    ("id in (1, 3)", [1, 3]),
    ("id not in [0, 1, 2, 3, 4, 5, 6, 7]", [8, 9]),
    ("id % 4 == 0", [0, 4, 8]),
    ("2 < id <= 4", [3, 4]),
])
def test_filter_with_a_string_expression(expr, want):
    assert [r["id"] for r in bridge.range(10).filter(expr=expr).take_all()] == want


@pytest.mark.timeout(120)
def test_filter_string_on_strings_and_nulls():
    ds = bridge.from_items([{"s": "a", "x": None}, {"s": "b", "x": 1.0}, {"s": "a", "x": 2.0}])
    assert ds.filter(expr="s == 'a' and x is not None").take_all() == [{"s": "a", "x": 2.0}]
    assert ds.filter(expr="x is None").count() == 1
    with pytest.raises(ValueError, match="not supported"):
        ds.filter(expr="len(s) > 1")
    with pytest.raises(ValueError, match="not a valid expression"):
        ds.filter(expr="x >")


@pytest.mark.timeout(120)
def test_columns_fetch_if_missing():
    lazy = bridge.range(3).map(lambda r: r)
    assert lazy.columns(fetch_if_missing=False) is None
    assert lazy.columns() == ["id"]
    assert bridge.range(3).materialize().columns(fetch_if_missing=False) == ["id"]
    # What the plan knows without running is not "missing".
    assert bridge.range(3).select_columns(["id"]).columns(fetch_if_missing=False) == ["id"]


# ------------------------------------------------------------------ input files and paths


def _parquet_files(tmp_path, n=3):
    import pyarrow.parquet as pq

    paths = []
    for i in range(n):
        path = tmp_path / f"part-{i}.parquet"
        pq.write_table(pa.table({"x": pa.array([i, i + 10], pa.int64()), "y": ["a", "b"]}), path)
        paths.append(str(path))
    return paths


def test_input_files_names_every_file_once_through_maps_unions_and_materialize(tmp_path):
    paths = _parquet_files(tmp_path)
    csv = tmp_path / "more.csv"
    csv.write_text("x,y\n7,c\n")
    ds = bridge.read_parquet(str(tmp_path), file_extensions=["parquet"])
    assert ds.input_files() == paths
    assert ds.map_batches(lambda b: b).filter(lambda r: r["x"] > 0).input_files() == paths
    assert ds.map_batches(lambda b: b).materialize().input_files() == paths
    assert sorted(bridge.read_csv(str(csv)).union(ds).input_files()) == sorted([str(csv), *paths])
    assert bridge.range(5).input_files() == [] and bridge.from_items([{"a": 1}]).input_files() == []


def test_read_parquet_include_paths_adds_a_string_path_column(tmp_path):
    paths = _parquet_files(tmp_path)
    ds = bridge.read_parquet(str(tmp_path), include_paths=True)
    assert ds.schema().names == ["x", "y", "path"] and ds.schema().field("path").type == pa.string()
    rows = ds.take_all()
    assert [(r["x"], r["path"]) for r in rows] == [(x, p) for i, p in enumerate(paths) for x in (i, i + 10)]
    # Projections may name it, alone or with file columns, in any order.
    assert bridge.read_parquet(str(tmp_path), include_paths=True, columns=["path", "y"]).take(1) == [
        {"path": paths[0], "y": "a"}]
    assert ds.select_columns(["path"]).count() == 6
    assert bridge.read_parquet(str(tmp_path)).schema().names == ["x", "y"]


def test_read_parquet_include_paths_refuses_a_file_column_named_path(tmp_path):
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"path": ["a"]}), tmp_path / "p.parquet")
    with pytest.raises(bridge.errors.BridgeError, match="already have a column named 'path'"):
        bridge.read_parquet(str(tmp_path), include_paths=True)
