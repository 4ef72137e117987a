"""A PyExpr written back as Python source, for people: `get_compute_capability(device)[0] == 10`.

The tree keeps what archlint reasons about, not the source's spelling: strings come back in double
quotes, calls and displays without the line breaks or trailing commas they were written with, and
a part the tree keeps only as text (an `other` leaf, a splat) as that text.
"""

from __future__ import annotations

from archlint.model.python import PyExpr

_SEQ = {"list": ("[", "]"), "tuple": ("(", ")"), "set": ("{", "}")}
_BRACKETS = {"list": ("[", "]"), "set": ("{", "}"), "dictionary": ("{", "}")}


def unparse(expr: PyExpr) -> str:
    """The expression as source text (see the module's notes on what differs from the original)."""
    writer = _WRITERS.get(expr.kind)
    return writer(expr) if writer is not None else expr.text


# How tightly each kind binds, as in Python's grammar: an operand that binds more loosely than its
# place needs is written in parentheses.
_BINOP_LEVEL = {"|": 6, "^": 7, "&": 8, "<<": 9, ">>": 9, "+": 10, "-": 10, "*": 11, "/": 11, "//": 11, "%": 11,
                "@": 11, "**": 13}
_PRIMARY = 14


def _level(expr: PyExpr) -> int:
    kind = expr.kind
    if kind == "binop":
        return _BINOP_LEVEL.get(expr.text, 6)
    if kind == "int" and expr.text.startswith("-"):  # `-2`, folded into a number: a unary minus
        return 12
    return {"cond": 1, "or": 2, "and": 3, "not": 4, "compare": 5, "unary": 12}.get(kind, _PRIMARY)


def _operand(expr: PyExpr, least: int) -> str:
    text = unparse(expr)
    return f"({text})" if _level(expr) < least else text


def _str(expr: PyExpr) -> str:
    quote = "'" if '"' in expr.text and "'" not in expr.text else '"'
    return quote + expr.text + quote


def _seq(expr: PyExpr) -> str:
    opening, closing = _SEQ.get(expr.text, ("(", ")"))
    items = ", ".join(unparse(item) for item in expr.args)
    if expr.text == "tuple" and len(expr.args) == 1:
        items += ","
    return f"{opening}{items}{closing}"


def _fstr(expr: PyExpr) -> str:
    pieces = expr.text.split("{}")
    holes = [unparse(arg) for arg in expr.args]
    body = pieces[0] + "".join(f"{{{hole}}}{piece}" for hole, piece in zip(holes, pieces[1:]))
    return 'f"' + body + '"'


def _call(expr: PyExpr) -> str:
    callee, *args = expr.args
    return f"{_operand(callee, _PRIMARY)}({', '.join(unparse(arg) for arg in args)})"


def _kw(expr: PyExpr) -> str:
    return f"{expr.text}={unparse(expr.args[0])}"


def _attr(expr: PyExpr) -> str:
    return f"{_operand(expr.args[0], _PRIMARY)}.{expr.text}"


def _subscript(expr: PyExpr) -> str:
    return f"{_operand(expr.args[0], _PRIMARY)}[{unparse(expr.args[1])}]"


def _compare(expr: PyExpr) -> str:
    operands = [_operand(arg, 6) for arg in expr.args]
    ops = expr.text.split(",") if expr.text else []
    text = operands[0] if operands else ""
    for op, operand in zip(ops, operands[1:]):
        text += f" {op} {operand}"
    return text


def _boolean(expr: PyExpr) -> str:
    left, right = expr.args
    level = _level(expr)
    return f"{_operand(left, level)} {expr.kind} {_operand(right, level + 1)}"


def _not(expr: PyExpr) -> str:
    return f"not {_operand(expr.args[0], 4)}"


def _binop(expr: PyExpr) -> str:
    left, right = expr.args
    level = _level(expr)
    if expr.text == "**":  # binds to the right, and more loosely than a unary operator on its right
        return f"{_operand(left, _PRIMARY)} ** {_operand(right, 12)}"
    return f"{_operand(left, level)} {expr.text} {_operand(right, level + 1)}"


def _unary(expr: PyExpr) -> str:
    space = " " if expr.text.isalpha() else ""
    return f"{expr.text}{space}{_operand(expr.args[0], 12)}"


def _cond(expr: PyExpr) -> str:
    then, test, other = expr.args
    return f"{_operand(then, 2)} if {_operand(test, 2)} else {_operand(other, 1)}"


def _dict(expr: PyExpr) -> str:
    return "{" + ", ".join(f"{_str(item)}: {unparse(item.args[0])}" for item in expr.args) + "}"


def _comp(expr: PyExpr) -> str:
    opening, closing = _BRACKETS.get(expr.text, ("(", ")"))
    return f"{opening}{unparse(expr.args[0])} for ...{closing}"


_WRITERS = {
    "str": _str, "seq": _seq, "fstr": _fstr, "call": _call, "kw": _kw, "attr": _attr, "subscript": _subscript,
    "compare": _compare, "and": _boolean, "or": _boolean, "not": _not, "binop": _binop, "unary": _unary,
    "cond": _cond, "dict": _dict, "comp": _comp,
}
