"""``Dataset.with_column(name, expr)``: Ray Data expressions, pyarrow expressions and strings.

Ray Data expressions give Ray Data 2.60's values and types (compared with a real Ray Data run on the
same rows), except where Ray Data loses a value: an int overflow wraps there and raises here, and a
comparison of an int beyond 2**53 with a float fails there and is exact here.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import bridge
from bridge.errors import BridgeError, BridgeTypeError, BridgeValueError, SchemaMismatchError

expressions = pytest.importorskip("ray.data.expressions")
col, lit = expressions.col, expressions.lit

T = pa.table({"x": pa.array([7, -7, None, 6], pa.int64()), "z": pa.array([1, 2, 3, 4], pa.int64()),
              "f": [1.5, -2.5, None, 3.0], "u8": pa.array([1, 2, 3, 25], pa.uint8()),
              "s": ["a", None, "b", "c"], "b": [True, None, False, True]})
BIG = 2**53 + 1


def _ray_cases() -> dict[str, object]:
    return {
        "div": col("x") / 2, "floordiv": col("x") // 2, "mod": col("x") % 3, "mod_neg": col("x") % -3,
        "fmod": col("f") % -2, "ffloordiv": col("f") // 2, "fdiv0": col("f") / 0, "div_float": col("x") / 1.5,
        "u8_add": col("u8") + 10, "eq_none": col("x") == None,  # noqa: E711 - Ray Data's own spelling
        "concat": col("s") + "z", "rconcat": "z" + col("s"), "is_in": col("x").is_in([7, None]),
        "not_in": col("x").not_in([7]), "and": col("b") & True, "or": col("b") | False, "not": ~col("b"),
        "is_null": col("x").is_null(), "is_not_null": col("s").is_not_null(), "lit_int": lit(5),
        "lit_str": lit("q"), "lit_div": lit(1) / lit(2), "lit_mod": lit(7) % lit(2), "gt_float": col("x") > 2.5,
        "f_eq_int": col("f") == 1, "rsub": 1 - col("x"), "alias": (col("x") + 1).alias("other"),
        "mixed": col("x") * col("f"), "same": col("x"), "chain": (col("x") + col("z")) / (col("z") + 1),
        "cmp_cols": col("x") <= col("z"), "ne": col("s") != "a",
    }


def _ray_data_table(table: pa.Table, cases: dict[str, object]) -> pa.Table:
    import ray
    import ray.data

    rds = ray.data.from_arrow(table)
    for name, expr in cases.items():
        rds = rds.with_column(name, expr)
    return pa.concat_tables(ray.get(rds.to_arrow_refs()))


def _ours(table: pa.Table, cases: dict[str, object]) -> pa.Table:
    ds = bridge.from_arrow(table)
    for name, expr in cases.items():
        ds = ds.with_column(name, expr)
    return ds.to_arrow()


def test_ray_data_expressions_match_ray_data():
    cases = _ray_cases()
    theirs, ours = _ray_data_table(T, cases), _ours(T, cases)
    assert ours.column_names == theirs.column_names
    for name in ours.column_names:
        assert ours.schema.field(name).type == theirs.schema.field(name).type, name
        assert ours.column(name).to_pylist() == theirs.column(name).to_pylist(), name


def test_replacing_a_column_keeps_its_place_as_ray_data():
    cases = {"x": col("x") * 10, "new": col("z") - 1}
    theirs, ours = _ray_data_table(T, cases), _ours(T, cases)
    assert ours.column_names == theirs.column_names == [*T.column_names, "new"]
    assert ours.column("x").to_pylist() == theirs.column("x").to_pylist() == [70, -70, None, 60]


def test_int64_beyond_2_53_stays_exact():
    t = pa.table({"a": pa.array([BIG, -BIG, 2**61, None], pa.int64())})
    rows = (bridge.from_arrow(t).with_column("p", col("a") + 1).with_column("q", "a * 2 - 1")
            .with_column("r", pc.field("a") - 1).with_column("gt", col("a") > 2.5)
            .with_column("eq", col("a") == 2**53).with_column("d", col("a") / 3).to_arrow())
    assert rows.column("p").to_pylist() == [BIG + 1, -BIG + 1, 2**61 + 1, None]
    assert rows.column("q").to_pylist() == [2 * BIG - 1, -2 * BIG - 1, 2**62 - 1, None]
    assert rows.column("r").to_pylist() == [BIG - 1, -BIG - 1, 2**61 - 1, None]
    assert rows.column("gt").to_pylist() == [True, False, True, None]  # Ray Data: "Integer value ... not in range"
    assert rows.column("eq").to_pylist() == [False, False, False, None]
    assert rows.column("d").to_pylist() == [BIG // 3, -(BIG // 3), 2**61 // 3, None]
    assert rows.schema.field("d").type == pa.int64()


def test_string_expressions_have_python_meaning():
    out = (bridge.from_arrow(T).with_column("half", "x / 2").with_column("fl", "x // 2").with_column("m", "x % 3")
           .with_column("k", "3").with_column("t", "'t'").with_column("none", "x is None")
           .with_column("cond", "x > 5 and s == 'a'").with_column("sum", "x * 2 + z").to_arrow())
    assert out.column("half").to_pylist() == [3.5, -3.5, None, 3.0]
    assert out.column("fl").to_pylist() == [3, -4, None, 3]
    assert out.column("m").to_pylist() == [1, 2, None, 0]
    assert out.schema.field("k").type == pa.int64() and out.column("k").to_pylist() == [3] * 4
    assert out.column("t").to_pylist() == ["t"] * 4
    assert out.column("none").to_pylist() == [False, False, True, False]
    assert out.column("cond").to_pylist() == [True, False, False, False]  # Kleene: null and False is False
    assert out.column("sum").to_pylist() == [15, -12, None, 16]


def test_pyarrow_expressions():
    out = bridge.from_arrow(T).with_column("y", pc.field("x") * 2 + pc.field("z")).with_column(
        "c", pc.scalar(1)).to_arrow()
    assert out.column("y").to_pylist() == [15, -12, None, 16] and out.schema.field("y").type == pa.int64()
    assert out.column("c").to_pylist() == [1, 1, 1, 1]


def test_pyarrow_float32_narrowing_is_refused():
    with pytest.raises(BridgeTypeError, match="narrowed a float literal") as info:
        bridge.from_arrow(pa.table({"x": [16777215, 1]})).with_column("y", pc.field("x") * 1.5).take_all()
    assert "Hint:" in str(info.value)


def test_nulls_propagate():
    out = _ours(T, {"a": col("x") + col("z"), "b2": col("s") + "!", "c": "x - z", "d": pc.field("x") * 2})
    for name in ("a", "b2", "c", "d"):
        assert out.column(name).null_count == 1, name


def test_dictionary_column_alone_stays_dictionary():
    t = pa.table({"d": pa.array(["a", "b", "a"]).dictionary_encode()})
    out = bridge.from_arrow(t).with_column("e", col("d")).with_column("j", col("d") + "!").to_arrow()
    assert pa.types.is_dictionary(out.schema.field("e").type)
    assert out.column("j").to_pylist() == ["a!", "b!", "a!"]


def _hinted(err: BaseException) -> str:
    text = str(err)
    assert "Hint:" in text
    return text


@pytest.mark.parametrize("expr", [col("nope") + 1, "nope * 2", pc.field("nope") + 1])
def test_unknown_column_raises_at_the_call(expr):
    with pytest.raises(SchemaMismatchError) as info:
        bridge.from_arrow(T).with_column("y", expr)
    assert "'nope'" in _hinted(info.value)


def test_lazy_where_the_schema_is_unknown():
    ds = bridge.from_arrow(T).map_batches(lambda b: b).with_column("y", col("nope") * 2)  # nothing runs
    with pytest.raises(SchemaMismatchError) as info:
        ds.take_all()
    assert "'nope'" in _hinted(info.value)


def test_overflow_raises_where_ray_data_wraps():
    with pytest.raises(BridgeValueError, match="overflow") as info:
        bridge.from_arrow(pa.table({"a": [2**62]})).with_column("y", col("a") * 2).take_all()
    _hinted(info.value)


def test_types_without_an_operation_raise_at_the_call():
    with pytest.raises(BridgeTypeError) as info:
        bridge.from_arrow(T).with_column("y", col("s") * 2)
    _hinted(info.value)


def test_udf_and_other_kinds_are_refused_with_a_hint():
    datatype = pytest.importorskip("ray.data.datatype")

    @expressions.udf(return_dtype=datatype.DataType.int64())
    def plus_one(c):
        return pc.add(c, 1)

    for expr, kind in [(plus_one(col("x")), "UDFExpr (plus_one)"), (col("x").abs(), "PyArrowComputeUDFExpr")]:
        with pytest.raises(BridgeValueError) as info:
            bridge.from_arrow(T).with_column("y", expr)
        text = _hinted(info.value)
        assert kind in text and "map_batches" in text


@pytest.mark.parametrize(("expr", "kind", "words"), [
    (5, BridgeTypeError, "expr must be"), ("x +", BridgeValueError, "not a valid expression"),
    (col("x") + 2**64, BridgeValueError, "beyond int64"), (col("x").is_in(col("z")), BridgeValueError, "is_in"),
])
def test_bad_expressions_are_our_errors(expr, kind, words):
    with pytest.raises(kind) as info:
        bridge.from_arrow(T).with_column("y", expr)
    assert words in _hinted(info.value)


def test_errors_are_bridge_errors_from_tasks():
    with pytest.raises(BridgeError):
        bridge.from_arrow(pa.table({"a": [1]})).map_batches(lambda b: b).with_column("y", col("a") / 0).take_all()


def test_a_literal_no_arrow_integer_holds_is_refused_with_a_hint():
    with pytest.raises(BridgeValueError, match="no Arrow type holds") as err:
        bridge.range(2).with_column("y", "2**70").take_all()
    assert "2.0**70" in str(err.value)
    assert bridge.range(2).with_column("y", "2.0**70").take_all() == [{"id": 0, "y": 2.0**70}, {"id": 1, "y": 2.0**70}]
