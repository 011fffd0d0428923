"""to_spark's written-rule conversions each warn once, naming the column, both types and the rule.

The schema-level tests need pyspark's type classes only; the end-to-end ones start a local JVM
(one session for this module, as in test_spark_local.py).
"""

from __future__ import annotations

import decimal
import os
import sys
import warnings

import numpy as np
import pyarrow as pa
import pytest

import bridge
from bridge.errors import ConversionWarning

pyspark = pytest.importorskip("pyspark")
pytestmark = pytest.mark.spark

SESSION_TZ = "UTC"


@pytest.fixture(scope="module")
def spark():
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable
    if SparkContext._active_spark_context is not None:
        SparkContext._active_spark_context.stop()
    session = (SparkSession.builder.master("local[1]").appName("raybridge-spark-conversions")
               .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
               .config("spark.sql.session.timeZone", SESSION_TZ).getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def _conversions(schema: pa.Schema, session_tz: str | None = SESSION_TZ) -> dict[str, list[str]]:
    """Column -> the messages of the ConversionWarnings ``to_spark``'s schema step gives."""
    from raybridge_adapters import spark_types

    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        notes: list[spark_types.Conversion] = []
        spark_types.arrow_to_spark_schema(schema, session_tz=session_tz, conversions=notes)
        spark_types.warn_conversions(notes)
    out: dict[str, list[str]] = {}
    for w in record:
        assert issubclass(w.category, ConversionWarning), w
        out.setdefault(str(w.message).split("'")[1], []).append(str(w.message))
    return out


RULE_CELLS = [
    (pa.uint8(), "smallint", "wider signed"),
    (pa.uint16(), "int", "wider signed"),
    (pa.uint32(), "bigint", "wider signed"),
    (pa.uint64(), "decimal(20,0)", "decimal"),
    (pa.float16(), "float", "float16"),
    (pa.large_string(), "string", "large"),
    (pa.large_binary(), "binary", "large"),
    (pa.binary(4), "binary", "fixed-size"),
    (pa.large_list(pa.int64()), "array<bigint>", "large"),
    (pa.list_(pa.int64(), 3), "array<bigint>", "fixed-size"),
    (pa.date64(), "date", "date64"),
    (pa.timestamp("s"), "timestamp_ntz", "microseconds"),
    (pa.timestamp("ms", tz="UTC"), "timestamp", "microseconds"),
    (pa.timestamp("us", tz="America/New_York"), "timestamp", "session time zone"),
    (pa.duration("ms"), "interval day to second", "microseconds"),
    (pa.dictionary(pa.int32(), pa.string()), "string", "dictionary"),
    (pa.fixed_shape_tensor(pa.float32(), [2, 2]), "array<array<float>>", "tensor"),
]


@pytest.mark.parametrize(("arrow_type", "spark_type", "rule"), RULE_CELLS, ids=[str(c[0]) for c in RULE_CELLS])
def test_each_rule_cell_warns_naming_column_types_and_rule(arrow_type, spark_type, rule):
    got = _conversions(pa.schema([pa.field("col_x", arrow_type), pa.field("ok", pa.int64())]))
    assert list(got) == ["col_x"], got
    [msg] = got["col_x"]
    assert str(arrow_type) in msg and f"Spark {spark_type} " in msg and rule in msg, msg


def test_exact_types_give_no_warning():
    exact = pa.schema([
        ("i64", pa.int64()), ("i8", pa.int8()), ("f32", pa.float32()), ("f64", pa.float64()), ("b", pa.bool_()),
        ("s", pa.string()), ("bin", pa.binary()), ("d", pa.date32()), ("dec", pa.decimal128(20, 4)),
        ("ts", pa.timestamp("us", tz=SESSION_TZ)), ("ntz", pa.timestamp("us")), ("dur", pa.duration("us")),
        ("arr", pa.list_(pa.int64())), ("m", pa.map_(pa.string(), pa.float64())),
        ("st", pa.struct([("x", pa.int32()), ("tags", pa.list_(pa.string()))])), ("null", pa.null()),
        pa.field("vec", pa.fixed_shape_tensor(pa.float64(), [3]), metadata={b"raybridge.spark_udt": b"vector"}),
    ])
    assert _conversions(exact) == {}
    assert _conversions(pa.schema([("ts", pa.timestamp("us", tz="Etc/UTC"))])) == {}  # one zone, two names


def test_nested_conversions_name_the_path_and_each_rule_warns_once_per_column():
    schema = pa.schema([("st", pa.struct([("u", pa.uint8()), ("l", pa.list_(pa.large_string()))])),
                        ("ts", pa.timestamp("ms", tz="Asia/Tokyo"))])
    got = _conversions(schema)
    assert set(got) == {"st.u", "st.l[]", "ts"}
    assert len(got["ts"]) == 2  # unit and zone: two rules, one warning each


def test_to_spark_warns_once_per_column_and_rule_and_exact_columns_stay_silent(spark):
    from pyspark.sql import types as T

    table = pa.table({
        "id": pa.array(range(6), pa.int64()),
        "u8": pa.array([255, 1, 2, 3, 4, 5], pa.uint8()),
        "when_ny": pa.array([0, 1, 2, 3, 4, 5], pa.timestamp("ms", tz="America/New_York")),
    })
    ds = bridge.from_arrow(table).repartition(3)  # several blocks: still one warning per column and rule
    with pytest.warns(ConversionWarning) as record:
        out = ds.to_spark(spark)
    messages = [str(w.message) for w in record if issubclass(w.category, ConversionWarning)]
    assert len([m for m in messages if "'u8'" in m]) == 1
    assert len([m for m in messages if "'when_ny'" in m]) == 2  # ms -> us, New York -> the session zone
    assert not [m for m in messages if "'id'" in m]
    assert any("uint8" in m and "smallint" in m for m in messages)
    assert any("America/New_York" in m and SESSION_TZ in m for m in messages)
    assert {f.name: f.dataType for f in out.schema.fields} == {
        "id": T.LongType(), "u8": T.ShortType(), "when_ny": T.TimestampType()}
    rows = sorted(out.collect(), key=lambda r: r["id"])
    assert [r["u8"] for r in rows] == [255, 1, 2, 3, 4, 5]


@pytest.mark.parametrize("make", [
    lambda: pa.table({"cat_col": pa.array(["x", "y"]).dictionary_encode()}),
    lambda: pa.table({"big_u": pa.array([2**64 - 1, 0], pa.uint64())}),
    lambda: pa.table({"half_f": pa.array(np.array([1.5, 2.0], np.float16))}),
    lambda: pa.table({"big_s": pa.array(["a", None], pa.large_string())}),
], ids=["dictionary", "uint64", "float16", "large_string"])
def test_to_spark_names_the_column_of_each_rule(spark, make):
    table = make()
    name = table.column_names[0]
    with pytest.warns(ConversionWarning, match=f"'{name}'"):
        out = bridge.from_arrow(table).to_spark(spark)
    assert out.count() == 2
    if name == "big_u":
        assert sorted(r[name] for r in out.collect()) == [decimal.Decimal(0), decimal.Decimal(2**64 - 1)]


def test_to_spark_tensor_column_warns_and_int64_gives_no_warning(spark):
    with pytest.warns(ConversionWarning, match=r"'data'.*fixed_shape_tensor.*array<array<bigint>>"):
        bridge.range_tensor(3, shape=(2, 2)).to_spark(spark)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConversionWarning)
        out = bridge.range(5).to_spark(spark)
    assert sorted(r["id"] for r in out.collect()) == list(range(5))


def test_from_spark_and_back_is_silent(spark):
    df = spark.sql("select id, cast(id as int) as i, timestamp'2024-01-01 00:00:00' as ts, "
                   "array(id) as a, named_struct('x', 'y') as st from range(4)")
    ds = bridge.from_spark(df)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConversionWarning)
        back = ds.to_spark(spark)
    assert back.schema.simpleString() == df.schema.simpleString()  # nullability aside
