"""A frame larger than spark.driver.maxResultSize still converts (partition by partition), and a
forced Arrow collection says which setting to raise."""

from __future__ import annotations

import os
import sys

import pytest

import bridge
from bridge.errors import BridgeError

pytest.importorskip("pyspark")


@pytest.fixture(scope="module")
def small_result_spark():
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable
    if SparkContext._active_spark_context is not None:
        SparkContext._active_spark_context.stop()
    session = (SparkSession.builder.master("local[2]").appName("raybridge-max-result-size")
               .config("spark.driver.maxResultSize", "1m").config("spark.ui.enabled", "false").getOrCreate())
    yield session
    session.stop()


def test_larger_than_max_result_size_falls_back_to_streaming_partitions(small_result_spark):
    n = 1_000_000
    df = small_result_spark.range(n).selectExpr("id", "cast(id as string) as s").repartition(20)
    with pytest.warns(UserWarning, match="maxResultSize"):
        ds = bridge.from_spark(df)
    assert ds.count() == n
    assert ds.sum("id") == n * (n - 1) // 2
    assert ds.schema().names == ["id", "s"]


def test_forced_arrow_collection_names_the_setting(small_result_spark):
    df = small_result_spark.range(1_000_000).selectExpr("id", "cast(id as string) as s")
    with pytest.raises(BridgeError, match="maxResultSize") as info:
        bridge.from_spark(df, method="arrow_collect")
    assert "spark.driver.maxResultSize" in str(info.value).split("Hint:")[1]


def test_one_partition_larger_than_max_result_size_names_the_setting(small_result_spark):
    """Fetched a partition at a time, one partition alone over the limit raised a raw Py4JJavaError with a
    Java stack: the partitions are read as the Dataset is built, outside the error naming above."""
    df = small_result_spark.range(0, 200_000, 1, 8).selectExpr("id", "repeat('x', 10) as s")
    for method in ("auto", "map_in_arrow"):
        with pytest.raises(BridgeError, match="maxResultSize") as info:
            bridge.from_spark(df, method=method, parallelism=1)
        hint = str(info.value).split("Hint:")[1]
        assert "spark.driver.maxResultSize" in hint and "repartition" in hint
        assert "method='auto'" not in hint  # (what just failed)
