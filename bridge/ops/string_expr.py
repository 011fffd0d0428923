"""``filter(expr=...)``: a Python-syntax string (or a pyarrow expression) as a block filter.

Ray Data accepts ``ds.filter(expr="id > 5 and label == 'cat'")``; the string is
parsed with :mod:`ast` (never evaluated) into a small tree that is evaluated on
each block with ``pyarrow.compute`` kernels, so the filter runs vectorised in
Arrow, with the block's column types in hand.  That is what makes it exact
where Arrow's expression engine is not: pyarrow 26 narrows a float literal to
float32 and casts an int64 column to it, so ``pc.field("id") < 1e6`` fails on
any id beyond 2**24, and any int column beyond 2**53 would be rounded.

Supported: column names (or ``col("name with spaces")``), literals (numbers,
strings, ``True`` / ``False`` / ``None``), comparisons ``== != < <= > >=``
(chained too: ``1 < x < 5``), ``in`` / ``not in`` a tuple or list of literals,
``is None`` / ``is not None``, ``and`` / ``or`` / ``not``, ``+ - * / // % **`` and
unary minus, with Python's meaning (``/`` divides ints as floats, ``//`` floors, ``%`` takes the divisor's
sign).  :func:`parse_value_expr` parses the same language for ``with_column`` (any result type, a literal
alone too); :func:`ray_value_expr` turns a Ray Data expression (``col``, ``lit``, operators) into the
same tree, with Ray Data's kernels.
Anything else raises ``BridgeValueError`` naming it.

Comparisons between an integer or float column and a number literal are exact,
as in Python: an integer column against a float literal is compared with the
integer the float bounds (``x < 2.5`` is ``x < 3``; ``x == 2.5`` holds for no
int), an integer literal outside the column's type decides the comparison
(``x > 2**63`` is false for every int64), and a float column against an integer
literal no double holds is compared with the nearest double on the right side.
A decimal column meets a float literal through float64 (``d == 0.1`` holds for
``Decimal("0.10")``, as in Arrow and Ray Data; Python's ``==`` says no).
Arithmetic of an int with a float takes the int as the nearest double, as Python
does; two columns, an int beyond 2**53 and a float, are compared by Arrow, which
refuses to round the int rather than answer wrongly.

Example:
    >>> import pyarrow as pa
    >>> t = pa.table({"id": [1, 6, 7, 9]})
    >>> t.filter(parse_filter_expr("id > 5 and id not in (7, 8)").mask(t))["id"].to_pylist()
    [6, 9]
"""

from __future__ import annotations

import ast
import decimal
import math
import operator
import re
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads

from bridge.errors import BridgeError, BridgeTypeError, BridgeValueError, SchemaMismatchError

if TYPE_CHECKING:
    from bridge.execution.transform import BlockTransform

_COMPARE = {ast.Eq: "equal", ast.NotEq: "not_equal", ast.Lt: "less", ast.LtE: "less_equal", ast.Gt: "greater",
            ast.GtE: "greater_equal"}
_PYTHON_COMPARE = {"equal": operator.eq, "not_equal": operator.ne, "less": operator.lt, "less_equal": operator.le,
                   "greater": operator.gt, "greater_equal": operator.ge}
#: ``lit OP x`` is ``x FLIPPED[OP] lit``
_FLIPPED = {"equal": "equal", "not_equal": "not_equal", "less": "greater", "less_equal": "greater_equal",
            "greater": "less", "greater_equal": "less_equal"}
_ARITH = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
          ast.Mod: operator.mod, ast.Pow: operator.pow, ast.FloorDiv: operator.floordiv}
_ARITH_KERNEL = {ast.Add: "add_checked", ast.Sub: "subtract_checked", ast.Mult: "multiply_checked",
                 ast.Pow: "power_checked"}

Value = Any  # a pa.Array / pa.ChunkedArray (a column, or computed from one) or a Python literal


class _Source(str):
    """The expression's text, knowing the call it was given to (its errors name that call)."""

    call = "filter"


def _fail(source: str, what: str, hint: str | None = None) -> BridgeValueError:
    msg = f"{getattr(source, 'call', 'filter')}(expr={str(source)!r}): {what}"
    return BridgeValueError(msg, hint or 'use comparisons joined by and/or/not, e.g. expr="x > 5 and y == \'a\'", '
                                         "or pass a pyarrow expression: expr=pc.field('x') > 5")


def _literal(node: ast.AST, source: str) -> Any:
    try:
        return ast.literal_eval(node)
    except ValueError as err:
        raise _fail(source, f"expected a literal value, got {ast.unparse(node)!r}") from err


def _is_array(value: Value) -> bool:
    return isinstance(value, (pa.Array, pa.ChunkedArray))


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _big_int(value: Any) -> bool:
    """An int literal that int64 cannot hold."""
    return _is_int(value) and not -2**63 <= value < 2**63


# ----------------------------------------------------------------------------- the tree
class _Node:
    """One node of a parsed filter; ``eval(block)`` gives an array or a Python literal."""

    def eval(self, block: pa.Table) -> Value:
        raise NotImplementedError


class _Lit(_Node):
    def __init__(self, value: Any) -> None:
        self.value = value

    def eval(self, block: pa.Table) -> Value:
        return self.value


class _Col(_Node):
    def __init__(self, name: str) -> None:
        self.name = name

    def eval(self, block: pa.Table) -> Value:
        if self.name not in block.column_names:
            raise _MissingColumn(self.name)
        col = block.column(self.name)
        if pa.types.is_dictionary(col.type):  # compared by value, as Arrow's expressions do
            col = pc.cast(col, col.type.value_type)
        return col


class _MissingColumn(Exception):
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


class _Bool(_Node):
    """``and`` / ``or`` (Kleene: ``null and False`` is False) and ``not``."""

    def __init__(self, kind: str, parts: list[_Node]) -> None:
        self.kind, self.parts = kind, parts

    def eval(self, block: pa.Table) -> Value:
        values = [p.eval(block) for p in self.parts]
        if self.kind == "not":
            (v,) = values
            return pc.invert(v) if _is_array(v) else not v
        out = values[0]
        for v in values[1:]:
            if not _is_array(out) and not _is_array(v):
                out = (out and v) if self.kind == "and" else (out or v)
            else:
                out = pc.and_kleene(out, v) if self.kind == "and" else pc.or_kleene(out, v)
        return out


class _Neg(_Node):
    def __init__(self, operand: _Node) -> None:
        self.operand = operand

    def eval(self, block: pa.Table) -> Value:
        v = self.operand.eval(block)
        return pc.negate_checked(v) if _is_array(v) else -v


class _Arith(_Node):
    def __init__(self, op: type[ast.operator], left: _Node, right: _Node) -> None:
        self.op, self.left, self.right = op, left, right

    def eval(self, block: pa.Table) -> Value:
        left, right = self.left.eval(block), self.right.eval(block)
        if not _is_array(left) and not _is_array(right):
            return _ARITH[self.op](left, right)
        if self.op is ast.Div:  # Python's true division: Arrow divides two ints as ints (7 / 2 == 3)
            return pc.divide_checked(_as_float(left), _as_float(right))
        if _is_float(left) or _is_float(right):  # int with float: the int as a float first, as Python does
            left, right = _as_float(left), _as_float(right)
        if self.op is ast.FloorDiv:  # Python's //: the floor, for ints exactly
            return _floordiv(left, right)
        if self.op is ast.Mod:  # Python's %: the sign of the divisor, for ints exactly
            return pc.call_function("modulo_checked", [_scalar(left), _scalar(right)])
        return pc.call_function(_ARITH_KERNEL[self.op], [_scalar(left), _scalar(right)])


def _floordiv(left: Value, right: Value) -> Value:
    """Python's ``left // right`` (one side an array): floats floored, ints exactly (Arrow's int division
    truncates toward zero: one less where the remainder has the divisor's opposite sign)."""
    if _is_float(left) or _is_float(right):
        return pc.floor(pc.divide_checked(left, right))
    quotient = pc.divide_checked(_scalar(left), _scalar(right))
    remainder = pc.subtract_checked(_scalar(left), pc.multiply_checked(quotient, _scalar(right)))
    below = pc.and_(pc.not_equal(remainder, 0), pc.not_equal(pc.less(remainder, 0), pc.less(_scalar(right), 0)))
    return pc.subtract_checked(quotient, pc.cast(below, quotient.type))


def _as_float(value: Value) -> Value:
    """An int (array) as float64, rounded to the nearest double as Python's ``float(x)`` does (Arrow's own
    cast refuses an int beyond 2**53)."""
    if _is_array(value):
        return pc.cast(value, pa.float64(), safe=False) if pa.types.is_integer(value.type) else value
    return float(value) if _is_int(value) else value


def _is_float(value: Value) -> bool:
    return pa.types.is_floating(value.type) if _is_array(value) else isinstance(value, float)


def _scalar(value: Value) -> Any:
    return value if _is_array(value) else pa.scalar(value)


class _Compare(_Node):
    def __init__(self, kernel: str, left: _Node, right: _Node) -> None:
        self.kernel, self.left, self.right = kernel, left, right

    def eval(self, block: pa.Table) -> Value:
        left, right = self.left.eval(block), self.right.eval(block)
        if not _is_array(left) and not _is_array(right):
            return _PYTHON_COMPARE[self.kernel](left, right)
        if not _is_array(left):
            return compare_exact(right, _FLIPPED[self.kernel], left)
        return compare_exact(left, self.kernel, right)


class _IsNull(_Node):
    def __init__(self, operand: _Node, negate: bool) -> None:
        self.operand, self.negate = operand, negate

    def eval(self, block: pa.Table) -> Value:
        v = self.operand.eval(block)
        if not _is_array(v):
            return (v is None) != self.negate
        return pc.is_valid(v) if self.negate else pc.is_null(v)


class _IsIn(_Node):
    """``x in (...)``: never null (a null row is in the values only where they hold None)."""

    def __init__(self, operand: _Node, values: list[Any], negate: bool) -> None:
        self.operand, self.values, self.negate = operand, values, negate

    def eval(self, block: pa.Table) -> Value:
        v = self.operand.eval(block)
        if not _is_array(v):
            return (v in self.values) != self.negate
        out = _isin(v, self.values)
        return pc.invert(out) if self.negate else out


def _isin(col: Value, values: list[Any]) -> Value:
    present = [x for x in values if x is not None]
    try:
        value_set = pa.array(present, col.type) if present else pa.array([], col.type)
        exact = value_set.to_pylist() == present and all(type(a) is type(b) for a, b in zip(value_set.to_pylist(),
                                                                                            present))
    except (pa.ArrowException, OverflowError, TypeError, ValueError):
        exact = False
    if exact:
        test = pc.is_in(col, value_set=value_set, skip_nulls=True)
    else:  # a literal the column's type does not hold as it is (2.5 in an int column, 2**64 ...): exact ==
        test = _const(col, False)
        for x in present:
            test = pc.or_kleene(test, compare_exact(col, "equal", x))
        test = pc.coalesce(test, False)
    if None in values:
        test = pc.or_(test, pc.is_null(col))
    return test


# ----------------------------------------------------------------------------- exact comparisons
def compare_exact(col: Value, kernel: str, lit: Any) -> Value:
    """``col <kernel> lit`` for an array ``col``: exact between numbers of any kind, as in Python."""
    if not _is_array(lit) and lit is not None and not isinstance(lit, bool):
        t = col.type
        if pa.types.is_integer(t) and isinstance(lit, float):
            return _int_vs_float(col, kernel, lit)
        if pa.types.is_integer(t) and _is_int(lit):
            return _int_vs_int(col, kernel, lit)
        if pa.types.is_floating(t) and _is_int(lit):
            if not _double_holds(lit):
                return _float_vs_unheld_int(col, kernel, lit)
            lit = float(lit)
        elif pa.types.is_decimal(t) and _is_int(lit):
            return _decimal_vs_int(col, kernel, lit)
    return pc.call_function(kernel, [col, _scalar(lit)])


def _decimal_vs_int(col: Value, kernel: str, lit: int) -> Value:
    """``col <kernel> lit`` for a decimal column: exact for an int literal of any size.

    Arrow compares in a decimal wide enough for both sides' integer digits plus the
    column's scale, and refuses past 76 digits (or 38 for decimal128 inputs): a
    decimal(p, s) column holds only values below ``10**(p - s)`` in magnitude, so a
    literal at or past that bound is above (or below) every value, and one inside it
    fits the column's own type.
    """
    t = col.type
    bound = 10 ** (t.precision - t.scale)
    if lit >= bound:  # every value is below the literal
        return _const(col, kernel in ("less", "less_equal", "not_equal"))
    if lit <= -bound:
        return _const(col, kernel in ("greater", "greater_equal", "not_equal"))
    return pc.call_function(kernel, [col, pa.scalar(decimal.Decimal(lit), t)])


def _double_holds(lit: int) -> bool:
    try:
        return float(lit) == lit
    except OverflowError:
        return False


def _const(col: Value, value: bool) -> Value:
    """``value`` on every row, null where ``col`` is null."""
    return pc.if_else(pc.is_valid(col), value, pa.scalar(None, pa.bool_()))


def _int_vs_int(col: Value, kernel: str, lit: int) -> Value:
    t = col.type
    lo, hi = (0, 2**t.bit_width - 1) if pa.types.is_unsigned_integer(t) else \
        (-2**(t.bit_width - 1), 2**(t.bit_width - 1) - 1)
    if lit > hi:  # every value is below the literal
        return _const(col, kernel in ("less", "less_equal", "not_equal"))
    if lit < lo:
        return _const(col, kernel in ("greater", "greater_equal", "not_equal"))
    return pc.call_function(kernel, [col, pa.scalar(lit, t)])


def _int_vs_float(col: Value, kernel: str, lit: float) -> Value:
    if math.isnan(lit):
        return _const(col, kernel == "not_equal")
    if math.isinf(lit):
        below = lit > 0  # every int is below +inf
        truth = {"less": below, "less_equal": below, "greater": not below, "greater_equal": not below,
                 "equal": False, "not_equal": True}
        return _const(col, truth[kernel])
    floor, ceil = math.floor(lit), math.ceil(lit)
    if floor == ceil:
        return _int_vs_int(col, kernel, floor)
    if kernel in ("equal", "not_equal"):  # no int equals 2.5
        return _const(col, kernel == "not_equal")
    # x < 2.5 is x < 3, x <= 2.5 is x <= 2, x > 2.5 is x > 2, x >= 2.5 is x >= 3
    bound = ceil if kernel in ("less", "greater_equal") else floor
    return _int_vs_int(col, kernel, bound)


def _float_vs_unheld_int(col: Value, kernel: str, lit: int) -> Value:
    """A float column against an int no double holds, exactly: no double equals it, and one lies just
    below it (NaN compares false, as in Python)."""
    if kernel in ("equal", "not_equal"):
        return _const(col, kernel == "not_equal")
    try:
        below = float(lit)
    except OverflowError:  # beyond every finite double: only an infinity is past it
        inf = math.inf if lit > 0 else -math.inf
        if kernel in ("less", "less_equal"):
            return pc.less(col, inf) if lit > 0 else pc.equal(col, inf)
        return pc.equal(col, inf) if lit > 0 else pc.greater(col, inf)
    if below > lit:
        below = math.nextafter(below, -math.inf)
    # no double lies strictly between ``below`` and ``lit``: x < lit  <=>  x <= below
    return pc.less_equal(col, below) if kernel in ("less", "less_equal") else pc.greater(col, below)


# ----------------------------------------------------------------------------- parsing
def _convert(node: ast.AST, source: str) -> _Node:
    if isinstance(node, ast.BoolOp):
        return _fold(_Bool("and" if isinstance(node.op, ast.And) else "or",
                           [_convert(v, source) for v in node.values]), source)
    if isinstance(node, ast.UnaryOp):
        if isinstance(node.op, ast.Not):
            return _fold(_Bool("not", [_convert(node.operand, source)]), source)
        if isinstance(node.op, ast.USub):
            return _fold(_Neg(_convert(node.operand, source)), source)
        if isinstance(node.op, ast.UAdd):
            return _convert(node.operand, source)
    if isinstance(node, ast.Name):
        return _Col(node.id)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "col" \
            and len(node.args) == 1 and not node.keywords:
        return _Col(_literal(node.args[0], source))
    if isinstance(node, ast.Constant):
        return _Lit(node.value)
    if isinstance(node, ast.BinOp) and type(node.op) in _ARITH:
        left, right = _convert(node.left, source), _convert(node.right, source)
        for side in (left, right):
            if isinstance(side, _Lit) and _big_int(side.value) and not (isinstance(left, _Lit)
                                                                        and isinstance(right, _Lit)):
                raise _fail(source, f"the integer literal {side.value} is beyond int64, so Arrow cannot compute "
                                    f"{ast.unparse(node)!r}", "compare the column with the literal directly "
                                    "(x > 2**63 works), or cast the column to float or decimal first")
        return _fold(_Arith(type(node.op), left, right), source)
    if isinstance(node, ast.Compare):
        if any(isinstance(op, (ast.In, ast.NotIn, ast.Is, ast.IsNot)) for op in node.ops) and len(node.ops) > 1:
            raise _fail(source, f"{ast.unparse(node)!r} chains 'in' / 'is' with another comparison",
                        "write each test on its own, joined by and: expr=\"x in (1, 2) and x > 0\"")
        terms: list[_Node] = []
        left = _convert(node.left, source)
        for op, comparator in zip(node.ops, node.comparators):
            terms.append(_compare(left, op, comparator, source))
            if not isinstance(op, (ast.In, ast.NotIn, ast.Is, ast.IsNot)):
                left = _convert(comparator, source)
        return terms[0] if len(terms) == 1 else _fold(_Bool("and", terms), source)
    raise _fail(source, f"{type(node).__name__} ({ast.unparse(node)!r}) is not supported")


def _fold(node: _Node, source: str) -> _Node:
    """A node over literals only, computed now (``-5``, ``2 * 3``, ``1 < 2``)."""
    children = [getattr(node, a) for a in ("left", "right", "operand") if hasattr(node, a)]
    children += getattr(node, "parts", [])
    if not all(isinstance(c, _Lit) for c in children):
        return node
    if isinstance(node, _Arith) and node.op is ast.Pow:
        base, power = node.left.eval(pa.table({})), node.right.eval(pa.table({}))
        if _is_int(power) and abs(power) > 10_000 and isinstance(base, (int, float)) and abs(base) > 1:
            raise _fail(source, f"the power {base} ** {power} is too large to compute",
                        "write the literal as a float (e.g. 1e300)")
    try:
        return _Lit(node.eval(pa.table({})))
    except (ArithmeticError, TypeError) as err:
        raise _fail(source, f"the literals cannot be computed ({type(err).__name__}: {err})") from err


def _compare(left: _Node, op: ast.cmpop, comparator: ast.AST, source: str) -> _Node:
    if isinstance(op, (ast.Is, ast.IsNot)):
        if _literal(comparator, source) is not None:
            raise _fail(source, "'is' / 'is not' compare with None only")
        return _fold(_IsNull(left, isinstance(op, ast.IsNot)), source)
    if isinstance(op, (ast.In, ast.NotIn)):
        values = _literal(comparator, source)
        if not isinstance(values, (list, tuple, set)):
            raise _fail(source, f"'in' needs a tuple or list of literals, got {ast.unparse(comparator)!r}")
        kinds = {"number" if isinstance(v, (int, float)) and not isinstance(v, bool) else type(v).__name__
                 for v in values if v is not None}
        if len(kinds) > 1:
            raise _fail(source, f"the values of 'in' mix the types {sorted(kinds)} ({tuple(values)!r}); "
                                "a column holds one type", "write every value of 'in' with the column's type, "
                                "e.g. s in ('a', '1')")
        return _fold(_IsIn(left, list(values), isinstance(op, ast.NotIn)), source)
    kernel = _COMPARE.get(type(op))
    if kernel is None:
        raise _fail(source, f"the operator {type(op).__name__} is not supported")
    right = _convert(comparator, source)
    if any(isinstance(side, _Lit) and side.value is None for side in (left, right)):
        raise _fail(source, "comparing with None is always null; write 'x is None' or 'x is not None'")
    return _fold(_Compare(kernel, left, right), source)


class _Parsed:
    """A parsed expression string: its source (``str()``) and the tree evaluated on each block."""

    def __init__(self, source: str, root: _Node) -> None:
        self.source, self._root = source, root

    def __str__(self) -> str:
        return self.source

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.source!r})"


class FilterExpr(_Parsed):
    """A parsed filter string: ``mask(block)`` is the boolean array of the rows it keeps (null: dropped)."""

    def mask(self, block: pa.Table) -> Value:
        out = self._root.eval(block)
        if not _is_array(out):  # a condition on literals alone after all (``x in ()``): every row or none
            out = pa.repeat(bool(out), block.num_rows)
        if not pa.types.is_boolean(out.type):
            raise pa.ArrowTypeError(f"Filter expression must evaluate to bool, got {out.type}")
        return out


def parse_filter_expr(source: str) -> FilterExpr:
    """The filter for the string ``source`` (see the module docstring)."""
    try:
        tree = ast.parse(source.strip(), mode="eval")
    except SyntaxError as err:
        raise _fail(source, f"not a valid expression ({err.msg})") from err
    body = tree.body
    if isinstance(body, ast.BinOp) and isinstance(body.op, (ast.BitAnd, ast.BitOr)):
        # pandas' spelling, (x > 1) & (x < 3): here conditions join with `and` / `or`, as in Python
        word = "and" if isinstance(body.op, ast.BitAnd) else "or"
        raise _fail(source, f"'{'&' if word == 'and' else '|'}' joins bits of numbers here, not conditions",
                    f"join conditions with `{word}`: expr='{ast.unparse(body.left)} {word} {ast.unparse(body.right)}'")
    if isinstance(body, ast.BinOp) or (isinstance(body, ast.UnaryOp) and isinstance(body.op, (ast.USub, ast.UAdd))):
        raise _fail(source, f"{ast.unparse(body)!r} is a number, not a condition",
                    f"compare it, e.g. expr='{ast.unparse(body)} > 0'")
    root = _convert(body, source)
    if isinstance(root, _Lit):
        raise _fail(source, "the expression does not use any column")
    return FilterExpr(source.strip(), root)


# ----------------------------------------------------------------------------- value expressions (with_column)
class ValueExpr(_Parsed):
    """A parsed value expression: ``column(block)`` is its array; a literal is repeated on every row, with the
    type ``pa.scalar`` gives it (as Ray Data's ``lit``)."""

    def column(self, block: pa.Table) -> Value:
        if isinstance(self._root, _Col):  # the column as it is (a dictionary column stays one)
            if self._root.name not in block.column_names:
                raise _MissingColumn(self._root.name)
            return block.column(self._root.name)
        out = self._root.eval(block)
        if _is_array(out):
            return out
        try:
            value = out if isinstance(out, pa.Scalar) else pa.scalar(out)
        except (OverflowError, pa.ArrowException) as err:  # 2**70 alone: no Arrow integer holds it
            raise BridgeValueError(f"with_column: {self.source!r} is {out!r}, which no Arrow type holds ({err})",
                                   "keep literals within int64 / uint64, or use a float literal (2.0**70)") from err
        return pa.repeat(value, block.num_rows)


def parse_value_expr(source: str, call: str = "with_column") -> ValueExpr:
    """The value of the string ``source`` on each row: the language of :func:`parse_filter_expr` (Python's
    meaning: ``/`` of ints gives floats, ``%`` and ``//`` floor), any result type; errors name ``call``."""
    src = _Source(source)
    src.call = call
    try:
        tree = ast.parse(source.strip(), mode="eval")
    except SyntaxError as err:
        raise _fail(src, f"not a valid expression ({err.msg})", 'write it in Python syntax, e.g. "x * 2 + y"') \
            from err
    return ValueExpr(source.strip(), _convert(tree.body, src))


class _RayArith(_Node):
    """Ray Data's arithmetic (``_ARROW_EXPR_OPS_MAP`` of ray/data/_internal/planner/plan_expression/
    expression_evaluator.py) with the same kernels, checked: an int overflow raises where Ray Data's wraps.

    ``+`` joins strings; ``/`` of two ints is Arrow's integer division (truncated, an int); ``//`` is
    ``floor(l / r)`` and ``%`` is ``l - floor(l / r) * r`` (float64, and truncated toward zero on ints).
    """

    def __init__(self, op: str, left: _Node, right: _Node) -> None:
        self.op, self.left, self.right = op, left, right

    def eval(self, block: pa.Table) -> Value:
        left, right = self.left.eval(block), self.right.eval(block)
        out = _ray_arith(self.op, left, right)
        return out.as_py() if isinstance(out, pa.Scalar) else out  # literals only: a Python value again


def _string_like(value: Value) -> bool:
    if isinstance(value, str):
        return True
    if not _is_array(value):
        return False
    t = value.type.value_type if pa.types.is_dictionary(value.type) else value.type
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t))


def _ray_arith(op: str, left: Value, right: Value) -> Value:
    if op == "add" and (_string_like(left) or _string_like(right)):
        parts = [pc.cast(v, v.type.value_type) if _is_array(v) and pa.types.is_dictionary(v.type) else _scalar(v)
                 for v in (left, right)]
        return pc.binary_join_element_wise(*parts, "")
    lhs, rhs = _scalar(left), _scalar(right)
    if op in ("add", "sub", "mul"):
        return pc.call_function({"add": "add_checked", "sub": "subtract_checked", "mul": "multiply_checked"}[op],
                                [lhs, rhs])
    ints = pa.types.is_integer(lhs.type) and pa.types.is_integer(rhs.type)
    quotient = pc.divide_checked(lhs, rhs) if ints else pc.divide(lhs, rhs)  # a float / 0 is inf, as in Ray Data
    if op == "div":
        return quotient
    if op == "floordiv":
        return pc.floor(quotient)
    return pc.subtract_checked(lhs, pc.multiply_checked(pc.floor(quotient), rhs))


class _RayCompare(_Compare):
    """A comparison, exact between numbers (see :func:`compare_exact`); with ``None`` it is null, as in Ray Data."""

    def eval(self, block: pa.Table) -> Value:
        left, right = self.left.eval(block), self.right.eval(block)
        if left is None or right is None:
            return pa.nulls(block.num_rows, pa.bool_()) if _is_array(left) or _is_array(right) else None
        if not _is_array(left) and not _is_array(right):
            return _PYTHON_COMPARE[self.kernel](left, right)
        if not _is_array(left):
            return compare_exact(right, _FLIPPED[self.kernel], left)
        return compare_exact(left, self.kernel, right)


_RAY_ARITH = {"add": "+", "sub": "-", "mul": "*", "div": "/", "floordiv": "//", "mod": "%"}
_RAY_COMPARE = {"eq": ("equal", "=="), "ne": ("not_equal", "!="), "lt": ("less", "<"), "le": ("less_equal", "<="),
                "gt": ("greater", ">"), "ge": ("greater_equal", ">=")}
_RAY_SUPPORTED = "col(), lit(), + - * / // %, == != < <= > >=, & | ~, .is_null(), .is_not_null(), .is_in(), " \
                 ".not_in(), .alias()"


def is_ray_expr(expr: Any) -> bool:
    """Whether ``expr`` is a Ray Data expression (``ray.data.expressions.Expr``), without importing Ray Data."""
    return any(c.__name__ == "Expr" and c.__module__ == "ray.data.expressions" for c in type(expr).__mro__)


def ray_value_expr(expr: Any, call: str = "with_column") -> ValueExpr:
    """A Ray Data expression built from ``col``, ``lit`` and operators, as a :class:`ValueExpr` with Ray Data's
    results (see :class:`_RayArith`), exact where Ray Data's are not (comparisons of an int beyond 2**53 with
    a float, int literals beyond int64 in comparisons); other kinds (``udf``, ``download``, ...) are refused."""
    root, text = _from_ray(expr, call)
    return ValueExpr(text, root)


def ray_filter_expr(expr: Any) -> FilterExpr:
    """``filter(expr=col("x") > 5)``: a Ray Data expression as the condition of a :class:`FilterExpr`
    (the nodes :func:`ray_value_expr` takes; a row where it is null is dropped, as in Ray Data)."""
    root, text = _from_ray(expr, "filter")
    return FilterExpr(text, root)


def _from_ray(e: Any, call: str) -> tuple[_Node, str]:
    kind = type(e).__name__
    if kind == "AliasExpr":  # with_column names the column itself
        return _from_ray(e.expr, call)
    if kind == "ColumnExpr":
        return _Col(e.name), f"col({e.name!r})"
    if kind == "LiteralExpr":
        return _Lit(e.value), f"lit({e.value!r})"
    op = str(getattr(getattr(e, "op", None), "value", ""))
    if kind == "BinaryExpr" and op in ("in", "not_in"):
        operand, text = _from_ray(e.left, call)
        if type(e.right).__name__ != "LiteralExpr":
            raise _ray_refused(call, f"{text}.{'is_in' if op == 'in' else 'not_in'}() needs a list of literal values,"
                                     f" got a {type(e.right).__name__}", "pass a list: col('x').is_in([1, 2])")
        values = e.right.value
        values = list(values) if isinstance(values, (list, tuple, set)) else [values]
        return _IsIn(operand, values, op == "not_in"), f"{text}.{'is_in' if op == 'in' else 'not_in'}({values!r})"
    if kind == "BinaryExpr" and (op in _RAY_ARITH or op in _RAY_COMPARE or op in ("and", "or")):
        (left, lt), (right, rt) = _from_ray(e.left, call), _from_ray(e.right, call)
        if op in _RAY_ARITH:
            text = f"({lt} {_RAY_ARITH[op]} {rt})"
            for side in (left, right):
                if isinstance(side, _Lit) and _big_int(side.value):
                    raise _ray_refused(call, f"the integer literal {side.value} in {text} is beyond int64, so Arrow "
                                             "cannot compute it", "compare the column with the literal directly, "
                                             "or cast the column to float or decimal first")
            return _RayArith(op, left, right), text
        if op in _RAY_COMPARE:
            kernel, symbol = _RAY_COMPARE[op]
            return _RayCompare(kernel, left, right), f"({lt} {symbol} {rt})"
        return _Bool(op, [left, right]), f"({lt} {'&' if op == 'and' else '|'} {rt})"
    if kind == "UnaryExpr" and op in ("not", "is_null", "is_not_null"):
        operand, text = _from_ray(e.operand, call)
        if op == "not":
            return _Bool("not", [operand]), f"~{text}"
        return _IsNull(operand, op == "is_not_null"), f"{text}.{op}()"
    what = f"{kind} {op}" if op else kind
    fn = getattr(e, "fn", None)
    if fn is not None:
        what += f" ({getattr(fn, '__name__', type(fn).__name__)})"
    raise _ray_refused(call, f"the Ray Data expression {what} is not supported; raybridge evaluates {_RAY_SUPPORTED}",
                       "compute the column with map_batches or add_column, e.g. ds.add_column('y', lambda df: "
                       "f(df['x'])), or write it with col() / lit() and operators")


def _ray_refused(call: str, what: str, hint: str) -> BridgeValueError:
    return BridgeValueError(f"{call}(): {what}", hint)


# ----------------------------------------------------------------------------- the block transform
def _refused(err: Exception, b: pa.Table, label: str, expr: Any) -> Exception:
    """Arrow's error evaluating ``expr`` on block ``b`` -> ours, naming the expression and column types."""
    text = str(err).split("\n")[0]
    filtering = label.startswith("Filter")
    if isinstance(err, _MissingColumn) or (isinstance(err, pa.ArrowInvalid) and "No match for FieldRef" in text):
        if isinstance(err, _MissingColumn):
            missing = err.name
        else:
            found = re.search(r"FieldRef\.\w+\((.*?)\) in", text)
            missing = found.group(1) if found else text
        msg = f"{label}: the expression uses column {missing!r}, which the Dataset does not have; " \
              f"its columns are {b.column_names}"
        from bridge.errors import missing_columns_hint

        return SchemaMismatchError(msg, missing_columns_hint([str(missing).strip("'\"")], b.column_names,
                                                             "check the column name against ds.columns()"))
    words = set(re.findall(r"\w+", str(expr)))
    used = [f"{n}: {t}" for n, t in zip(b.schema.names, b.schema.types)
            if n in words or (not n.isidentifier() and n in str(expr))]
    types = f"column types {used or [f'{n}: {t}' for n, t in zip(b.schema.names, b.schema.types)]}"
    if isinstance(err, pa.ArrowInvalid) and "overflow" in text:
        msg = f"{label}: the arithmetic overflows its integer type ({types}); Arrow refuses rather than " \
              f"wrap, got {text!r}"
        return BridgeValueError(msg, "cast the column to float or decimal first (e.g. with add_column or "
                                     f"map_batches){', then filter on it' if filtering else ''}")
    if isinstance(err, pa.ArrowInvalid) and not isinstance(expr, (FilterExpr, ValueExpr)) and \
            re.match(r"Integer value -?\d+ not in range: -(16777216|9007199254740992)", text):
        msg = f"{label}: Arrow's expression engine {'compares' if filtering else 'computes'} the integer column " \
              f"with the float literal as float32 / float64 and a value of it has no exact float ({types}); " \
              f"got {text!r}"
        if filtering:
            return BridgeTypeError(msg, f"pass the filter as a string, which compares exactly (expr=\"{expr}\" "
                                        "with pc.field('x') written as x), or write the literal as an int")
        return BridgeTypeError(msg, "pass the expression as a string (expr=\"x * 1.5\") or build it with "
                                    "ray.data.expressions.col(), which compute in float64, or cast the column first")
    if isinstance(err, pa.ArrowInvalid) and re.match(r"Integer value -?\d+ not in range", text):
        msg = f"{label}: an integer column holds a value no float64 holds exactly and meets a float " \
              f"({types}); Arrow refuses to round it, got {text!r}"
        return BridgeTypeError(msg, "cast one column to the other's type first (e.g. with add_column), or "
                                    "compare the int column with a literal")
    if isinstance(err, pa.ArrowTypeError) and "must evaluate to bool" in text:
        msg = f"{label}: the expression is not a condition ({types}); got {text!r}"
        return BridgeTypeError(msg, 'compare it to get true/false, e.g. expr="x != 0" or "x is not None"')
    if isinstance(err, (pa.ArrowNotImplementedError, pa.ArrowTypeError)):
        msg = f"{label}: the expression combines types Arrow has no operation for ({types}); got {text!r}"
        return BridgeTypeError(msg, "compare a column with a literal of its own type (a string with 'a', a "
                                    "number with 5), or cast it first with add_column / map_batches")
    msg = f"{label}: Arrow could not evaluate the expression ({types}); got {text!r}"
    return BridgeValueError(msg, "check the expression against ds.schema(), e.g. a division by a column "
                                 "that holds zeros")


def expr_filter_transform(expr: Any, label: str) -> BlockTransform:
    """``filter(expr=...)`` (a :class:`FilterExpr` or a pyarrow expression) as a block transform; Arrow's
    errors become ours, and a column the block lacks raises ``SchemaMismatchError``."""
    from bridge.block import empty_like
    from bridge.execution.transform import BlockTransform

    keep: Callable[[pa.Table], Any] = expr.mask if isinstance(expr, FilterExpr) else (lambda b: expr)

    def run(blocks: Any, ctx: Any) -> Iterator[pa.Table]:
        for b in blocks:
            if b.num_rows == 0 and b.num_columns == 0:  # a map's block without output rows: nothing to test
                yield b
                continue
            try:
                out = b.filter(keep(b))
            except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, _MissingColumn) as err:
                raise _refused(err, b, label, expr) from err
            yield out if out.num_rows else empty_like(b)  # (no chunk left: no dictionary, no categories)

    return BlockTransform(run, label)


def value_expr(expr: Any, call: str) -> ValueExpr | pc.Expression:
    """``with_column``'s ``expr``: a string (:func:`parse_value_expr`), a Ray Data expression
    (:func:`ray_value_expr`) or a pyarrow expression (as it is); anything else is refused."""
    if isinstance(expr, str):
        return parse_value_expr(expr, call)
    if isinstance(expr, pc.Expression):
        return expr
    if is_ray_expr(expr):
        return ray_value_expr(expr, call)
    msg = f"{call}(): expr must be a string, a ray.data.expressions expression or a pyarrow expression; " \
          f"got {type(expr).__name__} {expr!r:.80}"
    raise BridgeTypeError(msg, "pass expr=\"x * 2\", col('x') * 2 (from ray.data.expressions import col) or "
                               "pc.field('x') * 2; for a Python function use add_column")


def _arrow_expr_column(expr: pc.Expression, block: pa.Table) -> Value:
    """``expr`` evaluated on ``block`` by Arrow's expression engine (a dataset projection).

    pyarrow 26 narrows a float literal a float32 holds (``1.5``) to float32 and casts an int column to it, so
    ``pc.field("x") * 1.5`` rounds to float32: a float32 result from no float32 column (and no cast) is refused.
    """
    out = pads.dataset(block).to_table(columns={"value": expr}, use_threads=False).column("value")
    narrow = (pa.float16(), pa.float32())
    if out.type in narrow and not any(t in narrow for t in block.schema.types) and "cast" not in str(expr):
        raise BridgeTypeError(f"the expression {expr} gives {out.type}: pyarrow's expression engine narrowed a float "
                              f"literal to {out.type}, which rounds the values (column types "
                              f"{[f'{n}: {t}' for n, t in zip(block.schema.names, block.schema.types)]})",
                              "pass the expression as a string (expr=\"x * 1.5\") or build it with "
                              "ray.data.expressions.col(), which compute in float64")
    return out


def with_column_transform(name: str, expr: ValueExpr | pc.Expression, label: str) -> BlockTransform:
    """``with_column(name, expr)`` as a block transform: ``expr``'s values as column ``name`` (replacing one of
    that name in its place, as Ray Data does, else appended); Arrow's errors become ours.  The pandas metadata
    of a block made from a frame stops describing a replaced column whose type changed
    (:func:`bridge.pandas_types.fitted_metadata`): ``to_pandas`` gave the old column's dtype to the new values."""
    from bridge.execution.transform import BlockTransform
    from bridge.pandas_types import fitted_metadata

    def values(b: pa.Table) -> Value:
        return expr.column(b) if isinstance(expr, ValueExpr) else _arrow_expr_column(expr, b)

    def run(blocks: Any, ctx: Any) -> Iterator[pa.Table]:
        for b in blocks:
            if b.num_rows == 0 and b.num_columns == 0:  # a map's block without output rows: nothing to compute
                yield b
                continue
            try:
                column = values(b)
            except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, _MissingColumn) as err:
                raise _refused(err, b, label, expr) from err
            except BridgeError as err:
                raise type(err)(f"{label}: {err.what}", err.hint) from err
            if name in b.column_names:
                out = b.set_column(b.column_names.index(name), name, column)
            else:
                out = b.append_column(name, column)
            yield fitted_metadata(out, b.schema)

    return BlockTransform(run, label)


def check_on_schema(transform: BlockTransform, schema: pa.Schema | None) -> pa.Schema | None:
    """Run ``transform`` on an empty table of ``schema`` (when known): a missing column, types no kernel takes
    raise now, at the call; what Arrow only refuses on real rows is left to the run.  Gives the output's
    schema (the types of a ``with_column``'s blocks), or ``None`` where ``schema`` is unknown or the run on
    no rows failed."""
    if schema is None:
        return None
    from bridge.block import empty_table
    from bridge.execution.transform import TaskContext

    try:
        out = list(transform([empty_table(schema)], TaskContext(0)))
    except BridgeError:
        raise
    except Exception:  # noqa: BLE001 - not ours to judge on no rows: the run says
        return None
    if not schema.names:
        return None  # (a block of rows without columns passes the transforms by: no output to learn from)
    return out[0].schema if len(out) == 1 and isinstance(out[0], pa.Table) else None


__all__ = ["FilterExpr", "ValueExpr", "check_on_schema", "compare_exact", "expr_filter_transform", "is_ray_expr",
           "ray_filter_expr",
           "parse_filter_expr", "parse_value_expr", "ray_value_expr", "value_expr", "with_column_transform"]
