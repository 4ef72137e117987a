"""Reading the targets a compiler flag list passes, without running it: arch strings
(`-gencode=arch=compute_90a,code=sm_90a`, `"9.0a"` in an arch list), and a spec's whole flag-list
expression (literals, `+`, `*items`, conditional expressions, names bound to lists and, on request,
an entry of a dict of flag lists: `NVCC_FLAGS[target]`)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from archlint.gates.capability_values import Scope, Trace
from archlint.knowledge.idioms import Idioms, load_idioms
from archlint.model.python import PyExpr

_TARGET_RE = re.compile(r"(?:compute|sm)_(\d{2,3})([af]?)")
_BARE_RE = re.compile(r"^(\d{2,3})([af]?)$")
_DOTTED_RE = re.compile(r"(\d{1,2})\.(\d)([af]?)")

_MAX_FLAG_HOPS = 6


def parse_arch_string(value: str, context: str, idioms: Idioms | None = None,
                      in_flag_list: bool = False) -> tuple[tuple[int, str], ...]:
    """(cc, suffix) pairs an nvcc flag or arch-list string names; () when it is not a build flag.
    `context` holds the names near the string, `in_flag_list` says it is known to sit in a compiler
    flag list; `idioms` is the gate vocabulary (the shipped one by default)."""
    idioms = idioms or load_idioms()
    flagged = any(option in value for option in idioms.nvcc_options)
    listed = any(name in context or name in value for name in idioms.arch_list_names)
    flag_list = in_flag_list or any(word in context for word in idioms.flag_list_names)
    if "dict-key" in context:
        return ()
    if flagged:
        found = _TARGET_RE.findall(value)
    elif listed:
        found = [(f"{major}{minor}", suffix) for major, minor, suffix in _DOTTED_RE.findall(value)]
    elif flag_list:
        match = _BARE_RE.match(value) or _TARGET_RE.fullmatch(value)
        if match is None:
            return ()
        found = [match.groups()]
    else:
        return ()
    return tuple(dict.fromkeys((int(cc), suffix) for cc, suffix in found))


# ---------------------------------------------------------------- a spec's whole flag list


@dataclass(frozen=True)
class FlagSet:
    """The targets a flag-list expression passes: always, or only under a condition not decided here."""

    sure: frozenset = frozenset()  # (cc, suffix)
    maybe: frozenset = frozenset()
    strings: frozenset = frozenset()  # the literal values read
    opaque: bool = False  # some part could not be read: other targets may be passed too
    nvcc_call: bool = False  # holds a get_nvcc_flags_list(...) call, itself the gate

    def __or__(self, other: "FlagSet") -> "FlagSet":
        return FlagSet(self.sure | other.sure, (self.maybe | other.maybe) - self.sure - other.sure,
                       self.strings | other.strings, self.opaque or other.opaque, self.nvcc_call or other.nvcc_call)


def flag_set(index, evaluator, expr: PyExpr, scope, hops: int = 0, tables: bool = False) -> FlagSet:
    """Read a flag-list expression: literals, `+`, `*items`, `a if test else b`, names bound to such
    lists; with `tables`, an entry of a dict literal of flag lists too. `evaluator` decides the
    conditions it can (None: every condition is undecided)."""
    kind = expr.kind
    if kind == "str":
        return FlagSet(sure=frozenset(parse_arch_string(expr.text, "", index.idioms, in_flag_list=True)),
                       strings=frozenset((expr.text,)))
    if kind == "seq" or (kind == "binop" and expr.text == "+"):
        out = FlagSet()
        for item in expr.args:
            out = out | flag_set(index, evaluator, item, scope, hops, tables)
        return out
    if kind == "splat" and len(expr.args) == 1:
        return flag_set(index, evaluator, expr.args[0], scope, hops, tables)
    if kind == "cond":
        return _flag_branches(index, evaluator, expr, scope, hops, tables)
    if kind == "name" and hops < _MAX_FLAG_HOPS:
        found = index.assign_of(scope.module, expr.text, scope.function, scope.line)
        if found is not None and not found[1].unpack:
            owner, assign = found
            return flag_set(index, evaluator, assign.value, Scope(owner, assign.function, assign.line), hops + 1, tables)
    if kind == "subscript" and tables and hops < _MAX_FLAG_HOPS:
        return _table_entry(index, evaluator, expr, scope, hops)
    if kind == "call" and index.idioms.arch_flags_call(expr.text) is not None:
        return FlagSet(nvcc_call=True)
    if kind == "fstr" and _preprocessor_option(expr):
        return FlagSet()  # `f'-DCUBIN_PATH="{path}"'`: a define, never a target
    if kind == "comp" and _preprocessor_option(expr.args[0]):
        return FlagSet()  # `[f"-DFI_GDN_{key}={value}" for ...]`: defines, never a target
    return FlagSet(opaque=True)


_PREPROCESSOR_OPTIONS = ("-D", "-U", "-I")


def _preprocessor_option(expr: PyExpr) -> bool:
    """A string or f-string that is a preprocessor option (a define, an include folder): whatever
    its formatted parts hold, it cannot select a compilation target."""
    return expr.kind in ("str", "fstr") and expr.text.startswith(_PREPROCESSOR_OPTIONS)


def _flag_branches(index, evaluator, expr: PyExpr, scope, hops: int, tables: bool) -> FlagSet:
    then, test, other = expr.args
    chosen = evaluator.value(test, scope, evaluator.ccs[0], Trace(), 0) if evaluator is not None else None
    if chosen is True or chosen is False:
        return flag_set(index, evaluator, then if chosen else other, scope, hops, tables)
    return _either([flag_set(index, evaluator, arm, scope, hops, tables) for arm in (then, other)])


def _either(sets: list[FlagSet]) -> FlagSet:
    """One of several flag sets, which one decided at run time."""
    sure = frozenset.intersection(*(one.sure for one in sets))
    return FlagSet(sure, frozenset().union(*(one.sure | one.maybe for one in sets)) - sure,
                   frozenset().union(*(one.strings for one in sets)), any(one.opaque for one in sets),
                   any(one.nvcc_call for one in sets))


def _table_entry(index, evaluator, expr: PyExpr, scope, hops: int) -> FlagSet:
    """`NVCC_FLAGS[target]`, where `NVCC_FLAGS` is bound to a dict literal of flag lists: the entry a
    literal key names, else any of its entries (the key is chosen at run time)."""
    container, key = expr.args
    found = index.assign_of(scope.module, container.text, scope.function, scope.line) if container.kind == "name" else None
    if found is None or found[1].unpack or found[1].path or found[1].value.kind != "dict" or not found[1].value.args:
        return FlagSet(opaque=True)
    owner, assign = found
    entries = [item.args[0] for item in assign.value.args if key.kind != "str" or item.text == key.text]
    if not entries:
        return FlagSet(opaque=True)
    where = Scope(owner, assign.function, assign.line)
    return _either([flag_set(index, evaluator, entry, where, hops + 1, True) for entry in entries])
