"""``filter(expr="...")`` on values Arrow cannot take as they are: our errors, or the exact answer.

Arithmetic that overflows int64, a non-boolean expression, ``not`` on a string, int literals beyond
int64 and ``in`` with mixed literal types used to escape as raw Arrow / Python errors (some from
inside a Ray task).
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


def test_int_literal_beyond_int64_against_float_is_refused():
    text = _refused(BIG, f"f == {I64 + 1}", BridgeTypeError)
    assert "f: double" in text and "float64" in text


def test_int_literal_beyond_int64_in_arithmetic_is_refused():
    with pytest.raises(BridgeValueError, match="beyond int64"):
        parse_filter_expr(f"x + {I64} > 0")
    with pytest.raises(BridgeValueError, match="76 digits"):
        parse_filter_expr("x > " + "9" * 80)


def test_division_by_zero_is_our_error():
    text = _refused(F1, "x / 0 > 1", BridgeValueError)
    assert "divide by zero" in text
