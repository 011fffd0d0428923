"""Spark mistakes a new user makes in the first hour get the right cause at once."""

from __future__ import annotations

import time

import pytest

import bridge
from bridge.errors import BridgeError

pyspark = pytest.importorskip("pyspark")


def test_from_spark_after_stop_says_the_session_was_stopped():
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    if SparkContext._active_spark_context is not None:
        SparkContext._active_spark_context.stop()
    spark = (SparkSession.builder.master("local[1]").appName("stopped")
             .config("spark.ui.enabled", "false").getOrCreate())
    df = spark.range(10)
    spark.stop()
    with pytest.raises(BridgeError, match="SparkSession of this DataFrame was stopped") as info:
        bridge.from_spark(df)
    assert "PYSPARK_PYTHON" not in str(info.value)
    assert "create a new SparkSession" in str(info.value)
    # The other way: Py4J's "Cannot call methods on a stopped SparkContext", with a hint about the frame's job.
    with pytest.raises(BridgeError, match="to_spark: the SparkSession was stopped") as info:
        bridge.range(3).to_spark(spark)
    assert "create a new SparkSession" in str(info.value)


def test_init_spark_asking_more_cpus_than_ray_has_fails_at_once():
    pytest.importorskip("raydp")
    import ray

    bridge.range(1).count()  # Ray is up
    want = int(ray.cluster_resources()["CPU"]) * 4
    t0 = time.time()
    with pytest.raises(BridgeError, match="RayDP could not start Spark on Ray") as info:
        bridge.init_spark("too-big", num_executors=want, executor_cores=1, executor_memory="500m")
    assert time.time() - t0 < 10
    assert f"= {want} CPUs are needed" in str(info.value)
