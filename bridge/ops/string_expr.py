"""``filter(expr="...")``: a Python-syntax string turned into a pyarrow compute expression.

Ray Data accepts ``ds.filter(expr="id > 5 and label == 'cat'")``; the string is
parsed with :mod:`ast` (never evaluated) and each node becomes the matching
``pyarrow.compute`` expression, so the filter runs vectorised in Arrow.

Supported: column names (or ``col("name with spaces")``), literals (numbers,
strings, ``True`` / ``False`` / ``None``), comparisons ``== != < <= > >=``
(chained too: ``1 < x < 5``), ``in`` / ``not in`` a tuple or list of literals,
``is None`` / ``is not None``, ``and`` / ``or`` / ``not``, ``+ - * / %`` and
unary minus, with Python's meaning (``/`` divides ints as floats, ``%`` takes the divisor's sign).
Anything else raises ``BridgeValueError`` naming it.

An integer literal beyond int64 (``x > 2**63``) compares exactly with an integer column (as a
decimal literal: ``x > 9223372036854775808`` is false for every int64); against any other column it
is refused when the block is filtered, as Arrow would compare it through float64.

Example:
    >>> import pyarrow as pa
    >>> pa.table({"id": [1, 6, 7, 9]}).filter(parse_filter_expr("id > 5 and id not in (7, 8)"))["id"].to_pylist()
    [6, 9]
"""

from __future__ import annotations

import ast
import operator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from bridge.errors import BridgeValueError

_COMPARE = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
            ast.Gt: operator.gt, ast.GtE: operator.ge}
_ARITH = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
          ast.Mod: operator.mod}


def _fail(source: str, what: str, hint: str | None = None) -> BridgeValueError:
    msg = f"filter(expr={source!r}): {what}"
    return BridgeValueError(msg, hint or 'use comparisons joined by and/or/not, e.g. expr="x > 5 and y == \'a\'", '
                                         "or pass a pyarrow expression: expr=pc.field('x') > 5")


def _literal(node: ast.AST, source: str) -> Any:
    try:
        return ast.literal_eval(node)
    except ValueError as err:
        raise _fail(source, f"expected a literal value, got {ast.unparse(node)!r}") from err


def _convert(node: ast.AST, source: str) -> Any:
    if isinstance(node, ast.BoolOp):
        parts = [_convert(v, source) for v in node.values]
        out = parts[0]
        for p in parts[1:]:
            out = (out & p) if isinstance(node.op, ast.And) else (out | p)
        return out
    if isinstance(node, ast.UnaryOp):
        if isinstance(node.op, ast.Not):
            return ~_convert(node.operand, source)
        if isinstance(node.op, ast.USub):
            operand = _convert(node.operand, source)
            return -operand if not isinstance(operand, pc.Expression) else pc.negate_checked(operand)
        if isinstance(node.op, ast.UAdd):
            return _convert(node.operand, source)
    if isinstance(node, ast.Name):
        return pc.field(node.id)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "col" \
            and len(node.args) == 1 and not node.keywords:
        return pc.field(_literal(node.args[0], source))
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.BinOp):
        left, right = _convert(node.left, source), _convert(node.right, source)
        if not isinstance(left, pc.Expression) and not isinstance(right, pc.Expression):
            fn = _ARITH.get(type(node.op))
            if fn is not None:
                return fn(left, right)
        for value in (left, right):
            if _big_int(value) and type(node.op) in _ARITH:
                raise _fail(source, f"the integer literal {value} is beyond int64, so Arrow cannot compute "
                                    f"{ast.unparse(node)!r}", "compare the column with the literal directly "
                                    "(x > 2**63 works), or cast the column to float or decimal first")
        if isinstance(node.op, ast.Mod):
            # Python's %: the sign of the divisor, for ints exactly (Arrow's ``modulo`` floors).
            return pc.modulo_checked(_expr(left), _expr(right))
        if isinstance(node.op, ast.Div):
            # Python's true division: Arrow divides two ints as ints (7 / 2 == 3); as floats here.
            return pc.divide_checked(pc.multiply(_expr(left), 1.0), _expr(right))
        fn = _ARITH.get(type(node.op))
        if fn is not None:
            return fn(_expr(left), right)
    if isinstance(node, ast.Compare):
        terms = []
        left = _convert(node.left, source)
        for op, comparator in zip(node.ops, node.comparators):
            terms.append(_compare(left, op, comparator, source))
            left = _convert(comparator, source) if not isinstance(op, (ast.In, ast.NotIn, ast.Is, ast.IsNot)) \
                else left
        out = terms[0]
        for t in terms[1:]:
            out = out & t
        return out
    raise _fail(source, f"{type(node).__name__} ({ast.unparse(node)!r}) is not supported")


def _expr(value: Any) -> pc.Expression:
    return value if isinstance(value, pc.Expression) else pc.scalar(value)


def _big_int(value: Any) -> bool:
    """An int literal that int64 cannot hold (Arrow would raise a raw OverflowError on it)."""
    return isinstance(value, int) and not isinstance(value, bool) and not -2**63 <= value < 2**63


def _big_literal(value: int, source: str) -> pc.Expression:
    """``value`` as an exact decimal literal: Arrow compares an integer column with it exactly."""
    import decimal

    digits = len(str(abs(value)))
    if digits > 76:
        raise _fail(source, f"the integer literal {value} has more than 76 digits, beyond any Arrow type",
                    "write it as a float (e.g. 1e80)")
    kind = pa.decimal128(digits, 0) if digits <= 38 else pa.decimal256(digits, 0)
    return pc.scalar(pa.scalar(decimal.Decimal(value), kind))


def _integer_guard(side: pc.Expression) -> pc.Expression:
    """True (null where ``side`` is null) for an integer ``side``; fails on any other type.

    ``bit_wise_and`` has kernels for integers only, so a float column compared with an int literal
    beyond int64 fails (and is refused, see ``bridge.dataset._expr_filter_transform``) rather than
    being compared through float64, which is wrong near 2**63.
    """
    return pc.equal(pc.bit_wise_and(side, side), side)


def _compare_big(left: Any, fn: Any, right: Any, source: str) -> Any:
    """``left fn right`` where one side is an int literal beyond int64: exact for integer columns."""
    if not isinstance(left, pc.Expression) and not isinstance(right, pc.Expression):
        return fn(left, right)
    side = left if isinstance(left, pc.Expression) else right
    lhs = _big_literal(left, source) if _big_int(left) else _expr(left)
    rhs = _big_literal(right, source) if _big_int(right) else _expr(right)
    return fn(lhs, rhs) & _integer_guard(side)


def _isin(left: Any, values: list[Any], source: str) -> pc.Expression:
    """``left in values``: ``isin`` for what Arrow holds, exact ``==`` for ints beyond int64."""
    small = [v for v in values if not _big_int(v)]
    big = [v for v in values if _big_int(v)]
    test: Any = None
    if small or not big:
        try:
            value_set = pa.array(small)
        except (pa.ArrowException, OverflowError) as err:
            kinds = sorted({type(v).__name__ for v in small})
            raise _fail(source, f"the values of 'in' mix the types {kinds} ({tuple(small)!r}); "
                                "a column holds one type", "write every value of 'in' with the column's type, "
                                "e.g. s in ('a', '1')") from err
        test = _expr(left).isin(value_set)
    for v in big:
        # like isin: never null (a null row is simply not in the values)
        term = pc.coalesce(_compare_big(left, operator.eq, v, source), pc.scalar(False))
        test = term if test is None else (test | term)
    return test


def _compare(left: Any, op: ast.cmpop, comparator: ast.AST, source: str) -> Any:
    if isinstance(op, (ast.Is, ast.IsNot)):
        if _literal(comparator, source) is not None:
            raise _fail(source, "'is' / 'is not' compare with None only")
        test = _expr(left).is_null()
        return test if isinstance(op, ast.Is) else ~test
    if isinstance(op, (ast.In, ast.NotIn)):
        values = _literal(comparator, source)
        if not isinstance(values, (list, tuple, set)):
            raise _fail(source, f"'in' needs a tuple or list of literals, got {ast.unparse(comparator)!r}")
        test = _isin(left, list(values), source)
        return test if isinstance(op, ast.In) else ~test
    fn = _COMPARE.get(type(op))
    if fn is None:
        raise _fail(source, f"the operator {type(op).__name__} is not supported")
    right = _convert(comparator, source)
    if right is None or left is None:
        raise _fail(source, "comparing with None is always null; write 'x is None' or 'x is not None'")
    if _big_int(left) or _big_int(right):
        return _compare_big(left, fn, right, source)
    return fn(_expr(left), right)


def parse_filter_expr(source: str) -> pc.Expression:
    """The pyarrow expression for the filter string ``source`` (see the module docstring)."""
    try:
        tree = ast.parse(source.strip(), mode="eval")
    except SyntaxError as err:
        raise _fail(source, f"not a valid expression ({err.msg})") from err
    body = tree.body
    if isinstance(body, ast.BinOp) or (isinstance(body, ast.UnaryOp) and isinstance(body.op, (ast.USub, ast.UAdd))):
        raise _fail(source, f"{ast.unparse(body)!r} is a number, not a condition",
                    f"compare it, e.g. expr='{ast.unparse(body)} > 0'")
    out = _convert(body, source)
    if not isinstance(out, pc.Expression):
        raise _fail(source, "the expression does not use any column")
    return out


__all__ = ["parse_filter_expr"]
