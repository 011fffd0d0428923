"""Mistakes of a first hour refused at the call, naming the call the user made (session 52)."""

from __future__ import annotations

import pytest

import bridge
from bridge.errors import BridgeError


def test_exporter_argument_errors_name_the_exporter_called():
    """``to_torch(batch_size=0)`` said ``iter_batches: batch_size ...`` and ``to_torch(device='bogus')``
    ``iter_torch_batches(device='bogus')``: calls the user never made."""
    pytest.importorskip("torch")
    ds = bridge.from_items([{"x": 1.0, "y": 2}] * 4)
    cases = [
        (lambda: ds.to_torch(batch_size=0), r"^to_torch: batch_size must be a positive number"),
        (lambda: ds.to_torch(device="bogus"), r"^to_torch\(device='bogus'\): torch knows no such device"),
        (lambda: ds.to_torch(dtypes={"x": "float"}), r"^to_torch: dtypes must be"),
        (lambda: ds.to_torch(prefetch_batches=-1), r"^to_torch: prefetch_batches must be"),
        (lambda: ds.iter_torch_batches(batch_size=-1), r"^iter_torch_batches: batch_size must be"),
        (lambda: ds.iter_torch_batches(device="bogus"), r"^iter_torch_batches\(device='bogus'\)"),
        (lambda: ds.iter_batches(drop_last="yes"), r"^iter_batches: drop_last must be True or False"),
    ]
    for call, message in cases:
        with pytest.raises(BridgeError, match=message):
            call()


def test_tf_argument_errors_name_the_tf_call():
    pytest.importorskip("tensorflow")
    ds = bridge.from_items([{"x": 1.0, "y": 2}] * 4)
    with pytest.raises(BridgeError, match=r"^to_tf: batch_size must be a positive number"):
        ds.to_tf("x", "y", batch_size=0)
    with pytest.raises(BridgeError, match=r"^iter_tf_batches: drop_last must be True or False; got 'y'"):
        ds.iter_tf_batches(drop_last="y")
    with pytest.raises(BridgeError, match=r"^iter_tf_batches: local_shuffle_seed must be an int"):
        ds.iterator().iter_tf_batches(local_shuffle_seed="s")


def test_union_blocks_take_the_union_schema_where_the_plan_knows_it():
    """``schema()`` said int64 and column order ['x', 'y'], but a union's batches came int32 then int64,
    and the second input's with its own column order (Ray Data 2.60 the same): a training loop's tensors
    changed dtype between batches."""
    import pyarrow as pa

    a = bridge.from_arrow(pa.table({"x": pa.array([1, 2], pa.int32()), "y": ["a", "b"]}))
    b = bridge.from_arrow(pa.table({"y": ["c", None], "x": pa.array([3, 2**40], pa.int64())}))
    nulls = bridge.from_arrow(pa.table({"x": pa.nulls(1), "y": ["d"]}))
    u = a.union(b, nulls)
    schema = u.schema()
    assert schema.field("x").type == pa.int64() and schema.names == ["x", "y"]
    batches = list(u.iter_batches(batch_size=None, batch_format="pyarrow"))
    assert [t.schema.names for t in batches] == [["x", "y"]] * 3
    assert all(t.schema.field("x").type == pa.int64() for t in batches)
    assert u.to_arrow().to_pydict() == {"x": [1, 2, 3, 2**40, None], "y": ["a", "b", "c", None, "d"]}
    assert [b["x"].dtype.name for b in u.iter_batches(batch_size=None)] == ["int64", "int64", "object"]
    # (the block of a null: an int column with a null is None in an object array, as anywhere else)


def test_read_parquet_with_schema_keeps_the_hive_partition_columns(tmp_path):
    """``read_parquet(schema=<the files' columns>)`` dropped ``year=2024/`` without a word (Ray Data keeps it):
    pyarrow reads exactly the schema it is given."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    for year in (2024, 2025):
        (tmp_path / f"year={year}").mkdir()
        pq.write_table(pa.table({"a": [1, 2], "b": ["x", "y"]}), tmp_path / f"year={year}" / "f.parquet")
    ds = bridge.read_parquet(str(tmp_path), schema=pa.schema([("a", pa.float64())]))
    assert ds.schema().names == ["a", "year"]
    assert sorted((r["year"], r["a"]) for r in ds.take_all()) == [(2024, 1.0), (2024, 2.0), (2025, 1.0), (2025, 2.0)]
    typed = bridge.read_parquet(str(tmp_path), schema=pa.schema([("year", pa.int64()), ("b", pa.string())]))
    assert typed.schema() == pa.schema([("year", pa.int64()), ("b", pa.string())])
    assert sorted(r["year"] for r in typed.take_all()) == [2024, 2024, 2025, 2025]


def test_ray_datas_compute_strategies_are_taken():
    """``compute=ray.data.ActorPoolStrategy(size=1)`` -- the first thing a Ray Data user types -- was refused as
    "compute must be an ActorPoolStrategy ... got ActorPoolStrategy(...)"."""
    import ray.data

    from bridge.compute import ActorPoolStrategy, TaskPoolStrategy, _from_ray_data

    class Double:
        def __call__(self, b):
            return {"id": b["id"] * 2}

    for strategy in (ray.data.ActorPoolStrategy(size=1), ray.data.ActorPoolStrategy(min_size=1, max_size=2)):
        assert bridge.range(4).map_batches(Double, compute=strategy).take_all() == [{"id": i * 2} for i in range(4)]
    assert bridge.range(3).map_batches(lambda b: b, compute=ray.data.TaskPoolStrategy(size=2)).count() == 3
    fixed = _from_ray_data(ray.data.ActorPoolStrategy(size=3))
    assert isinstance(fixed, ActorPoolStrategy) and fixed.concurrency() == 3
    scaling = _from_ray_data(ray.data.ActorPoolStrategy(min_size=2, max_size=5))
    assert scaling.concurrency() == (2, 5)
    assert _from_ray_data(ray.data.ActorPoolStrategy()).max_size is None  # Ray's inf: up to the cluster
    assert isinstance(_from_ray_data(ray.data.TaskPoolStrategy(size=2)), TaskPoolStrategy)
    with pytest.raises(BridgeError, match="needs a callable class; got a function"):
        bridge.range(3).map_batches(lambda b: b, compute=ray.data.ActorPoolStrategy(size=1))


def test_max_calls_is_refused_at_the_call():
    """``map_batches(fn, max_calls=1)`` was taken, then failed in the run with Ray's own "Setting 'max_calls'
    is not supported in '.options()'", naming no operator."""
    with pytest.raises(bridge.BridgeTypeError, match=r"MapBatches\(<lambda>\): max_calls=1 is not taken"):
        bridge.range(4).map_batches(lambda b: b, max_calls=1)


def test_read_parquet_filter_that_does_not_apply_names_the_read_and_the_columns(tmp_path):
    """pyarrow's own "No match for FieldRef.Name(zz)" / "no kernel matching input types (string, int8)" named
    neither read_parquet nor filter=, nor the columns there are."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"a": [1, 2], "b": ["x", "y"]}), tmp_path / "f.parquet")
    for bad, why in ((pc.field("zz") > 1, "No match for FieldRef"), ([("zz", ">", 1)], "No match for FieldRef"),
                     (pc.field("b") > 1, "no kernel matching input types"), (pc.field("a"), "must evaluate to bool")):
        with pytest.raises(BridgeError, match=rf"(?s)read_parquet\(filter=.*does not apply to the files' columns: .*{why}"
                                              r".*Hint: the files have a: int64, b: string"):
            bridge.read_parquet(str(tmp_path), filter=bad)
    assert bridge.read_parquet(str(tmp_path), filter=pc.field("b") == "y").take_all() == [{"a": 2, "b": "y"}]


def test_ray_data_keywords_we_do_not_take_are_refused_with_the_way_here(tmp_path):
    """Python's bare "TypeError: read_csv() got an unexpected keyword argument 'delimiter'" named no way
    forward; Ray Data's keywords are named with what does that here, a misspelling with the nearest name."""
    ds = bridge.range(10)
    (tmp_path / "a.csv").write_text("x;y\n1;2\n")
    cases = [
        (lambda: bridge.read_csv(str(tmp_path), delimiter=";"), r"read_csv: unexpected keyword argument\(s\) "
         r"\['delimiter'\].*Hint: delimiter=: pass parse_options=pyarrow.csv.ParseOptions"),
        (lambda: bridge.range(10, parallelism=2), r"range: .*\['parallelism'\].*pass override_num_blocks="),
        (lambda: bridge.read_parquet(str(tmp_path), parallelism=2), r"read_parquet: .*pass override_num_blocks="),
        (lambda: ds.select_columns(["id"], concurrency=1), r"select_columns: .*\['concurrency'\]; it takes \['cols'\]"),
        (lambda: ds.random_shuffle(seed=1, num_cpus=1), r"random_shuffle: .*num_cpus=: this step's tasks"),
        (lambda: ds.split(2, locality_hints=[1, 2]), r"split: .*not placed by node"),
        (lambda: ds.groupby("id", num_partitions=2), r"groupby: .*sizes its reduce side"),
        (lambda: ds.schema(fetch_if_missing=True), r"schema: .*\['fetch_if_missing'\]; it takes \[\]"),
        (lambda: ds.iter_batches(prefetch_blocks=2), r"iter_batches: .*pass prefetch_batches="),
        (lambda: ds.take(limt=3), r"take: .*did you mean limit=\?"),
        (lambda: ds.sort("id", decending=True), r"sort: .*did you mean descending=\?"),
    ]
    for call, message in cases:
        with pytest.raises(bridge.BridgeTypeError, match=rf"(?s)^{message}"):
            call()
    assert isinstance(bridge.BridgeTypeError("x"), TypeError)  # an `except TypeError` still catches it
    parse = __import__("pyarrow.csv", fromlist=["ParseOptions"]).ParseOptions(delimiter=";")
    assert bridge.read_csv(str(tmp_path), parse_options=parse).take_all() == [{"x": 1, "y": 2}]


def test_to_tf_keywords_are_checked():
    pytest.importorskip("tensorflow")
    with pytest.raises(bridge.BridgeTypeError, match=r"(?s)^to_tf: .*\['additional_columns'\]; it takes "
                                                      r"\['batch_size', .*name those columns in feature_columns="):
        bridge.range(3).to_tf("id", additional_columns=["x"])


def test_union_of_inputs_with_other_columns_still_names_them():
    """A review found the union's conform step failing with a bare KeyError where an input's blocks hold
    other columns than the plan's merged schema of them (the union's own check names the columns)."""
    import pyarrow as pa

    mixed = bridge.from_arrow([pa.table({"a": [1]}), pa.table({"a": [2], "b": ["x"]})])
    other = bridge.from_arrow(pa.table({"b": ["y"], "a": [3]}))
    with pytest.raises(bridge.SchemaMismatchError, match="columns"):
        other.union(mixed).take_all()


def test_split_and_shard_iterators_check_their_keywords_and_name_the_call():
    """``ds.iterator().iter_batches(prefetch_blocks=2)`` -- the shard iterator Ray Train users call -- raised a
    bare TypeError; a split's ``iter_torch_batches(batch_size=0)`` said ``iter_batches:``."""
    pytest.importorskip("torch")
    ds = bridge.range(8)
    with pytest.raises(bridge.BridgeTypeError, match=r"(?s)^iter_batches: .*pass prefetch_batches="):
        ds.iterator().iter_batches(prefetch_blocks=2)
    split = ds.streaming_split(1)[0]
    with pytest.raises(bridge.BridgeTypeError, match=r"(?s)^iter_torch_batches: .*\['prefetch_blocks'\].*"
                                                     r"pass prefetch_batches="):
        split.iter_torch_batches(prefetch_blocks=2)
    with pytest.raises(BridgeError, match=r"^iter_torch_batches: batch_size must be a positive number"):
        split.iter_torch_batches(batch_size=0)
    with pytest.raises(bridge.BridgeTypeError, match=r"(?s)^to_torch: .*\['prefetch_blocks'\].*prefetch_blocks=: pass"):
        ds.to_torch(prefetch_blocks=2)
    assert sorted(int(i) for b in split.iter_torch_batches(batch_size=3) for i in b["id"]) == list(range(8))


def test_read_parquet_with_schema_keeps_partition_columns_of_a_pyarrow_factory(tmp_path):
    import pyarrow as pa
    import pyarrow.dataset as pds
    import pyarrow.parquet as pq

    for year in (2024, 2025):
        (tmp_path / f"year={year}").mkdir()
        pq.write_table(pa.table({"x": [1]}), tmp_path / f"year={year}" / "f.parquet")
    ds = bridge.read_parquet(str(tmp_path), schema=pa.schema([("x", pa.int64())]),
                             partitioning=pds.partitioning(flavor="hive"))
    assert sorted((r["year"], r["x"]) for r in ds.take_all()) == [(2024, 1), (2025, 1)]
