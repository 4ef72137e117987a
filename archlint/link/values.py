"""The texts a Python string expression can take, read from the scanned code, never run.

Used for a template placeholder that stands for code (`{{ variant_decl }}`): the JIT passes it a
string built in Python, often a literal (`"#include<flashinfer/attention/variants.cuh>"`) or
f-strings over names (`f"{dtype}* {var};"`). A part interpolated inside a line of code stands for a
value (a type, a name), as a template's own value placeholders do, and becomes `VALUE`; a part that
is a line of its own is followed. Anything the scanned code does not spell out (a parameter no
scanned call passes, a call it cannot read, a splat) gives `Texts.unknown(why)`: unknown, never guessed.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from archlint.model.python import PyExpr

VALUE = "__archlint_value"
_MAX_TEXTS = 16
_MAX_DEPTH = 10
_MAX_ELEMENTS = 256  # the files one sequence of sources can name
_SEQUENCE_CALLS = frozenset({"tuple", "list", "sorted", "set", "frozenset"})


@dataclass(frozen=True)
class Texts:
    values: frozenset[str] = frozenset()  # every text it can take, when known
    why: str = ""  # when not known: what could not be read
    known: bool = True

    @staticmethod
    def unknown(why: str) -> Texts:
        return Texts(frozenset(), why, known=False)


def _unknown(why: str) -> Texts:
    return Texts.unknown(why)


def _known(values) -> Texts:
    values = frozenset(values)
    return Texts(values) if len(values) <= _MAX_TEXTS else _unknown("too many possible values")


class Reader:
    def __init__(self, index):
        self.index = index

    def texts(self, module: str, function: str, expr: PyExpr, depth: int = 0) -> Texts:
        """What `expr`, written in `module` inside local function `function`, can evaluate to."""
        if depth > _MAX_DEPTH:
            return _unknown("definition chain too deep")
        kind = expr.kind
        if kind == "str":
            return _known({expr.text})
        if kind == "none":
            return _known({""})
        if kind == "fstr":
            return self._fstring(module, function, expr, depth)
        if kind == "cond":
            return self._union([self.texts(module, function, expr.args[i], depth + 1) for i in (0, 2)])
        if kind == "binop" and expr.text == "+":
            return self._concat([self.texts(module, function, arg, depth + 1) for arg in expr.args])
        if kind == "call" and expr.args[0].kind == "attr" and expr.args[0].text == "join":
            return self._join(module, function, expr, depth)
        if kind == "name":
            return self._name(module, function, expr.text, depth)
        if kind == "subscript":
            return self._subscript(module, function, expr, depth)
        return _unknown(f"cannot read `{expr.text or expr.kind}`")

    # ---------------------------------------------------------------- forms

    def _fstring(self, module, function, expr, depth) -> Texts:
        pieces = _literal_pieces(expr.text)
        parts: list[Texts] = [_known({pieces[0]})]
        for hole, (before, after) in enumerate(zip(pieces, pieces[1:])):
            starts_line = before.rpartition("\n")[2].strip() == "" and ("\n" in before or hole == 0)
            ends_line = after.partition("\n")[0].strip() == "" and ("\n" in after or hole == len(pieces) - 2)
            alone = starts_line and ends_line
            inner = expr.args[hole] if hole < len(expr.args) else None
            if alone and inner is not None:
                parts.append(self.texts(module, function, inner, depth + 1))
            else:
                parts.append(_known({VALUE}))
            parts.append(_known({after}))
        return self._concat(parts)

    def _join(self, module, function, expr, depth) -> Texts:
        separator = self.texts(module, function, expr.args[0].args[0], depth + 1)
        items = expr.positional()
        if not separator.known or len(separator.values) != 1 or len(items) != 1:
            return _unknown("cannot read a `join`")
        elements = self._elements(module, function, items[0], depth + 1)
        if not elements.known:
            return elements
        return _known({next(iter(separator.values)).join(sorted(elements.values))})

    def _elements(self, module, function, expr, depth) -> Texts:
        """Every text an element of a list expression can be (one comprehension pass)."""
        if expr.kind == "seq":
            return self._union([self.texts(module, function, item, depth + 1) for item in expr.args])
        if expr.kind == "comp":
            return self.texts(module, function, expr.args[0], depth + 1)
        if expr.kind == "binop" and expr.text == "+":
            return self._union([self._elements(module, function, arg, depth + 1) for arg in expr.args])
        return _unknown(f"cannot read the list `{expr.text or expr.kind}`")

    def elements(self, module: str, function: str, expr: PyExpr, depth: int = 0) -> Texts:
        """Every text an element of a sequence can be, up to `_MAX_ELEMENTS`: a list, tuple or set
        display (its `*xs` items included), a comprehension (its element, once), sequences joined by
        `+`, `tuple(...)`, `list(...)`, `sorted(...)` of one, or a name bound to one of these."""
        if depth > _MAX_DEPTH:
            return _unknown("definition chain too deep")
        kind = expr.kind
        if kind == "seq":
            return self._many([self._item(module, function, item, depth + 1) for item in expr.args])
        if kind == "comp":
            return self.texts(module, function, expr.args[0], depth + 1)
        if kind == "binop" and expr.text == "+":
            return self._many([self.elements(module, function, arg, depth + 1) for arg in expr.args])
        if kind == "call" and expr.text in _SEQUENCE_CALLS and len(expr.positional()) == 1 and len(expr.args) == 2:
            return self.elements(module, function, expr.positional()[0], depth + 1)
        if kind == "name":
            return self._bound_elements(module, function, expr.text, depth)
        if kind in ("subscript", "call"):
            found = self._entries(module, function, expr, depth + 1)
            if found is None:
                return _unknown(f"cannot read `{expr.text or expr.kind}`")
            return self._many([self.elements(owner, local, value, depth + 1) for owner, local, value in found])
        return _unknown(f"cannot read the sequence `{expr.text or expr.kind}`")

    def _entries(self, module, function, expr, depth) -> list[tuple[str, str, PyExpr]] | None:
        """What a subscript of dict literals can be: `record["sources"]` where `record = MODULES[name]`
        is that entry of every record of the table (the key chosen at run time may be any of them);
        None where a step is not a dict literal the scanned code spells."""
        if depth > _MAX_DEPTH:
            return None
        callee = expr.args[0] if expr.kind == "call" else None
        if expr.kind == "subscript":
            container, key = expr.args
        elif callee is not None and callee.kind == "attr" and callee.text == "get" and callee.args and expr.positional():
            container, key = callee.args[0], PyExpr("other", "")  # `MODULES.get(name)`
        else:
            return None
        tables = self._dicts(module, function, container, depth + 1)
        if tables is None:
            return None
        out = []
        for owner, local, table in tables:
            values = [item.args[0] for item in table.args if key.kind != "str" or item.text == key.text]
            if key.kind == "str" and not values:
                return None
            out += [(owner, local, value) for value in values]
        return out

    def _dicts(self, module, function, expr, depth) -> list[tuple[str, str, PyExpr]] | None:
        """The dict literals an expression can be: a literal, a name bound to one, an entry of one,
        either arm of a conditional expression."""
        if depth > _MAX_DEPTH:
            return None
        if expr.kind == "dict":
            return [(module, function, expr)]
        if expr.kind == "cond":  # `MODULES[name] if name in MODULES else FROZEN[name]`: either
            return self._all([self._dicts(module, function, expr.args[i], depth + 1) for i in (0, 2)])
        if expr.kind == "name":
            facts = self.index.modules.get(module)
            local = facts.assigns.having(lambda targets, own: own == function and targets == (expr.text,)) if facts else []
            bound = [(module, function, a.value) for a in local]
            if not bound:
                found = self.index.assign_of(module, expr.text, function)
                if found is None or found[1].unpack:
                    return None
                bound = [(found[0], found[1].function, found[1].value)]
            return self._all([self._dicts(owner, local_fn, value, depth + 1) for owner, local_fn, value in bound])
        entries = self._entries(module, function, expr, depth + 1)
        if entries is None:
            return None
        return self._all([self._dicts(owner, local_fn, value, depth + 1) for owner, local_fn, value in entries])

    @staticmethod
    def _all(parts: list[list[tuple[str, str, PyExpr]] | None]) -> list[tuple[str, str, PyExpr]] | None:
        if any(part is None for part in parts):
            return None
        return [item for part in parts if part is not None for item in part]

    def _item(self, module, function, item, depth) -> Texts:
        """The texts one item of a display stands for: its own, or, for `*xs`, every element of `xs`."""
        if item.kind != "splat":
            return self.texts(module, function, item, depth)
        return self.elements(module, function, item.args[0], depth) if item.args else _unknown(f"cannot read `{item.text}`")

    def _bound_elements(self, module, function, name, depth) -> Texts:
        facts = self.index.modules.get(module)
        local = facts.assigns.having(lambda targets, own: own == function and targets == (name,)) if facts else []
        if local:
            return self._many([self.elements(module, function, a.value, depth + 1) for a in local])
        found = self.index.assign_of(module, name, function)
        if found is None or found[1].unpack:
            return _unknown(f"`{name}` has no definition in the scanned code")
        return self.elements(found[0], found[1].function, found[1].value, depth + 1)

    @staticmethod
    def _many(results: list[Texts]) -> Texts:
        """The union of element texts, up to `_MAX_ELEMENTS` (a source list may name dozens of files)."""
        for result in results:
            if not result.known:
                return result
        values = frozenset().union(*(r.values for r in results)) if results else frozenset()
        return Texts(values) if len(values) <= _MAX_ELEMENTS else _unknown("too many elements")

    def _subscript(self, module, function, expr, depth) -> Texts:
        container, key = expr.args
        if key.kind != "str" or container.kind != "name":
            return _unknown("cannot read a subscript")
        found = self.index.assign_of(module, container.text, function)
        if found is None or found[1].value.kind != "dict":
            return _unknown(f"`{container.text}` is not a dict literal")
        owner, assign = found
        value = _entry(assign.value, key.text)
        if value is None:
            return _unknown(f"`{container.text}` has no key `{key.text}`")
        return self.texts(owner, assign.function, value, depth + 1)

    def _name(self, module, function, name, depth) -> Texts:
        facts = self.index.modules.get(module)
        local = facts.assigns.having(lambda targets, own: own == function and name in targets) if facts else []
        if local:
            return self._union([self._assigned(module, a, name, depth) for a in local])
        qualname = self.index.qualify(module, function)
        declared = self.index.functions.get(qualname)
        if declared is not None and name in declared.params:
            return self._argument(qualname, declared, name, depth)
        found = self.index.assign_of(module, name, function)
        if found is not None:
            return self._assigned(found[0], found[1], name, depth)
        return _unknown(f"`{name}` has no definition in the scanned code")

    def _assigned(self, module, assign, name, depth) -> Texts:
        if not assign.unpack:
            return self.texts(module, assign.function, assign.value, depth + 1)
        position = assign.targets.index(name)
        if assign.value.kind == "call":
            return self._returned(module, assign.function, assign.value, position, depth)
        if assign.value.kind == "seq" and position < len(assign.value.args):
            return self.texts(module, assign.function, assign.value.args[position], depth + 1)
        return _unknown(f"cannot read how `{name}` is unpacked")

    def _returned(self, module, function, call, position, depth) -> Texts:
        """Element `position` of what a called function returns."""
        target = self.index.function_of(module, call.text, function)
        if target is None:
            return _unknown(f"`{call.text}` is not a scanned function")
        owner, local = self._split(target)
        returns = [r for r in self.index.modules[owner].returns if r.function == local and r.value is not None]
        results = []
        for returned in returns:
            value = returned.value
            if value.kind != "seq" or position >= len(value.args):
                return _unknown(f"cannot read what `{call.text}` returns")
            results.append(self.texts(owner, local, value.args[position], depth + 1))
        return self._union(results) if results else _unknown(f"`{call.text}` returns nothing readable")

    def _argument(self, qualname, declared, name, depth) -> Texts:
        """The texts every scanned call of a function passes for one of its parameters."""
        callers = self.index.callers(qualname)
        if not callers:
            return _unknown(f"`{name}` is a parameter of `{declared.name}`, which no scanned code calls")
        offset = 1 if declared.cls and declared.params[:1] in (("self",), ("cls",)) else 0
        position = declared.params.index(name) - offset
        results = []
        for caller in callers:
            owner, local = self._split(caller)
            calls = self.index.modules[owner].calls
            for call in calls.having(lambda callee, function: function == local
                                     and self.index.function_of(owner, callee, function) == qualname):
                passed = _passed(call.expr, name, position)
                if passed is None:
                    results.append(_unknown(f"a call of `{declared.name}` passes `{name}` in a splat"))
                elif passed.kind == "missing":
                    results.append(_known({""}))  # the default; a template renders a missing name as nothing
                else:
                    results.append(self.texts(owner, local, passed, depth + 1))
        return self._union(results) if results else _unknown(f"no scanned call of `{declared.name}` found")

    # ---------------------------------------------------------------- helpers

    def _split(self, qualname: str) -> tuple[str, str]:
        parts = qualname.split(".")
        for end in range(len(parts), 0, -1):
            module = ".".join(parts[:end])
            if module in self.index.modules:
                return module, ".".join(parts[end:])
        return "", qualname

    @staticmethod
    def _union(results: list[Texts]) -> Texts:
        for result in results:
            if not result.known:
                return result
        return _known(set().union(*(r.values for r in results)) if results else set())

    @staticmethod
    def _concat(results: list[Texts]) -> Texts:
        for result in results:
            if not result.known:
                return result
        if any(len(r.values) > _MAX_TEXTS for r in results):
            return _unknown("too many possible values")
        combos = itertools.islice(itertools.product(*(sorted(r.values) for r in results)), _MAX_TEXTS + 1)
        return _known({"".join(combo) for combo in combos})


def _literal_pieces(text: str) -> list[str]:
    """An f-string's literal parts around its '{}' holes, with `{{` and `}}` read as braces."""
    pieces, current, index = [], [], 0
    while index < len(text):
        pair = text[index:index + 2]
        if pair in ("{{", "}}"):
            current.append(pair[0])
            index += 2
        elif pair == "{}":
            pieces.append("".join(current))
            current = []
            index += 2
        else:
            current.append(text[index])
            index += 1
    pieces.append("".join(current))
    return pieces


def _entry(mapping: PyExpr, key: str) -> PyExpr | None:
    for item in mapping.args:
        if item.kind == "kw" and item.text == key:
            return item.args[0]
    return None


def _passed(call: PyExpr, name: str, position: int) -> PyExpr | None:
    """The argument a call passes for a parameter; kind 'missing' when it passes none; None when a
    splat may hold it."""
    keyword = call.kwarg(name)
    if keyword is not None:
        return keyword
    if any(arg.kind == "splat" for arg in call.args[1:]):
        return None
    positional = call.positional()
    if 0 <= position < len(positional):
        return positional[position]
    return PyExpr("missing", name)
