"""``filter(expr="...")`` on values Arrow cannot take as they are: our errors, or the exact answer.

Arithmetic that overflows int64, a non-boolean expression, ``not`` on a string, int literals beyond
int64 and ``in`` with mixed literal types used to escape as raw Arrow / Python errors (some from
inside a Ray task).  A float literal against an int column beyond 2**24 failed (pyarrow 26's
expression engine casts the column to float32): strings are evaluated with exact comparisons now.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

import bridge
from bridge.errors import BridgeError, BridgeTypeError, BridgeValueError
from bridge.ops.string_expr import parse_filter_expr

F1 = pa.table({"x": [1, 2, None, 7], "s": ["a", None, "", "b"], "f": [1.5, float("nan"), None, -0.0]})
BIG = pa.table({"x": pa.array([1, None, 2**63 - 1, -2**63]), "u": pa.array([1, None, 2**64 - 1, 2**63], pa.uint64()),
                "f": [1.0, None, 2.0**63, 3.0]})
I64 = 9223372036854775808  # 2**63


def _xs(table: pa.Table, expr: str, col: str = "x") -> list:
    return [r[col] for r in bridge.from_arrow(table).filter(expr=expr).take_all()]


def _refused(table: pa.Table, expr: str, kind: type = BridgeError) -> str:
    with pytest.raises(kind) as info:
        bridge.from_arrow(table).filter(expr=expr).take_all()
    text = str(info.value)
    assert "Hint:" in text
    return text


@pytest.mark.parametrize(("values", "expr"), [([2**63 - 1], "x + 1 > 0"), ([2**62], "x * 2 > 0"),
                                              ([-2**63], "x - 1 < 0")])
def test_overflowing_arithmetic_is_our_error(values, expr):
    text = _refused(pa.table({"x": pa.array(values, pa.int64())}), expr, BridgeValueError)
    assert "overflow" in text and "x: int64" in text and "float or decimal" in text


def test_non_boolean_expression_is_our_error():
    text = _refused(F1, "x", BridgeTypeError)
    assert "not a condition" in text and "x: int64" in text


def test_arithmetic_alone_refused_at_the_call():
    with pytest.raises(BridgeValueError, match="not a condition"):
        bridge.from_arrow(F1).filter(expr="x + 1")


def test_not_on_a_string_is_our_error():
    text = _refused(F1, "not s", BridgeTypeError)
    assert "invert" in text and "s: string" in text


def test_mixed_in_literals_refused_at_the_call():
    for expr in ["s in ('a', 1)", "x in (1, 'a')"]:
        with pytest.raises(BridgeValueError, match="mix the types") as info:
            bridge.from_arrow(F1).filter(expr=expr)
        assert "Hint:" in str(info.value)


@pytest.mark.parametrize(("expr", "want"), [
    (f"x > {I64}", []),
    (f"x == {I64}", []),
    (f"x != {I64}", [1, 2**63 - 1, -2**63]),
    (f"x < {I64}", [1, 2**63 - 1, -2**63]),
    (f"x > -{I64 + 1}", [1, 2**63 - 1, -2**63]),
    (f"x in ({I64},)", []),
    (f"x in (1, {I64})", [1]),
    (f"x not in (1, {I64})", [None, 2**63 - 1, -2**63]),
    (f"{I64} > x", [1, 2**63 - 1, -2**63]),
    (f"1 < x < {I64}", [2**63 - 1]),
])
def test_int_literal_beyond_int64_is_exact(expr, want):
    assert _xs(BIG, expr) == want
    python = [v for v in BIG["x"].to_pylist() if v is not None and eval(expr, {}, {"x": v})]
    assert [w for w in want if w is not None] == python


@pytest.mark.parametrize(("expr", "want"), [
    (f"u > {I64}", [2**64 - 1]),
    (f"u == {2**64 - 1}", [2**64 - 1]),
    (f"u >= {I64}", [2**64 - 1, 2**63]),
    (f"u in ({2**64 - 1}, 1)", [1, 2**64 - 1]),
    (f"u > {2**64}", []),
])
def test_int_literal_on_uint64_is_exact(expr, want):
    assert _xs(BIG, expr, "u") == want


@pytest.mark.parametrize("op", ["==", "!=", "<", "<=", ">", ">="])
def test_int_literal_no_double_holds_against_a_float_column_is_exact(op):
    """2**63 + 1 is no double: 2.0**63 < it, == never (was refused; compared through float64 it is 2.0**63)."""
    expr = f"f {op} {I64 + 1}"
    python = [v for v in BIG["f"].to_pylist() if v is not None and eval(expr, {}, {"f": v})]
    assert _xs(BIG, expr, "f") == python


def test_int_literal_beyond_int64_in_arithmetic_is_refused():
    with pytest.raises(BridgeValueError, match="beyond int64"):
        parse_filter_expr(f"x + {I64} > 0")
    # a literal beyond every Arrow type compared with a column still has its exact answer
    assert _xs(BIG, "x < " + "9" * 80) == [1, 2**63 - 1, -2**63]
    assert _xs(BIG, "f > -" + "9" * 400, "f") == [1.0, 2.0**63, 3.0]


def test_division_by_zero_is_our_error():
    text = _refused(F1, "x / 0 > 1", BridgeValueError)
    assert "divide by zero" in text


# ---------------------------------------------------------------- numbers of two kinds, compared exactly
INTS = [None, 0, 1, -1, 5, 2**24 + 1, 2**53 + 1, 2**62, 2**63 - 1, -2**63, 999_999, 1_000_000]
FLOATS = [None, 0.0, -0.0, 1.5, 2.5, float("nan"), float("inf"), -float("inf"), 2.0**63, 2.0**53, 1e300, 9.3e18]
MIXED = pa.table({"x": pa.array(INTS, pa.int64()), "f": pa.array(FLOATS, pa.float64()),
                  "u": pa.array([None, 0, 1, 2**64 - 1, 2**63, 2**63 - 1] * 2, pa.uint64()),
                  "i8": pa.array([None, 0, 1, -128, 127, 5] * 2, pa.int8())})
LITERALS = ["0", "2.5", "-2.5", "1e6", "1e300", "-1e300", "2**63", "2**63-1", "2**64", "-2**63-1",
            "9.223372036854775807e18", "16777216.5", "2**53+1", "2.0**53", "10**400", "0.1", "-0.0"]


@pytest.mark.parametrize("column", ["x", "f", "u", "i8"])
def test_number_comparisons_agree_with_python(column):
    """Every column x literal x operator, both ways round, on the local filter: Python's answer."""
    table = MIXED.select([column])
    checked = 0
    for lit in LITERALS:
        for op in ["<", "<=", ">", ">=", "==", "!="]:
            for expr in (f"{column} {op} {lit}", f"{lit} {op} {column}"):
                got = table.filter(parse_filter_expr(expr).mask(table))[column].to_pylist()
                want = [v for v in table[column].to_pylist()
                        if v is not None and eval(expr, {}, {column: v})]
                assert repr(got) == repr(want), expr
                checked += 1
    assert checked == len(LITERALS) * 12


def test_float_literal_against_ints_beyond_float32():
    """``id < 1e6`` on range(20M) failed: Arrow cast ids to float32 ('Integer value 16777217 not in range')."""
    ds = bridge.range(20_000_000, override_num_blocks=4)
    assert ds.filter(expr="id < 1e6").count() == 1_000_000
    assert ds.filter(expr="id >= 1.9999998e7 or id == 0.5").count() == 2
    assert ds.filter(expr="id * 2 > 3.99999955e7").count() == 2


def test_float_in_an_int_column():
    t = pa.table({"x": pa.array([1, 2, None, 2**53 + 1], pa.int64())})
    assert _xs(t, "x in (2.0, 2.5)") == [2]
    assert _xs(t, "x not in (2.0, 2.5)") == [1, None, 2**53 + 1]
    assert _xs(t, f"x in ({float(2**53)},)") == []  # 2**53 + 1 is not 2.0**53


def test_pyarrow_expression_with_a_float_literal_gets_a_hint():
    """A pyarrow expression still goes through Arrow's engine: its float32 cast is explained."""
    import pyarrow.compute as pc

    with pytest.raises(BridgeTypeError, match="float32") as info:
        bridge.range(20_000_000, override_num_blocks=2).filter(expr=pc.field("id") < 1e6).count()
    assert "as a string" in str(info.value)


def test_literal_arithmetic_errors_at_the_call():
    with pytest.raises(BridgeValueError, match="ZeroDivisionError"):
        bridge.range(3).filter(expr="id > 1 / 0")


@pytest.mark.parametrize(("expr", "kind", "words"), [
    ("y > 1", "SchemaMismatchError", "column 'y'"),
    ("x", "BridgeTypeError", "not a condition"),
    ("s > 1", "BridgeTypeError", "s: string"),
])
def test_expression_that_cannot_hold_on_a_known_schema_raises_at_the_call(expr, kind, words):
    """Materialized data knows its schema: the error comes from filter(), not from a task at count()."""
    ds = bridge.from_arrow(F1)
    with pytest.raises(BridgeError) as info:
        ds.filter(expr=expr)  # nothing consumed
    assert type(info.value).__name__ == kind and words in str(info.value) and "Hint:" in str(info.value)


def test_unknown_schema_still_raises_when_run():
    ds = bridge.range(3).map_batches(lambda b: {"x": b["id"]})  # schema unknown until it runs
    lazy = ds.filter(expr="y > 1")
    with pytest.raises(BridgeError, match="column 'y'"):
        lazy.count()


def test_int_with_float_arithmetic_takes_the_int_as_a_double():
    """Python's ``x / 2`` and ``x * 1.5`` of 2**62 + 1 are floats; Arrow's safe cast refused them."""
    t = pa.table({"x": pa.array([2**62 + 1, 3], pa.int64())})
    assert _xs(t, "x / 2 > 0") == [2**62 + 1, 3]
    assert _xs(t, "x * 1.5 > 4.5") == [2**62 + 1]
    assert _xs(t, "x + 0.5 == 3.5") == [3]


def test_int_column_beyond_2_53_against_a_float_column_is_refused_not_rounded():
    t = pa.table({"a": pa.array([2**53 + 1], pa.int64()), "b": [float(2**53)]})
    text = _refused(t, "a == b", BridgeTypeError)
    assert "a: int64" in text and "as a string" not in text


def test_chained_in_or_is_is_refused():
    for expr in ["x in (-7, 2) > 0", "x is not None > 0"]:
        with pytest.raises(BridgeValueError, match="chains"):
            parse_filter_expr(expr)


def test_a_huge_literal_power_is_refused_not_computed():
    with pytest.raises(BridgeValueError, match="too large"):
        parse_filter_expr("x > 2 ** 10 ** 10")


def test_decimal_column_against_an_int_literal_past_its_digits_is_exact():
    """``d < 10**28`` on decimal128(38, 10) failed: Arrow compares in decimal(39, 10), past 38 digits."""
    from decimal import Decimal as D

    top, low = D("9999999999999999999999999999.9999999999"), D("-9999999999999999999999999999.9999999999")
    table = pa.table({"d": pa.array([low, D("-1.5"), D(0), top, None], pa.decimal128(38, 10))})
    assert _xs(table, "d < 10**28", "d") == [low, D("-1.5"), D(0), top]
    assert _xs(table, "d >= 10**28", "d") == []
    assert _xs(table, "d > -10**28", "d") == [low, D("-1.5"), D(0), top]
    assert _xs(table, "d == 10**40", "d") == []
    assert _xs(table, "d != 10**40", "d") == [low, D("-1.5"), D(0), top]
    assert _xs(table, "d in (0, " + str(10**30) + ")", "d") == [D(0)]
    assert _xs(table, "d > 9999999999999999999999999999", "d") == [top]
    small = pa.table({"d": pa.array([D("99.99"), D("-99.99"), D("1.50")], pa.decimal256(4, 2))})
    assert _xs(small, "d < 100", "d") == [D("99.99"), D("-99.99"), D("1.50")]
    assert _xs(small, "d > 1", "d") == [D("99.99"), D("1.50")]
