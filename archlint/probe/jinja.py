"""A reader of the few Jinja constructs kernel templates use, to write out the unit a JIT would
compile: `{% for x in [literals] %}`, `{% if %}/{% elif %}/{% else %}` over literal tests,
`{% set x = literal %}`, `{{ name | trim | replace("a", "b") }}`, whitespace control. The values
of the names the JIT passes come from rules/kb/cutlass.toml. Nothing is evaluated beyond literals,
names, `in`, `==`, `!=`, `and`, `or`, `not`; anything else makes the template unreadable (None)."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

_TAG = re.compile(r"\{%(-?)\s*(.*?)\s*(-?)%\}|\{\{(-?)\s*(.*?)\s*(-?)\}\}|\{#.*?#\}", re.S)

Bindings = tuple[tuple[str, str], ...]


class Unreadable(Exception):
    pass


@dataclass
class _Node:
    kind: str  # 'text' | 'expr' | 'for' | 'if' | 'set'
    text: str = ""
    arms: list[tuple[str, list[_Node]]] = field(default_factory=list)  # if: (condition, body); for: (target in iter, body)


def render(template: str, values: dict[str, str]) -> list[tuple[str, Bindings]] | None:
    """The rendered text as pieces, each with the loop variables and values bound where it was written."""
    try:
        nodes, rest = _parse(_tokens(template), 0, ())
        out: list[tuple[str, Bindings]] = []
        _emit(nodes, dict(values), tuple(sorted(values.items())), out)
        return out
    except (Unreadable, SyntaxError, ValueError, RecursionError):
        return None


def _tokens(text: str) -> list[tuple[str, str]]:
    tokens: list[tuple[str, str]] = []
    pos, strip_next = 0, False
    for match in _TAG.finditer(text):
        before = text[pos:match.start()]
        if strip_next:
            before = before.lstrip()
        if match.group(1) == "-" or match.group(4) == "-":
            before = before.rstrip()
        tokens.append(("text", before))
        if match.group(2) is not None:
            tokens.append(("tag", match.group(2)))
            strip_next = match.group(3) == "-"
        elif match.group(5) is not None:
            tokens.append(("expr", match.group(5)))
            strip_next = match.group(6) == "-"
        else:
            strip_next = False
        pos = match.end()
    tail = text[pos:]
    tokens.append(("text", tail.lstrip() if strip_next else tail))
    return tokens


def _parse(tokens: list[tuple[str, str]], i: int, ends: tuple[str, ...]) -> tuple[list[_Node], int]:
    nodes: list[_Node] = []
    while i < len(tokens):
        kind, text = tokens[i]
        if kind == "text":
            nodes.append(_Node("text", text))
        elif kind == "expr":
            nodes.append(_Node("expr", text))
        else:
            word = text.split(None, 1)[0]
            if word in ends:
                return nodes, i
            if word == "for":
                body, i = _parse(tokens, i + 1, ("endfor",))
                nodes.append(_Node("for", arms=[(text[3:].strip(), body)]))
            elif word == "if":
                node, cond = _Node("if"), text[2:].strip()
                while True:
                    body, i = _parse(tokens, i + 1, ("elif", "else", "endif"))
                    node.arms.append((cond, body))
                    if i >= len(tokens):
                        raise Unreadable("unclosed if")
                    closing = tokens[i][1]
                    if closing.startswith("endif"):
                        break
                    cond = closing[4:].strip() if closing.startswith("elif") else "True"
                nodes.append(node)
            elif word == "set":
                nodes.append(_Node("set", text[3:].strip()))
            else:
                raise Unreadable(f"{{% {word} %}}")
        i += 1
    if ends:
        raise Unreadable(f"no {ends[0]}")
    return nodes, i


def _emit(nodes: list[_Node], env: dict, bound: Bindings, out: list[tuple[str, Bindings]]) -> None:
    for node in nodes:
        if node.kind == "text":
            out.append((node.text, bound))
        elif node.kind == "expr":
            out.append((str(_expression(node.text, env)), bound))
        elif node.kind == "set":
            name, _, value = node.text.partition("=")
            env[name.strip()] = _value(ast.parse(value.strip(), mode="eval").body, env)
        elif node.kind == "for":
            head, body = node.arms[0]
            target, _, source = head.partition(" in ")
            name = target.strip()
            if not name.isidentifier():
                raise Unreadable(head)
            items = _value(ast.parse(source.strip(), mode="eval").body, env)
            if not isinstance(items, list):
                raise Unreadable(head)
            for item in items:
                inner = {**env, name: item}
                _emit(body, inner, tuple(sorted({**dict(bound), name: str(item)}.items())), out)
        else:
            for cond, body in node.arms:
                if _value(ast.parse(cond, mode="eval").body, env):
                    _emit(body, env, bound, out)
                    break


def _expression(text: str, env: dict) -> object:
    parts = re.split(r"\|(?=(?:[^\"']|\"[^\"]*\"|'[^']*')*$)", text)
    value = _value(ast.parse(parts[0].strip(), mode="eval").body, env)
    for part in parts[1:]:
        call = ast.parse(part.strip(), mode="eval").body
        name = call.func.id if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) else getattr(call, "id", "")
        args = [_value(a, env) for a in call.args] if isinstance(call, ast.Call) else []
        if name == "trim":
            value = str(value).strip()
        elif name == "replace" and len(args) == 2:
            value = str(value).replace(str(args[0]), str(args[1]))
        elif name in ("lower", "upper"):
            value = getattr(str(value), name)()
        else:
            raise Unreadable(f"filter {part.strip()}")
    return value


def _value(node: ast.expr, env: dict) -> object:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id in env:
            return env[node.id]
        if node.id in ("true", "True"):
            return True
        if node.id in ("false", "False"):
            return False
        raise Unreadable(f"`{node.id}` has no value")
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_value(e, env) for e in node.elts]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return not _value(node.operand, env)
    if isinstance(node, ast.BoolOp):
        values = [_value(v, env) for v in node.values]
        return all(values) if isinstance(node.op, ast.And) else any(values)
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        left, right = _value(node.left, env), _value(node.comparators[0], env)
        op = node.ops[0]
        if isinstance(op, (ast.In, ast.NotIn)):
            found = left in right  # type: ignore[operator]
            return found if isinstance(op, ast.In) else not found
        if isinstance(op, (ast.Eq, ast.NotEq)):
            return (left == right) == isinstance(op, ast.Eq)
    raise Unreadable(ast.dump(node)[:80])
