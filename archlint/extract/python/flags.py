"""Compiler flag lists a Python build function passes (`extra_cuda_cflags=nvcc_flags`), read, not run.

A flag list names its strings: literals, and the strings of the names it uses as the function binds
them (its last assignment there, plus every unconditional `flags += [...]`). A list is *complete* when
every part of it is read: literals, names bound once in the function to complete values, unconditional
additions, and the project's arch-flags call (`get_nvcc_flags_list`, which yields `-gencode` flags and
the project's common defines). A complete list says which -D flags the build does not pass. The flag
keywords and arch-flags calls are the gate vocabulary's (`rules/idioms/`).
"""

from __future__ import annotations

from dataclasses import dataclass

from archlint.knowledge.idioms import Idioms
from archlint.lang.python.expr import walk
from archlint.model import python as pf
from archlint.model.python import PyExpr

_MAX_HOPS = 3


def flag_lists(calls, assigns, extends, idioms: Idioms) -> tuple[pf.FlagList, ...]:
    """Flag lists passed to build calls. `extends` holds (function, name, value, conditional) of each
    `name += value`; a conditional one leaves its list incomplete, and its strings are flags the build
    passes on some paths only (`maybe`), not defines."""
    bound: dict[tuple[str, str], list[PyExpr]] = {}
    for assign in assigns:
        if not assign.unpack:
            bound.setdefault((assign.function, assign.targets[0]), []).append(assign.value)
    local = {key: [values[-1]] for key, values in bound.items()}
    open_names = {key for key, values in bound.items() if len(values) > 1}
    some_paths: dict[tuple[str, str], list[PyExpr]] = {}
    for function, name, value, conditional in extends:
        if conditional:
            open_names.add((function, name))
            some_paths.setdefault((function, name), []).append(value)
        else:
            local.setdefault((function, name), []).append(value)
    found = []
    for call in calls:
        if _unread_flags(call, idioms.flag_keywords):
            found.append(pf.FlagList(call.function, call.span.line, call.callee, "", (), False))
        for keyword, value in call.kwargs().items():
            if keyword not in idioms.flag_keywords:
                continue
            values = _strings(value, call.function, local)
            maybe = _strings(value, call.function, some_paths, _MAX_HOPS - 1)
            complete = _Completeness(call.function, local, open_names, idioms).of(value)
            if values or maybe or complete:
                found.append(pf.FlagList(call.function, call.span.line, call.callee, keyword, values, complete, maybe))
    return tuple(found)


def _unread_flags(call, flag_keywords: frozenset[str]) -> bool:
    """Compiler flags the call may pass where they are not read: `**options`, or a flags keyword
    other than the known ones (`extra_cuda_cflags_by_source`)."""
    if any(arg.kind == "splat" and arg.text.startswith("**") for arg in call.expr.args[1:]):
        return True
    return any("flags" in keyword and keyword not in flag_keywords and "ldflags" not in keyword
               for keyword in call.kwargs())


def _strings(expr: PyExpr, function: str, local: dict, hops: int = 0) -> tuple[str, ...]:
    values = []
    for sub in walk(expr):
        if sub.kind == "str":
            values.append(sub.text)
        elif sub.kind == "fstr" and sub.text.startswith("-D") and "{}" not in sub.text.partition("=")[0]:
            values.append(sub.text)  # `f"-DHEAD_ELEMS={head_dim}"`: passed, with a value not read
        elif sub.kind == "name" and hops < _MAX_HOPS and (function, sub.text) in local:
            for value in local[(function, sub.text)]:
                values.extend(_strings(value, function, local, hops + 1))
    return tuple(values)


@dataclass(frozen=True)
class _Completeness:
    """Whether every part of a flag list passed in `function` is read."""

    function: str
    local: dict
    open_names: set
    idioms: Idioms

    def of(self, expr: PyExpr, hops: int = 0) -> bool:
        if expr.kind == "str":
            return True
        if expr.kind == "seq":
            return all(self.of(item, hops) for item in expr.args)
        if expr.kind == "binop" and expr.text == "+":
            return all(self.of(side, hops) for side in expr.args)
        if expr.kind == "cond":
            then, _, otherwise = expr.args
            return self.of(then, hops) and self.of(otherwise, hops)
        if expr.kind == "name":
            key = (self.function, expr.text)
            return (hops < _MAX_HOPS and key in self.local and key not in self.open_names
                    and all(self.of(value, hops + 1) for value in self.local[key]))
        if expr.kind == "call":
            return self.idioms.arch_flags_call(expr.text) is not None
        return False
