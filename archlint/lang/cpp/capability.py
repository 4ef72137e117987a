"""C++ conditions over the compute capability, evaluated three-valued: 1, 0, or None where a name
archlint cannot read (a flag, a tensor's dtype) decides it."""

from __future__ import annotations

from collections.abc import Callable

from archlint.model.cexpr import Binary, Expr, Name, Num, Ternary, Unary

Value = int | None

_ARITHMETIC: dict[str, Callable[[int, int], int]] = {
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
    "/": lambda a, b: int(a / b) if b else 0, "%": lambda a, b: a % b if b else 0,
    "&": lambda a, b: a & b, "|": lambda a, b: a | b, "^": lambda a, b: a ^ b,
    "<<": lambda a, b: a << b if 0 <= b < 64 else 0, ">>": lambda a, b: a >> b if 0 <= b < 64 else 0,
    "==": lambda a, b: int(a == b), "!=": lambda a, b: int(a != b), "<": lambda a, b: int(a < b),
    "<=": lambda a, b: int(a <= b), ">": lambda a, b: int(a > b), ">=": lambda a, b: int(a >= b),
}


def evaluate(expr: Expr, leaf: Callable[[str], Value]) -> Value:
    """The value of `expr`, with each name's value from `leaf` (None: unknown)."""
    if isinstance(expr, Num):
        return expr.value
    if isinstance(expr, Name):
        return leaf(expr.name)
    if isinstance(expr, Unary):
        value = evaluate(expr.operand, leaf)
        if value is None:
            return None
        return {"!": int(not value), "-": -value, "+": value, "~": ~value}[expr.op]
    if isinstance(expr, Binary):
        return _binary(expr, leaf)
    if isinstance(expr, Ternary):
        cond = evaluate(expr.cond, leaf)
        if cond is None:
            then, other = evaluate(expr.then, leaf), evaluate(expr.other, leaf)
            return then if then == other else None
        return evaluate(expr.then if cond else expr.other, leaf)
    return None  # Opaque, Defined, MacroCall: not a C++ value archlint reads


def _binary(expr: Binary, leaf: Callable[[str], Value]) -> Value:
    left = evaluate(expr.left, leaf)
    if expr.op in ("&&", "||"):
        stop = 0 if expr.op == "&&" else 1
        if left is not None and bool(left) == bool(stop):
            return stop
        right = evaluate(expr.right, leaf)
        if right is not None and bool(right) == bool(stop):
            return stop
        return None if left is None or right is None else 1 - stop
    right = evaluate(expr.right, leaf)
    if left is None or right is None:
        return None
    return _ARITHMETIC[expr.op](left, right)
