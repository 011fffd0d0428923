"""Spark <-> Dataset on a plain local SparkSession (a real JVM; one session for this module)."""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import os
import sys

import numpy as np
import pyarrow as pa
import pytest

import bridge
from bridge.errors import BridgeError, UnsupportedTypeError

pyspark = pytest.importorskip("pyspark")
pytestmark = pytest.mark.spark

SESSION_TZ = "America/New_York"


@pytest.fixture(scope="module")
def spark():
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable
    if SparkContext._active_spark_context is not None:
        SparkContext._active_spark_context.stop()
    session = (SparkSession.builder.master("local[2]").appName("raybridge-spark-local")
               .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "4")
               .config("spark.sql.session.timeZone", SESSION_TZ).getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def _every_type_frame(spark):
    from pyspark.sql import types as T

    schema = T.StructType([
        T.StructField("id", T.LongType()),
        T.StructField("b", T.BooleanType()), T.StructField("i8", T.ByteType()), T.StructField("i16", T.ShortType()),
        T.StructField("i32", T.IntegerType()), T.StructField("i64", T.LongType()),
        T.StructField("f32", T.FloatType()), T.StructField("f64", T.DoubleType()),
        T.StructField("dec", T.DecimalType(20, 4)), T.StructField("s", T.StringType()),
        T.StructField("bin", T.BinaryType()), T.StructField("d", T.DateType()),
        T.StructField("ts", T.TimestampType()), T.StructField("ntz", T.TimestampNTZType()),
        T.StructField("arr", T.ArrayType(T.LongType())),
        T.StructField("m", T.MapType(T.StringType(), T.DoubleType())),
        T.StructField("st", T.StructType([T.StructField("x", T.IntegerType()),
                                          T.StructField("tags", T.ArrayType(T.StringType()))])),
        T.StructField("nested", T.ArrayType(T.StructType([T.StructField("k", T.StringType())]))),
    ])
    ts = datetime.datetime(2024, 3, 10, 1, 30, 0, 123456)
    full = (1, True, -8, -16, -32, 2**40, 1.5, 2.25, decimal.Decimal("1234567890.1234"), "héllo", b"\x00\x01",
            datetime.date(2024, 2, 29), ts, ts, [1, None, 3], {"a": 1.0, "b": None}, (7, ["x", None]), [("v",), None])
    nulls = (2, *([None] * (len(schema.fields) - 1)))
    empties = (3, False, 0, 0, 0, 0, float("nan"), float("-inf"), decimal.Decimal("0.0000"), "", b"",
               datetime.date(1970, 1, 1), datetime.datetime(1969, 12, 31, 23, 59, 59), datetime.datetime(1, 1, 1),
               [], {}, (None, []), [])
    return spark.createDataFrame([full, nulls, empties], schema).repartition(2)


def _rows(df):
    return sorted((r.asDict(recursive=True) for r in df.collect()), key=lambda r: r["id"])


def test_every_type_round_trips_and_keeps_values(spark):
    df = _every_type_frame(spark)
    ds = bridge.from_spark(df)
    schema = ds.schema()
    assert ds.count() == 3
    assert schema.field("ts").type == pa.timestamp("us", tz=SESSION_TZ)  # session time zone honoured
    assert schema.field("ntz").type == pa.timestamp("us")
    assert schema.field("dec").type == pa.decimal128(20, 4)
    assert pa.types.is_map(schema.field("m").type) and pa.types.is_struct(schema.field("st").type)
    by_id = {r["id"]: r for r in ds.take_all()}
    assert by_id[1]["dec"] == decimal.Decimal("1234567890.1234")
    assert by_id[1]["arr"] == [1, None, 3] and by_id[2]["arr"] is None
    assert all(v is None for k, v in by_id[2].items() if k != "id")
    back = ds.to_spark(spark)
    assert [(f.name, f.dataType) for f in back.schema.fields] == [(f.name, f.dataType) for f in df.schema.fields]
    got, want = _rows(back), _rows(df)
    assert np.isnan(got[2].pop("f32")) and np.isnan(want[2].pop("f32"))
    assert got == want


def test_both_export_methods_give_the_same_rows_in_order(spark):
    df = spark.range(0, 5000, numPartitions=3).selectExpr("id", "cast(id as string) as s", "id * 0.5 as x",
                                                          "array(id, null) as a")
    by_ipc = bridge.from_spark(df, method="map_in_arrow")
    assert by_ipc.num_blocks() == 3  # one block per partition
    a = by_ipc.to_arrow()
    b = bridge.from_spark(df, method="arrow_collect").to_arrow()
    assert a.equals(b)
    assert a.column("id").to_pylist() == list(range(5000))  # partition order kept
    assert bridge.from_spark(df, method="map_in_arrow", parallelism=2).num_blocks() == 2
    with pytest.raises(BridgeError, match="unknown method"):
        bridge.from_spark(df, method="pandas")


def test_parallelism_sets_the_number_of_blocks(spark):
    df = spark.range(0, 1000, numPartitions=2)
    assert bridge.from_spark(df, parallelism=4).num_blocks() == 4
    assert bridge.from_spark(df, parallelism=1).num_blocks() == 1
    with pytest.raises(BridgeError, match="parallelism"):
        bridge.from_spark(df, parallelism=0)


def test_vectors_become_fixed_shape_tensors_and_come_back(spark):
    from pyspark.ml.linalg import DenseVector, Vectors

    df = spark.createDataFrame([(0, Vectors.dense([1.0, 2.0, 3.0])), (1, Vectors.sparse(3, [2], [5.0])),
                                (2, None)], ["id", "v"])
    ds = bridge.from_spark(df)
    assert ds.schema().field("v").type == pa.fixed_shape_tensor(pa.float64(), [3])
    rows = sorted(ds.take_all(), key=lambda r: r["id"])
    np.testing.assert_array_equal(rows[0]["v"], [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(rows[1]["v"], [0.0, 0.0, 5.0])  # sparse densified
    assert rows[2]["v"] is None
    back = _rows(ds.to_spark(spark))
    assert type(back[0]["v"]) is DenseVector
    assert [r["v"] for r in back] == [DenseVector([1.0, 2.0, 3.0]), DenseVector([0.0, 0.0, 5.0]), None]


def test_vectors_of_different_sizes_raise_naming_the_column(spark):
    from pyspark.ml.linalg import Vectors

    df = spark.createDataFrame([(Vectors.dense([1.0]),), (Vectors.dense([1.0, 2.0]),)], ["feat"]).coalesce(1)
    with pytest.raises(UnsupportedTypeError, match="'feat'.*vector_to_array|vector_to_array.*feat"):
        bridge.from_spark(df)


def test_unsupported_spark_type_names_the_column(spark):
    df = spark.sql("select 1 as id, interval '3' month as months")
    with pytest.raises(UnsupportedTypeError, match="'months'") as info:
        bridge.from_spark(df)
    assert "Hint:" in str(info.value)


def test_empty_frame_keeps_its_schema(spark):
    df = spark.sql("select cast(1 as bigint) as id, 'x' as s, timestamp'2024-01-01 00:00:00' as ts").limit(0)
    ds = bridge.from_spark(df)
    assert ds.count() == 0
    assert ds.schema().names == ["id", "s", "ts"]
    assert ds.schema().field("ts").type == pa.timestamp("us", tz=SESSION_TZ)
    back = ds.to_spark(spark)
    assert back.count() == 0 and back.schema.names == ["id", "s", "ts"]


def test_empty_partitions_and_odd_column_names(spark):
    df = spark.range(0, 100, numPartitions=8).where("id >= 95").selectExpr("id as `a.b`", "id * 2 as `with space`")
    ds = bridge.from_spark(df)
    assert ds.columns() == ["a.b", "with space"]
    assert sorted(r["a.b"] for r in ds.take_all()) == [95, 96, 97, 98, 99]
    back = ds.to_spark(spark)
    assert back.columns == ["a.b", "with space"]
    assert sorted(r["with space"] for r in back.collect()) == [190, 192, 194, 196, 198]


def test_bridge_types_follow_the_written_rules_into_spark(spark):
    from pyspark.sql import types as T

    table = pa.table({
        "u64": pa.array([2**64 - 1, 0], pa.uint64()),
        "u8": pa.array([255, 1], pa.uint8()),
        "ls": pa.array(["a", None], pa.large_string()),
        "cat": pa.array(["x", "y"]).dictionary_encode(),
        "ts_ns": pa.array([1_000, 2_000], pa.timestamp("ns", tz="UTC")),
    })
    ds = bridge.from_arrow(table)
    out = ds.to_spark(spark)
    types = {f.name: f.dataType for f in out.schema.fields}
    assert types == {"u64": T.DecimalType(20, 0), "u8": T.ShortType(), "ls": T.StringType(),
                     "cat": T.StringType(), "ts_ns": T.TimestampType()}
    rows = out.collect()
    assert rows[0]["u64"] == decimal.Decimal(2**64 - 1) and rows[0]["u8"] == 255 and rows[1]["ls"] is None

    tensors = bridge.range_tensor(3, shape=(2, 2)).to_spark(spark)
    assert tensors.schema["data"].dataType == T.ArrayType(T.ArrayType(T.LongType()))
    assert tensors.orderBy("data").collect()[2]["data"] == [[2, 2], [2, 2]]

    lossy = bridge.from_arrow(pa.table({"t": pa.array([1], pa.timestamp("ns"))}))
    with pytest.raises(UnsupportedTypeError, match="'t'"):
        lossy.to_spark(spark)


def test_not_a_spark_frame_says_what_it_got():
    with pytest.raises(BridgeError, match="pyspark.sql.DataFrame; got builtins.list"):
        bridge.from_spark([1, 2, 3])


# ---------------------------------------------------------------- to_spark's two ways
def _table(n: int) -> pa.Table:
    return pa.table({"id": pa.array(range(n), pa.int64()), "s": [f"v{i}" for i in range(n)],
                     "u": pa.array([i % 200 for i in range(n)], pa.uint8())})  # uint8: cast on the driver


@pytest.mark.parametrize("method", ["object_store", "copy"])
def test_to_spark_methods_give_the_same_rows(spark, method):
    ds = bridge.from_arrow(_table(1000), override_num_blocks=4)
    with pytest.warns(Warning, match="'u'"):
        out = ds.to_spark(spark, method=method)
    rows = sorted(out.collect(), key=lambda r: r["id"])
    assert [(r["id"], r["s"], r["u"]) for r in rows] == [(i, f"v{i}", i % 200) for i in range(1000)]
    assert out.rdd.getNumPartitions() == 4


def test_object_store_frame_is_the_default_here_above_the_copy_share_and_outlives_the_dataset_object(
        spark, monkeypatch):
    import gc

    from raybridge_adapters import spark_adapter

    assert spark_adapter._executors_share_ray(spark)  # local[...]: Spark's workers can reach Ray
    monkeypatch.setattr(spark_adapter, "_COPY_HEAP_SHARE", 0)  # every Dataset above the share copied
    ds = bridge.range(5000, override_num_blocks=5).map_batches(lambda b: {"id": b["id"], "sq": b["id"] ** 2})
    held = len(spark_adapter._held)
    out = ds.to_spark(spark)
    assert len(spark_adapter._held) == held + 1  # "auto" took the object store: its blocks are pinned
    del ds
    gc.collect()
    for _ in range(2):  # every action reads the blocks again: the holder keeps them
        assert out.count() == 5000
        assert out.where("id = 70").collect()[0]["sq"] == 4900


def test_auto_copies_a_dataset_small_against_the_driver_heap(spark):
    """Small: copied into the JVM (actions run there, no Python task per block at each, nothing pinned)."""
    import gc

    from raybridge_adapters import spark_adapter

    ds = bridge.range(5000, override_num_blocks=5).map_batches(lambda b: {"id": b["id"], "sq": b["id"] ** 2})
    held = len(spark_adapter._held)
    out = ds.to_spark(spark)
    assert len(spark_adapter._held) == held and bridge.release_spark_blocks(out) == 0  # a copy: nothing held
    pairs = [(r, m) for b in ds.materialize().iter_internal_ref_bundles() for r, m in zip(b.refs, b.metas)]
    schema = pairs[0][1].schema
    assert spark_adapter._copy_is_small(spark, pairs, schema)
    unknown = [(r, dataclasses.replace(m, size_bytes=None)) for r, m in pairs]
    assert not spark_adapter._copy_is_small(spark, unknown, schema)
    heap = spark.sparkContext._jvm.java.lang.Runtime.getRuntime().maxMemory()
    big = [(r, dataclasses.replace(m, size_bytes=heap // 8 + 1)) for r, m in pairs[:1]]
    assert not spark_adapter._copy_is_small(spark, big, schema)
    # A dictionary column is decoded for Spark, to any size (10 distinct 10 kB strings x 1M rows: 4 MB -> 10 GB)
    coded = pa.schema([("d", pa.list_(pa.dictionary(pa.int8(), pa.string())))])
    assert not spark_adapter._copy_is_small(spark, pairs, coded)
    del ds
    gc.collect()
    assert out.count() == 5000 and out.where("id = 70").collect()[0]["sq"] == 4900


def test_to_spark_rejects_an_unknown_method(spark):
    with pytest.raises(ValueError, match="method must be one of .*'copy'.*got 'jvm'"):
        bridge.range(3).to_spark(spark, method="jvm")


@pytest.mark.parametrize("method", ["object_store", "copy"])
def test_to_spark_driver_holds_one_block_at_a_time(spark, method):
    """The driver never holds the whole Dataset (it held every block's IPC stream before 'copy' streamed)."""
    import threading

    import psutil

    rows, width = 160_000, 256  # 160k x 256 float32 = 156 MiB in 16 blocks of ~10 MiB
    ds = bridge.range_tensor(rows, shape=(width,), override_num_blocks=16).map_batches(
        lambda b: {"data": b["data"].astype(np.float32)}).materialize()
    data = ds.size_bytes()
    me = psutil.Process()

    def private() -> int:  # the object store's pages the driver maps are shared, not the driver's own
        mem = me.memory_info()
        return mem.rss - mem.shared

    base = private()
    peak = [base]
    done = threading.Event()

    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], private())
            done.wait(0.02)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        with pytest.warns(Warning, match="'data'"):  # tensor -> nested arrays
            out = ds.to_spark(spark, method=method)
        assert out.count() == rows
    finally:
        done.set()
        sampler.join()
    assert peak[0] - base < data / 2, f"driver grew {(peak[0] - base) / 2**20:.0f} MiB for {data / 2**20:.0f} MiB"


def _python_without_pyarrow() -> str:
    """Another interpreter of this Python version that has no pyarrow (the system one, here)."""
    import subprocess

    for candidate in ("/usr/bin/python3", "/bin/python3", "/usr/local/bin/python3"):
        if not os.path.exists(candidate) or os.path.realpath(candidate) == os.path.realpath(sys.executable):
            continue
        probe = subprocess.run([candidate, "-c", "import sys; print('%d.%d' % sys.version_info[:2]); import pyarrow"],
                               capture_output=True, text=True)
        if probe.stdout.strip() == f"{sys.version_info[0]}.{sys.version_info[1]}" and probe.returncode != 0:
            return candidate
    pytest.skip("no interpreter of this Python version without pyarrow on this machine")


@pytest.mark.parametrize("method", ["object_store", "copy"])
def test_to_spark_runs_its_workers_in_this_python_when_the_session_points_elsewhere(spark, method):
    """A session built without PYSPARK_PYTHON runs `python3` from PATH; ours must still find pyarrow."""
    sc = spark.sparkContext
    before = sc.pythonExec
    sc.pythonExec = _python_without_pyarrow()  # what the session would use had PYSPARK_PYTHON been unset
    try:
        out = bridge.range(100, override_num_blocks=2).to_spark(spark, method=method)
        assert sc.pythonExec != sys.executable  # the user's setting is left as it was
        assert out.count() == 100
        assert bridge.from_spark(out, method="map_in_arrow").count() == 100
    finally:
        sc.pythonExec = before


@pytest.mark.parametrize("method", ["object_store", "copy"])
def test_to_spark_of_no_rows_keeps_the_schema_and_needs_no_worker(spark, method):
    ds = bridge.from_arrow(pa.table({"x": pa.array([], pa.int64()), "s": pa.array([], pa.string())}))
    out = ds.to_spark(spark, method=method)
    assert out.count() == 0 and out.columns == ["x", "s"]


@pytest.mark.parametrize("method", ["object_store", "copy"])
def test_to_spark_refuses_lost_nanoseconds_at_the_call_on_both_ways(spark, method):
    ds = bridge.from_arrow(pa.table({"t_ns": pa.array([1, 2], pa.timestamp("ns"))}))
    with pytest.warns(Warning), pytest.raises(UnsupportedTypeError, match="'t_ns'"):
        ds.to_spark(spark, method=method)


def test_release_spark_blocks_lets_go_of_one_frame_or_all(spark):
    from raybridge_adapters import spark_adapter

    ds = bridge.range(3000, override_num_blocks=3)
    out = ds.to_spark(spark, method="object_store")
    key = spark_adapter._frame_keys[out]
    kept = out.localCheckpoint()  # Spark holds these rows itself
    derived = out.where("id < 10")
    assert bridge.release_spark_blocks(out) == 1
    assert key not in [k for _, k in spark_adapter._held]
    assert bridge.release_spark_blocks(out) == 0  # already let go
    assert kept.count() == 3000
    with pytest.raises(Exception, match="were released"):
        derived.count()
    assert ds.to_spark(spark, method="object_store").count() == 3000  # a new frame pins the blocks again
    assert bridge.release_spark_blocks(ds.to_spark(spark, method="copy")) == 0  # Spark owns a copy
    ds.to_spark(spark, method="object_store")
    assert bridge.release_spark_blocks() >= 2
    assert spark_adapter._held == []
    with pytest.raises(ValueError, match="takes a DataFrame that to_spark returned"):
        bridge.release_spark_blocks(ds)


@pytest.mark.parametrize("method", ["object_store", "copy"])
def test_rows_without_columns_keep_their_count_both_ways(spark, method):
    # Spark's Arrow batches of no columns carry no rows: 3 rows came out as 0 without a word.
    assert bridge.range(3).select_columns([]).to_spark(spark, method=method).count() == 3
    for read in ("map_in_arrow", "arrow_collect"):
        ds = bridge.from_spark(spark.range(4).select(), method=read)
        assert ds.count() == 4 and ds.schema().names == []


def _typed_rows_dataset() -> bridge.Dataset:
    """Strings, binaries, NaN and nulls, decimals, instants, dates, lists, maps and structs in three blocks."""
    n = 30
    table = pa.table({
        "id": pa.array(range(n), pa.int64()),
        "s": pa.array([None if i % 7 == 0 else f"wert-{i}-\u00e9\u4e2d" for i in range(n)]),
        "b": pa.array([bytes([i, 0, 255]) if i % 5 else None for i in range(n)], pa.binary()),
        "f": pa.array([float("nan") if i % 6 == 0 else (None if i % 9 == 0 else i / 3) for i in range(n)]),
        "dec": pa.array([decimal.Decimal(f"{i}.{i:04d}") for i in range(n)], pa.decimal128(20, 4)),
        "ts": pa.array([1_600_000_000_000_000 + i * 1_234_567 for i in range(n)], pa.timestamp("us", tz="UTC")),
        "d": pa.array([18_000 + i for i in range(n)], pa.date32()),
        "arr": pa.array([[i, None, -i] if i % 4 else [] for i in range(n)], pa.list_(pa.int64())),
        "m": pa.array([[(f"k{i}", i * 0.5)] if i % 3 else None for i in range(n)], pa.map_(pa.string(), pa.float64())),
        "st": pa.array([{"x": i, "tags": [f"t{i}", None]} for i in range(n)],
                       pa.struct([("x", pa.int32()), ("tags", pa.list_(pa.string()))])),
    })
    return bridge.from_arrow([table.slice(0, 10), table.slice(10, 0), table.slice(10, 7), table.slice(17)])


def _plan(frame) -> str:
    return str(frame._jdf.queryExecution().executedPlan().toString())


def _item_rows(frame) -> list:
    return [tuple(sorted(r.asDict().items())) for r in sorted(frame.collect(), key=lambda r: r["id"])]


def _same_rows(a: list, b: list) -> bool:
    """Row lists equal, NaN equal to NaN."""
    def norm(v):
        return "NaN" if isinstance(v, float) and v != v else v
    return [[(k, norm(v)) for k, v in r] for r in a] == [[(k, norm(v)) for k, v in r] for r in b]


def test_copy_frames_are_decoded_in_the_jvm_one_partition_per_block(spark):
    """method='copy' sends Arrow batches the JVM decodes itself (no Python worker, no mapInArrow): the same
    rows as the object-store frame, one partition per non-empty block."""
    ds = _typed_rows_dataset()
    copy = ds.to_spark(spark, method="copy")
    assert "MapInArrow" not in _plan(copy) and "Python" not in _plan(copy)
    assert copy.rdd.getNumPartitions() == 3
    store = ds.to_spark(spark, method="object_store")
    got = _item_rows(copy)
    assert _same_rows(got, _item_rows(store))
    first = dict(got[1])
    assert first["s"] == "wert-1-\u00e9\u4e2d" and first["b"] == bytearray(b"\x01\x00\xff")
    assert first["dec"] == decimal.Decimal("1.0001") and first["arr"] == [1, None, -1]
    assert first["d"] == datetime.date(1970, 1, 1) + datetime.timedelta(days=18_001) and first["m"] == {"k1": 0.5}
    assert first["st"]["x"] == 1 and first["st"]["tags"] == ["t1", None]
    epoch = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
    assert first["ts"].astimezone(datetime.timezone.utc) == epoch + datetime.timedelta(
        microseconds=1_600_000_000_000_000 + 1_234_567)
    assert dict(got[0])["s"] is None and dict(got[0])["f"] != dict(got[0])["f"]  # null and NaN kept apart
    assert dict(got[9])["f"] is None


def test_copy_frames_hold_the_data_once_in_the_driver_heap(spark):
    """Before, each block crossed Python workers as one binary row: a counted 156 MiB frame held ~3.7x its
    size in the driver's heap, and a worker's input thread that ran out of heap left the task waiting for
    good (the test above it hung that way now and then)."""
    rows, width = 64_000, 256  # 62.5 MiB of float32 in 8 blocks
    ds = bridge.range_tensor(rows, shape=(width,), override_num_blocks=8).map_batches(
        lambda b: {"data": b["data"].astype(np.float32)}).materialize()
    runtime = spark._jvm.java.lang.Runtime.getRuntime()

    def heap_used() -> int:
        spark._jvm.java.lang.System.gc()
        return runtime.totalMemory() - runtime.freeMemory()

    before = heap_used()
    with pytest.warns(Warning, match="'data'"):
        out = ds.to_spark(spark, method="copy")
    assert out.count() == rows
    grown = heap_used() - before
    assert grown < 1.6 * ds.size_bytes(), f"the driver's heap grew {grown / 2**20:.0f} MiB"
    first = out.where("data[0] = 63999.0").collect()[0]["data"]
    assert len(first) == width and first[-1] == 63999.0


def test_copy_follows_sparks_large_string_setting(spark):
    """Spark 4 reads the batches as large strings and binaries when spark.sql.execution.arrow.useLargeVarTypes
    is on (the batches carry only buffers: another layout would read as other values); Spark 3.5 keeps the
    plain ones for this path whatever the setting says."""
    key = "spark.sql.execution.arrow.useLargeVarTypes"
    ds = bridge.from_arrow(pa.table({
        "id": [0, 1, 2], "s": ["a", None, "\u00fc" * 40], "b": [b"x", b"", None],
        "ls": pa.array([["p", None], [], None], pa.list_(pa.string())),
        "m": pa.array([[("k", b"v")], None, []], pa.map_(pa.string(), pa.binary())),
    }))
    expected = _item_rows(ds.to_spark(spark, method="object_store"))
    spark.conf.set(key, "true")
    try:
        got = _item_rows(ds.to_spark(spark, method="copy"))
    finally:
        spark.conf.unset(key)
    assert got == expected
    assert dict(got[2])["s"] == "\u00fc" * 40 and dict(got[0])["m"] == {"k": bytearray(b"v")}


def test_copy_falls_back_to_map_in_arrow_without_pysparks_arrow_path(spark, monkeypatch):
    """A pyspark without the internal path createDataFrame uses: the public mapInArrow decoding, same rows."""
    from raybridge_adapters import spark_adapter

    ds = _typed_rows_dataset()
    monkeypatch.setattr(spark_adapter, "_jvm_has", lambda sc, cls, method: False)
    out = ds.to_spark(spark, method="copy")
    assert "MapInArrow" in _plan(out)
    assert out.rdd.getNumPartitions() == 3
    monkeypatch.undo()
    assert _same_rows(_item_rows(out), _item_rows(ds.to_spark(spark, method="copy")))


def test_copy_calls_at_once_leave_the_sessions_settings_as_they_were(spark):
    """Each call sets Spark's local-relation threshold to 0 for its toDataFrame: two at once saved each
    other's 0 and left it for good."""
    import threading

    key = "spark.sql.execution.arrow.localRelationThreshold"
    ds = bridge.range(300, override_num_blocks=3)
    counts, errors = [], []

    def convert():
        try:
            for _ in range(8):
                out = ds.to_spark(spark, method="copy")
                counts.append(out.rdd.getNumPartitions())
        except Exception as err:  # noqa: BLE001 - reported below
            errors.append(err)

    threads = [threading.Thread(target=convert) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and counts == [3] * 24
    assert not spark._jsparkSession.conf().contains(key)  # unset again, not pinned at 0 or at the default
    spark.conf.set(key, "1234")
    try:
        ds.to_spark(spark, method="copy")
        assert spark.conf.get(key) == "1234"
    finally:
        spark.conf.unset(key)


def test_the_arrow_path_is_taken_only_where_the_jvm_has_it(spark):
    """py4j gives a JavaPackage, not an error, for a class name it does not know: the check looks at what came back."""
    from raybridge_adapters.spark_adapter import _jvm_has

    sc = spark.sparkContext
    assert _jvm_has(sc, "PythonSQLUtils", "toDataFrame")
    assert not _jvm_has(sc, "NoSuchSparkUtils", "toDataFrame")
    assert not _jvm_has(sc, "PythonSQLUtils", "noSuchMethod")


def _two_blocks(first, second):
    """A Dataset of two blocks that a function made of two schemas (the first block's 0, the second's 1)."""
    return bridge.range(2, override_num_blocks=2).map_batches(
        lambda b: first if b["id"][0].as_py() == 0 else second, batch_format="pyarrow", batch_size=None)


@pytest.mark.parametrize("method", ["copy", "object_store"])
def test_to_spark_takes_every_blocks_schema_not_the_first_alone(spark, method):
    """to_spark cast every block to the first block's types, unchecked: an int 5 became True, an int 1 the
    string '1', a naive time a UTC instant; blocks of one columns in another order failed inside Spark."""
    mixed = _two_blocks(pa.table({"x": [True]}), pa.table({"x": [5, 0]}))
    with pytest.raises(bridge.SchemaMismatchError, match="to_spark.*bool.*int64"):
        mixed.to_spark(spark, method=method)
    with pytest.raises(bridge.SchemaMismatchError, match="to_spark"):
        _two_blocks(pa.table({"x": ["a"]}), pa.table({"x": [1]})).to_spark(spark, method=method)
    widened = _two_blocks(pa.table({"x": pa.array([1], pa.int32())}), pa.table({"x": [2**40]}))
    df = widened.to_spark(spark, method=method)
    assert df.schema["x"].dataType.simpleString() == "bigint"
    assert sorted(r.x for r in df.collect()) == [1, 2**40]
    floats = _two_blocks(pa.table({"x": [1]}), pa.table({"x": [2.5]})).to_spark(spark, method=method)
    assert sorted(r.x for r in floats.collect()) == [1.0, 2.5]
    reordered = _two_blocks(pa.table({"a": [1], "b": ["x"]}), pa.table({"b": ["y"], "a": [2]}))
    assert sorted(tuple(r) for r in reordered.to_spark(spark, method=method).collect()) == [(1, "x"), (2, "y")]
    fewer = _two_blocks(pa.table({"a": [1]}), pa.table({"a": [2], "b": ["x"]}))
    with pytest.raises(bridge.SchemaMismatchError, match=r"blocks hold different columns \(a block lacks \['b'\]"):
        fewer.to_spark(spark, method=method)  # (it said "the Spark job failed", hinting at the frame's own job)
    # Metadata without schemas (from_block_refs takes them): each block's own schema counts the same.
    import ray

    from bridge.block import BlockMetadata

    refs = [ray.put(pa.table({"x": [True]})), ray.put(pa.table({"x": [5]}))]
    for metas in ([BlockMetadata(1, 1), BlockMetadata(1, 8)],
                  [BlockMetadata(1, 1, schema=pa.schema([("x", pa.bool_())])), BlockMetadata(1, 8)]):
        with pytest.raises(bridge.SchemaMismatchError, match="to_spark.*bool.*int64"):
            bridge.from_block_refs(refs, metas).to_spark(spark, method=method)



def test_to_spark_of_what_is_no_session_says_so(spark):
    """``to_spark("spark")`` or of a SparkContext failed as "the Spark job failed with AttributeError",
    with a hint about the frame's own job."""
    from bridge.errors import BridgeTypeError

    ds = bridge.range(3)
    with pytest.raises(BridgeTypeError, match="to_spark: spark must be a SparkSession; got str"):
        ds.to_spark("spark")
    with pytest.raises(BridgeTypeError, match="got SparkContext"):
        ds.to_spark(spark.sparkContext)


def test_from_spark_of_text_that_is_not_utf8_names_the_column(spark):
    """Spark's strings may hold any bytes, Arrow's not: the column came into the Dataset and failed later with a
    bare UnicodeDecodeError (take_all) or "Wrapping ... failed" (to_pandas), naming no column."""
    df = spark.sql("select 1 as id, cast(x'ff41' as string) as s")
    with pytest.raises(UnsupportedTypeError, match=r"(?s)from_spark: column 's' holds bytes that are not UTF-8.*cast"
                                                   r"\('binary'\)"):
        bridge.from_spark(df)
    kept = bridge.from_spark(spark.sql("select cast(x'ff41' as binary) as s, 'héllo' as t"))
    assert kept.take_all() == [{"s": b"\xffA", "t": "héllo"}]
    nested = spark.sql("select array(cast(x'ff41' as string)) as a")
    with pytest.raises(UnsupportedTypeError, match=r"(?s)column 'a' holds bytes that are not UTF-8.*transform\(a, x "
                                                   r"-> cast\(x as binary\)\)"):
        bridge.from_spark(nested)
    fixed = nested.selectExpr("transform(a, x -> cast(x as binary)) as a")  # the hint's way, as Spark takes it
    assert bridge.from_spark(fixed).take_all() == [{"a": [b"\xffA"]}]


def test_from_spark_of_a_calendar_interval_names_the_column(spark):
    """pyspark 3.5 cannot parse the type itself: its raw PySparkValueError came out of reading df.schema
    (pyspark 4 reads it, and the schema check names the column)."""
    df = spark.sql("select 1 as id, make_interval(1, 2, 3, 4, 5, 6, 7) as c")
    with pytest.raises(UnsupportedTypeError, match=r"(?s)^from_spark: .*'c'.*\binterval\b.*Hint: cast"):
        bridge.from_spark(df)
    nested = spark.sql("select array(make_interval(1, 2, 0, 3, 0, 0, 0)) as iv, interval 1 day as d, 1 as id")
    with pytest.raises(UnsupportedTypeError, match=r"(?s)^from_spark: .*'iv(\[\])?'.*\binterval\b.*Hint: cast") as info:
        bridge.from_spark(nested)
    assert "'d'" not in str(info.value)  # a day-time interval converts (to duration)


@pytest.mark.parametrize("method", ["object_store", "copy"])
def test_to_spark_keeps_the_not_null_flags_from_spark_gave(spark, method):
    """Every column came back nullable (a struct's fields, an array's elements, a map's values too): a frame
    round-tripped through a Dataset no longer had its source's schema (unions, NOT NULL table columns)."""
    df = spark.sql("select id, named_struct('a', id, 'b', cast(null as int)) as s, array(id, 2) as arr, "
                   "map('k', id) as m, if(id > 2, id, null) as n from range(5)")
    assert not df.schema["id"].nullable and not df.schema["arr"].dataType.containsNull  # what Spark declares
    back = bridge.from_spark(df).to_spark(spark, method=method)
    assert back.schema == df.schema
    assert _rows(back) == _rows(df)


@pytest.mark.parametrize("method", ["object_store", "copy"])
def test_to_spark_refuses_nulls_in_a_field_declared_not_null(spark, method):
    """Arrow does not enforce its not-null flag; Spark takes it and failed at the first action with a bare
    IllegalStateException ("Value at index is null"): refused at the call, naming the column."""
    def lying(name, typ, values):
        return bridge.from_arrow(pa.Table.from_arrays([pa.array(values, typ)], schema=pa.schema([
            pa.field(name, typ, nullable=name != "n")])))

    with pytest.raises(UnsupportedTypeError, match=r"(?s)to_spark: column 'n' is declared not null.*1 null.*Hint: "
                                                   r"declare the field nullable"):
        lying("n", pa.int64(), [1, None]).to_spark(spark, method=method)
    with pytest.raises(UnsupportedTypeError, match=r"column 'l\[\]' is declared not null"):
        lying("l", pa.list_(pa.field("item", pa.int64(), False)), [[1, None], [2]]).to_spark(spark, method=method)
    with pytest.raises(UnsupportedTypeError, match=r"column 'm.value' is declared not null"):
        lying("m", pa.map_(pa.string(), pa.field("value", pa.int64(), False)), [[("k", None)]]).to_spark(
            spark, method=method)
    # A null struct's fields hold no values: a not-null field under it is no null to Spark.
    child = pa.field("x", pa.int64(), nullable=False)
    structs = pa.StructArray.from_arrays([pa.array([1, None])], fields=[child], mask=pa.array([False, True]))
    frame = bridge.from_arrow(pa.table({"s": structs})).to_spark(spark, method=method)
    assert not frame.schema["s"].dataType["x"].nullable
    assert [r["s"] for r in frame.collect()] == [(1,), None]
