"""Spark on Ray (RayDP): init_spark -> from_spark -> stop_spark -> the Dataset lives on -> to_spark.

One RayDP cluster for the module (one executor, one core, so Ray keeps a CPU for itself).
"""

from __future__ import annotations

import os
import sys

import pytest

import bridge

pytest.importorskip("pyspark")
pytest.importorskip("raydp")
pytestmark = [pytest.mark.spark, pytest.mark.slow]

N = 20_000


@pytest.fixture(scope="module")
def ray_spark():
    from pyspark import SparkContext

    if SparkContext._active_spark_context is not None:
        SparkContext._active_spark_context.stop()
    spark = bridge.init_spark("raybridge-on-ray", num_executors=1, executor_cores=1, executor_memory="600M",
                              configs={"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "4"})
    spark.sparkContext.setLogLevel("ERROR")
    yield spark
    bridge.stop_spark()  # idempotent: the test below stops it first


def test_dataset_outlives_spark_on_ray_and_goes_back_to_a_new_session(ray_spark):
    from pyspark.sql import SparkSession

    assert ray_spark.sparkContext.master.startswith("ray://")
    df = ray_spark.range(0, N, numPartitions=3).selectExpr(
        "id", "cast(id % 7 as string) as k", "id * 0.5 as x", "array(cast(id as float), 1.0f) as v")
    ds = bridge.from_spark(df, parallelism=3)
    assert ds.num_blocks() == 3
    bridge.stop_spark()
    assert _no_active_spark_context()

    # Blocks are owned by this driver, not by the (now gone) executors.
    assert ds.count() == N
    total = sum(int(b["id"].sum()) for b in ds.iter_batches(batch_size=4096))
    assert total == N * (N - 1) // 2
    assert ds.map_batches(lambda b: {"x2": b["x"] * 2}).take(2) == [{"x2": 0.0}, {"x2": 1.0}]

    os.environ["PYSPARK_PYTHON"] = sys.executable
    fresh = SparkSession.builder.master("local[1]").appName("after-ray").config("spark.ui.enabled", "false") \
        .getOrCreate()
    try:
        back = ds.to_spark(fresh, method="object_store")  # (small: "auto" would copy)
        assert back.count() == N
        row = back.where("id = 10").collect()[0]
        assert (row["k"], row["x"], row["v"]) == ("3", 5.0, [10.0, 1.0])
    finally:
        fresh.stop()
    # The blocks Spark read from the object store are let go once their SparkContext has stopped.
    import ray

    from raybridge_adapters import spark_adapter

    holder, _ = spark_adapter._block_holder()
    assert ray.get(holder.release.remote([])) >= 1
    spark_adapter._release_stopped()
    assert ray.get(holder.release.remote([])) == 0


def _no_active_spark_context() -> bool:
    from pyspark import SparkContext

    return SparkContext._active_spark_context is None
