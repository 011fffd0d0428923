"""Spark handoff, both directions: raybridge vs Ray Data + RayDP vs Spark's own Arrow ``toPandas``.

Data: N rows x (int64, double, string, 16-float array).  ``from_spark`` times a cached Spark
DataFrame becoming a Dataset held in the object store; ``to_spark`` times a materialised Dataset
becoming a Spark DataFrame, counted in Spark.  RayDP runs with the Java 17 options it needs
(``raybridge_adapters.spark_adapter.JAVA17_OPTIONS``), else it crashes on this stack.

``BENCHMARK`` is the ``from_spark`` direction; ``BENCHMARK_TO_SPARK`` the other;
``BENCHMARK_TO_SPARK_SMALL`` the other for 100,000 rows in 8 blocks (~3 MB), where a fixed cost per
action shows; ``BENCHMARKS`` lists them.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from typing import Any

from integration.bench.registry import Benchmark

SIZES = {"small": 1_000_000, "full": 10_000_000}
PARTITIONS = {"small": 8, "full": 32}


def _local_spark() -> Any:
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable
    return (SparkSession.builder.master("local[2]").appName("bench-spark")
            .config("spark.driver.memory", "6g").config("spark.ui.enabled", "false")
            .config("spark.driver.maxResultSize", "0")  # 10M rows collect > the 1g default, for every contender
            .config("spark.sql.execution.arrow.pyspark.enabled", "true").getOrCreate())


def _raydp_spark() -> Any:
    import bridge

    # One executor with one core leaves Ray a CPU, as a user sharing a 2-core machine would.
    return bridge.init_spark("bench-raydp", num_executors=1, executor_cores=1, executor_memory="4g",
                             configs={"spark.ui.enabled": "false", "spark.driver.memory": "4g",
                                      "spark.driver.maxResultSize": "0"})


def _spark_frame(spark: Any, scale: str) -> Any:
    n, parts = SIZES[scale], PARTITIONS[scale]
    floats = ", ".join(f"cast(id * {i + 1} as float)" for i in range(16))
    df = spark.range(0, n, numPartitions=parts).selectExpr(
        "id", "id * 0.5 as x", "concat('user-', cast(id as string)) as s", f"array({floats}) as v")
    df.cache().count()
    return df


def _arrow_table(scale: str) -> Any:
    return _arrow_rows(SIZES[scale])


def _arrow_rows(n: int) -> Any:
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(0)
    ids = np.arange(n, dtype=np.int64)
    values = rng.random(n * 16, dtype=np.float32)
    return pa.table({
        "id": ids, "x": ids * 0.5, "s": pa.array([f"user-{i}" for i in range(n)]),
        "v": pa.FixedSizeListArray.from_arrays(pa.array(values), 16).cast(pa.list_(pa.float32())),
    })


def _timed(work: Callable[[], int], expected: int) -> float:
    t = time.perf_counter()
    rows = work()
    elapsed = time.perf_counter() - t
    assert rows == expected, f"expected {expected} rows, got {rows}"
    return elapsed


# ---------------------------------------------------------------- Spark -> object store
def _from_rb(scale: str) -> Callable[[], float]:
    import bridge

    df = _spark_frame(_local_spark(), scale)
    return lambda: _timed(lambda: bridge.from_spark(df).count(), SIZES[scale])


def _from_rb_map_in_arrow(scale: str) -> Callable[[], float]:
    import bridge

    df = _spark_frame(_local_spark(), scale)
    return lambda: _timed(lambda: bridge.from_spark(df, method="map_in_arrow").count(), SIZES[scale])


def _from_rb_on_raydp(scale: str) -> Callable[[], float]:
    import bridge

    df = _spark_frame(_raydp_spark(), scale)
    return lambda: _timed(lambda: bridge.from_spark(df).count(), SIZES[scale])


def _from_raydp(scale: str) -> Callable[[], float]:
    import ray.data

    df = _spark_frame(_raydp_spark(), scale)
    return lambda: _timed(lambda: ray.data.from_spark(df).materialize().count(), SIZES[scale])


def _from_to_pandas(scale: str) -> Callable[[], float]:
    df = _spark_frame(_local_spark(), scale)
    return lambda: _timed(lambda: len(df.toPandas()), SIZES[scale])


# ---------------------------------------------------------------- object store -> Spark
def _to_rb(scale: str) -> Callable[[], float]:
    import bridge

    spark = _local_spark()
    ds = bridge.from_arrow(_arrow_table(scale), override_num_blocks=PARTITIONS[scale])
    return lambda: _timed(lambda: ds.to_spark(spark).count(), SIZES[scale])


def _to_rb_copy(scale: str) -> Callable[[], float]:
    """The frame that owns its data (the choice where executors cannot reach Ray): Arrow batches decoded
    in the JVM."""
    import bridge

    spark = _local_spark()
    ds = bridge.from_arrow(_arrow_table(scale), override_num_blocks=PARTITIONS[scale])
    return lambda: _timed(lambda: ds.to_spark(spark, method="copy").count(), SIZES[scale])


def _to_rb_on_raydp(scale: str) -> Callable[[], float]:
    import bridge

    spark = _raydp_spark()
    ds = bridge.from_arrow(_arrow_table(scale), override_num_blocks=PARTITIONS[scale])
    return lambda: _timed(lambda: ds.to_spark(spark).count(), SIZES[scale])


def _to_raydp(scale: str) -> Callable[[], float]:
    import ray.data

    spark = _raydp_spark()
    ds = ray.data.from_arrow(_arrow_table(scale)).repartition(PARTITIONS[scale]).materialize()
    return lambda: _timed(lambda: ds.to_spark(spark).count(), SIZES[scale])


def _to_create_from_pandas(scale: str) -> Callable[[], float]:
    spark = _local_spark()
    pdf = _arrow_table(scale).to_pandas()
    return lambda: _timed(lambda: spark.createDataFrame(pdf).count(), SIZES[scale])


# ---------------------------------------------------------------- a small Dataset -> Spark
SMALL_ROWS, SMALL_BLOCKS = 100_000, 8


def _small_to_rb(method: str) -> Callable[[str], Callable[[], float]]:
    def setup(scale: str) -> Callable[[], float]:
        import bridge

        spark = _local_spark()
        ds = bridge.from_arrow(_arrow_rows(SMALL_ROWS), override_num_blocks=SMALL_BLOCKS).materialize()
        return lambda: _timed(lambda: ds.to_spark(spark, method=method).count(), SMALL_ROWS)

    return setup


def _small_to_raydp(scale: str) -> Callable[[], float]:
    import ray.data

    spark = _raydp_spark()
    ds = ray.data.from_arrow(_arrow_rows(SMALL_ROWS)).repartition(SMALL_BLOCKS).materialize()
    return lambda: _timed(lambda: ds.to_spark(spark).count(), SMALL_ROWS)


def _small_create_from_pandas(scale: str) -> Callable[[], float]:
    spark = _local_spark()
    pdf = _arrow_rows(SMALL_ROWS).to_pandas()
    return lambda: _timed(lambda: spark.createDataFrame(pdf).count(), SMALL_ROWS)


_PARAMS = {s: f"{n:,} rows x (int64, double, string, 16 x float32 array)" for s, n in SIZES.items()}

BENCHMARK = Benchmark(
    name="spark_from", title="Spark DataFrame -> object store (from_spark)", unit="s",
    contenders={"raybridge": _from_rb, "raybridge_map_in_arrow": _from_rb_map_in_arrow,
                 "raybridge_on_raydp": _from_rb_on_raydp,
                "ray_data_raydp": _from_raydp, "spark_topandas_arrow": _from_to_pandas},
    params=_PARAMS, goals={"ray_data_raydp": 3.0},
)

BENCHMARK_TO_SPARK = Benchmark(
    name="spark_to", title="object store -> Spark DataFrame (to_spark)", unit="s",
    contenders={"raybridge": _to_rb, "raybridge_copy": _to_rb_copy, "raybridge_on_raydp": _to_rb_on_raydp,
                "ray_data_raydp": _to_raydp, "spark_createdataframe_pandas": _to_create_from_pandas},
    params=_PARAMS, goals={"ray_data_raydp": 3.0},
)

BENCHMARK_TO_SPARK_SMALL = Benchmark(
    name="spark_to_small", title="a small Dataset -> Spark DataFrame (to_spark), counted", unit="s",
    contenders={"raybridge": _small_to_rb("auto"), "raybridge_object_store": _small_to_rb("object_store"),
                "ray_data_raydp": _small_to_raydp, "spark_createdataframe_pandas": _small_create_from_pandas},
    params={s: f"{SMALL_ROWS:,} rows x (int64, double, string, 16 x float32 array), {SMALL_BLOCKS} blocks"
            for s in SIZES},
)

BENCHMARKS = [BENCHMARK, BENCHMARK_TO_SPARK, BENCHMARK_TO_SPARK_SMALL]

