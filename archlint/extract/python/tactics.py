"""Tile lists of CUTLASS kernel generators, read without running them.

A generator function holds a literal tile list (`cta_shapes_mnk = [[128, 256, 128], ...]`, names
from rules/kb/cutlass.toml), crosses it with other literal lists through `itertools.product` and
drops combinations with `if ...: continue` in the loop body. The lists are evaluated as literals;
the loop body is interpreted for each combination over literals only (assignments, `if`,
comparisons, `in`, `and`/`or`/`not`, `isinstance(x, tuple)`, `continue`). A statement that cannot
be read leaves the combination in, marked unsure; nothing else is ever evaluated.
"""

from __future__ import annotations

import ast
from itertools import product
from typing import Iterator

from archlint.knowledge.cutlass import CutlassKnowledge, load_cutlass
from archlint.model.tactics import TacticChoice, TileListFact, TileRow


class _Unknown(Exception):
    """An expression or statement the reader does not evaluate."""


class _Symbol(str):
    """A name the generator uses as a value (`DataType.e4m3`, `e2m1`), not bound in the function:
    compared by spelling (a generator spells each value one way)."""


class _Continue(Exception):
    pass


_UNREAD = object()  # the value of an assignment the reader does not evaluate


def tile_lists(path: str, data: bytes, knowledge: CutlassKnowledge | None = None) -> tuple[TileListFact, ...]:
    knowledge = knowledge or load_cutlass()
    if not any(marker in data for marker in knowledge.markers()):
        return ()
    try:
        tree = ast.parse(data)
    except (SyntaxError, ValueError):
        return ()
    found = []
    for qualname, function in _functions(tree):
        found.extend(_read_function(path, qualname, function, knowledge))
    return tuple(found)


def _functions(tree: ast.Module) -> Iterator[tuple[str, ast.FunctionDef]]:
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            yield node.name, node
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    yield f"{node.name}.{item.name}", item


def _read_function(path: str, qualname: str, function: ast.FunctionDef, knowledge: CutlassKnowledge) -> list[TileListFact]:
    env: dict[str, object] = {}
    lists: list[tuple[str, ast.Assign, tuple[TileRow, ...]]] = []
    for statement in _flat(function.body):
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1 and isinstance(statement.targets[0], ast.Name):
            name = statement.targets[0].id
            try:
                env[name] = _literal(statement.value)
            except _Unknown:
                env.pop(name, None)
                continue
            if name in knowledge.tile_lists and (rows := _tiles(statement.value)):
                lists.append((name, statement, rows))
    out = []
    for name, statement, rows in lists:
        choices, note = _choices(function, name, rows, env, knowledge)
        out.append(TileListFact(path, qualname, name, statement.lineno, statement.col_offset + 1, rows, choices,
                                _int(env, knowledge.arch_names), _int(env, knowledge.stage_names), note))
    return out


def _flat(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements of a function body in source order, those inside `with`, `if` and `try`
    blocks and loop bodies included; nested functions and classes left out."""
    for statement in body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        yield statement
        if isinstance(statement, (ast.With, ast.If, ast.For, ast.While, ast.Try)):
            for block in ("body", "orelse", "finalbody"):
                yield from _flat(getattr(statement, block, []))
            for handler in getattr(statement, "handlers", []):
                yield from _flat(handler.body)


def _int(env: dict[str, object], names: frozenset[str]) -> int | None:
    for name in names:
        value = env.get(name)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def _tiles(node: ast.expr) -> tuple[TileRow, ...]:
    if not isinstance(node, (ast.List, ast.Tuple)):
        return ()
    rows = []
    for element in node.elts:
        if not isinstance(element, (ast.List, ast.Tuple)) or len(element.elts) != 3:
            return ()
        values = [e.value for e in element.elts if isinstance(e, ast.Constant) and type(e.value) is int]
        if len(values) != 3:
            return ()
        rows.append(TileRow(values[0], values[1], values[2], element.lineno, element.col_offset + 1))
    return tuple(rows)


def _choices(function: ast.FunctionDef, name: str, rows: tuple[TileRow, ...], env: dict[str, object],
             knowledge: CutlassKnowledge) -> tuple[tuple[TacticChoice, ...], str]:
    """Every combination the loop over the tile list emits, with its axes by role."""
    for loop in (s for s in _flat(function.body) if isinstance(s, ast.For)):
        axes = _loop_axes(loop, name, env)
        if axes is None:
            continue
        names, values = axes
        count = 1
        for options in values:
            count *= len(options)
        if count > knowledge.combinations_limit:
            return _plain(rows), f"{count} combinations, more than archlint enumerates"
        return _run_loop(loop, names, values, name, rows, env, knowledge)
    return _plain(rows), ""


def _plain(rows: tuple[TileRow, ...]) -> tuple[TacticChoice, ...]:
    return tuple(TacticChoice(i, ()) for i in range(len(rows)))


def _loop_axes(loop: ast.For, name: str, env: dict[str, object]) -> tuple[list[tuple[str, str]], list[list[object]]] | None:
    """(loop variable names, the list each iterates) for `for (a, b) in product(xs, ys)`, or for a
    name bound to such a call; None when the loop does not cross the tile list."""
    source: ast.expr = loop.iter
    if isinstance(source, ast.Name) and isinstance(env.get(source.id), _Call):
        call = env[source.id]
        assert isinstance(call, _Call)
        args = call.args
    elif isinstance(source, ast.Call) and _callee(source.func) in _PRODUCT:
        args = tuple(a.id if isinstance(a, ast.Name) else a for a in source.args)
    elif isinstance(source, ast.Name) and source.id == name:
        args = (name,)
    else:
        return None
    if name not in args:
        return None
    targets = loop.target.elts if isinstance(loop.target, (ast.Tuple, ast.List)) else [loop.target]
    if len(targets) != len(args) or not all(isinstance(t, ast.Name) for t in targets):
        return None
    values: list[list[object]] = []
    for arg in args:
        value = env.get(arg) if isinstance(arg, str) else _maybe_literal(arg)
        if not isinstance(value, (list, tuple)):
            return None
        values.append(list(value))
    names = [t.id for t in targets if isinstance(t, ast.Name)]
    return [(n, a if isinstance(a, str) else "") for n, a in zip(names, args)], values


def _run_loop(loop: ast.For, pairs: list[tuple[str, str]], values: list[list[object]], list_name: str, rows: tuple[TileRow, ...],
              env: dict[str, object], knowledge: CutlassKnowledge) -> tuple[tuple[TacticChoice, ...], str]:
    tile_at = next(i for i, (_, arg) in enumerate(pairs) if arg == list_name)
    roles = [knowledge.axes.get(variable) or knowledge.axes.get(arg, "") for variable, arg in pairs]
    choices: list[TacticChoice] = []
    unsure = 0
    for combo in product(*(range(len(v)) for v in values)):
        scope = dict(env)
        for (variable, _), options, index in zip(pairs, values, combo):
            scope[variable] = options[index]
        try:
            _run(loop.body, scope)
            sure = True
        except _Continue:
            continue
        except _Unknown:
            sure, unsure = False, unsure + 1
        axes = tuple((role, _text(options[index])) for role, options, index in zip(roles, values, combo) if role)
        choices.append(TacticChoice(combo[tile_at], axes, sure))
    note = f"{unsure} combination(s) under a filter archlint does not read" if unsure else ""
    return tuple(choices), note


def _run(body: list[ast.stmt], scope: dict[str, object]) -> None:
    for statement in body:
        if isinstance(statement, ast.Continue):
            raise _Continue
        if isinstance(statement, ast.If):
            _run(statement.body if _truth(_value(statement.test, scope)) else statement.orelse, scope)
        elif isinstance(statement, ast.Assign):
            try:
                value = _value(statement.value, scope)
            except _Unknown:
                value = _UNREAD  # a call's result: only a test that reads it is unknown
            for target in statement.targets:
                _bind(target, value, scope)
        elif isinstance(statement, (ast.Return, ast.Break, ast.Raise, ast.While, ast.Try, ast.With)):
            raise _Unknown
        elif isinstance(statement, ast.For) and _continues(statement.orelse):
            raise _Unknown
        # other statements (calls, nested loops, appends) emit; they drop nothing


def _continues(body: list[ast.stmt]) -> bool:
    return any(isinstance(node, ast.Continue) for statement in body for node in ast.walk(statement))


def _bind(target: ast.expr, value: object, scope: dict[str, object]) -> None:
    if isinstance(target, ast.Name):
        scope[target.id] = value
    elif isinstance(target, (ast.Tuple, ast.List)) and value is _UNREAD:
        for element in target.elts:
            _bind(element, value, scope)
    elif isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (list, tuple)) and len(value) == len(target.elts):
        for element, item in zip(target.elts, value):
            _bind(element, item, scope)
    else:
        raise _Unknown


def _truth(value: object) -> bool:
    if isinstance(value, (bool, int, str, list, tuple)) or value is None:
        return bool(value)
    raise _Unknown


_COMPARE = {
    ast.Eq: lambda a, b: _same(a, b), ast.NotEq: lambda a, b: not _same(a, b),
    ast.Lt: lambda a, b: _number(a) < _number(b), ast.LtE: lambda a, b: _number(a) <= _number(b),
    ast.Gt: lambda a, b: _number(a) > _number(b), ast.GtE: lambda a, b: _number(a) >= _number(b),
    ast.In: lambda a, b: _contains(b, a), ast.NotIn: lambda a, b: not _contains(b, a),
}
_PRODUCT = ("product", "itertools.product")
_TYPES = {"tuple": tuple, "list": list, "int": int, "bool": bool, "str": str}


def _same(a: object, b: object) -> bool:
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, _Symbol) != isinstance(b, _Symbol):
        raise _Unknown  # a name against a literal: what the name stands for is not read
    return a == b


def _number(value: object) -> int:
    if type(value) is int:
        return value
    raise _Unknown


def _contains(container: object, item: object) -> bool:
    if not isinstance(container, (list, tuple)):
        raise _Unknown
    return any(_same(item, element) for element in container)


def _value(node: ast.expr, scope: dict[str, object]) -> object:
    if isinstance(node, ast.Name):
        if scope.get(node.id) is _UNREAD:
            raise _Unknown
        return scope[node.id] if node.id in scope else _Symbol(node.id)
    if isinstance(node, ast.Compare):
        left = _value(node.left, scope)
        for op, comparator in zip(node.ops, node.comparators):
            right = _value(comparator, scope)
            check = _COMPARE.get(type(op))
            if check is None or not check(left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.BoolOp):
        results = (_truth(_value(v, scope)) for v in node.values)
        return all(results) if isinstance(node.op, ast.And) else any(results)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return not _truth(_value(node.operand, scope))
    if isinstance(node, ast.Call) and _callee(node.func) == "isinstance" and len(node.args) == 2:
        kind = _TYPES.get(_callee(node.args[1]))
        if kind is None:
            raise _Unknown
        return isinstance(_value(node.args[0], scope), kind) and not isinstance(_value(node.args[0], scope), _Symbol)
    if isinstance(node, (ast.Tuple, ast.List)):
        items = [_value(e, scope) for e in node.elts]
        return tuple(items) if isinstance(node, ast.Tuple) else items
    if isinstance(node, ast.Attribute):
        return _Symbol(_callee(node))
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, str, bool, type(None))):
        return node.value
    if isinstance(node, ast.Subscript):
        return _item(_value(node.value, scope), _value(node.slice, scope))
    raise _Unknown


def _item(container: object, index: object) -> object:
    if isinstance(container, (list, tuple)) and type(index) is int and -len(container) <= index < len(container):
        return container[index]
    raise _Unknown


class _Call:
    """A call the reader keeps unevaluated: `product(a, b)` with its arguments' names."""

    def __init__(self, callee: str, args: tuple[object, ...]) -> None:
        self.callee, self.args = callee, args


def _literal(node: ast.expr) -> object:
    """A literal list, tuple, number, string or a name used as a value; `product(...)` kept."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, str, bool, type(None))):
        return node.value
    if isinstance(node, (ast.List, ast.Tuple)):
        items = [_literal(e) for e in node.elts]
        return tuple(items) if isinstance(node, ast.Tuple) else items
    if isinstance(node, (ast.Name, ast.Attribute)):
        return _Symbol(_callee(node))
    if isinstance(node, ast.Call) and _callee(node.func) in _PRODUCT and not node.keywords:
        return _Call("product", tuple(a.id if isinstance(a, ast.Name) else a for a in node.args))
    raise _Unknown


def _maybe_literal(node: object) -> object:
    try:
        return _literal(node) if isinstance(node, ast.expr) else None
    except _Unknown:
        return None


def _callee(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _callee(node.value)
        return f"{base}.{node.attr}" if base else ""
    return ""


def _text(value: object) -> str:
    if isinstance(value, (list, tuple)):
        return "(" + ", ".join(_text(v) for v in value) + ")"
    return str(value)
