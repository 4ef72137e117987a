"""Host conditions as expressions in capability names, and what such an expression says.

A condition, a local's value or a returned value of host code is kept as a `model.cexpr.Expr` whose
capability reads are names (MAJOR, MINOR, CALL + a helper's name): `host_expr` builds it from the
tree-sitter expression; `capability_named` tells whether it reads the capability at all, `pure`
whether it reads nothing else (what a capability helper may return). It is its own module because
it turns syntax into values; the reader of host code decides which statements matter.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from tree_sitter import Node

from archlint.extract.cuda.host_nodes import call_arguments, called_name
from archlint.lang.cpp.constant import text
from archlint.model.cexpr import Binary, Expr, Name, Num, Opaque, Ternary, Unary
from archlint.model.host import CALL, MAJOR, MINOR

_BINARY = frozenset(("&&", "||", "==", "!=", "<", "<=", ">", ">=", "+", "-", "*", "/", "%", "&", "|", "^", "<<", ">>"))


def host_expr(node: Node, env: dict[str, Expr], fields: Mapping[str, str]) -> Expr:
    """The expression as an `Expr` in capability names: a local by what `env` holds for it, a field
    `fields` names (`dprops->major`) by the capability part it reads, any other call by its name."""
    kind = node.type
    if kind == "parenthesized_expression":
        inner = [c for c in node.named_children if c.type != "comment"]
        return host_expr(inner[0], env, fields) if len(inner) == 1 else Opaque(text(node))
    if kind == "binary_expression":
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        operator = node.child_by_field_name("operator")
        op = text(operator) if operator is not None else ""
        op = {"and": "&&", "or": "||"}.get(op, op)
        if left is None or right is None or op not in _BINARY:
            return Opaque(text(node))
        return Binary(op, host_expr(left, env, fields), host_expr(right, env, fields))
    if kind == "unary_expression":
        operator, argument = node.child_by_field_name("operator"), node.child_by_field_name("argument")
        op = text(operator) if operator is not None else ""
        op = "!" if op == "not" else op
        if argument is None or op not in ("!", "-", "+", "~"):
            return Opaque(text(node))
        return Unary(op, host_expr(argument, env, fields))
    if kind == "conditional_expression":
        parts = [node.child_by_field_name(f) for f in ("condition", "consequence", "alternative")]
        if any(p is None for p in parts):
            return Opaque(text(node))
        return Ternary(*(host_expr(p, env, fields) for p in parts if p is not None))
    if kind == "number_literal":
        try:
            return Num(int(text(node).rstrip("uUlL"), 0))
        except ValueError:
            return Opaque(text(node))
    if kind in ("true", "false"):
        return Num(1 if kind == "true" else 0)
    if kind == "identifier":
        name = text(node)
        return env.get(name, Name(name))
    if kind == "field_expression":
        member = node.child_by_field_name("field")
        which = fields.get(text(member)) if member is not None else None
        if which is not None:
            return Name(MAJOR if which == "major" else MINOR)
        return Opaque(text(node))
    if kind in ("cast_expression", "static_cast_expression"):
        value = node.child_by_field_name("value")
        return host_expr(value, env, fields) if value is not None else Opaque(text(node))
    if kind == "call_expression":
        callee = called_name(node)
        if callee in ("static_cast", "int", "int32_t", "int64_t"):
            arguments = call_arguments(node)
            return host_expr(arguments[0], env, fields) if len(arguments) == 1 else Opaque(text(node))
        return Name(f"{CALL}{callee}") if callee else Opaque(text(node))
    return Opaque(text(node))


def _leaves(expr: Expr) -> Iterator[str]:
    if isinstance(expr, Name):
        yield expr.name
    elif isinstance(expr, Unary):
        yield from _leaves(expr.operand)
    elif isinstance(expr, Binary):
        yield from _leaves(expr.left)
        yield from _leaves(expr.right)
    elif isinstance(expr, Ternary):
        for part in (expr.cond, expr.then, expr.other):
            yield from _leaves(part)


def capability_named(expr: Expr) -> bool:
    """Whether a condition reads the capability, or calls what may be a capability helper."""
    return any(leaf.startswith("@") for leaf in _leaves(expr))


def pure(expr: Expr) -> bool:
    """Only capability names, numbers and operators: what a helper may return."""
    if isinstance(expr, Opaque):
        return False
    return all(leaf.startswith("@") for leaf in _leaves(expr)) and capability_named(expr)


def any_of(conditions: list[Expr]) -> Expr:
    value = conditions[0]
    for cond in conditions[1:]:
        value = Binary("||", value, cond)
    return value
