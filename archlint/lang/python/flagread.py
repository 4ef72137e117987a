"""Reading a compiler flag-list expression (`sm90a_flags + ["-DX", *(("-DY",) if new_toolkit() else ())]`)
without running it: which strings it always holds (sure), which only on some paths (maybe), which exactly
when the CUDA toolkit is at least (or older than) a version, and whether every part of it was read.

A name is looked up through the caller's `lookup` (a function's own bindings at extraction, a module's
constants at linking); one it cannot look up is handed back (`names`, `maybe_names`) for a later stage.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from archlint.knowledge.idioms import Idioms
from archlint.lang.python.expr import walk
from archlint.model.python import PyExpr, VersionedFlag, split_define

_VERSION_RE = re.compile(r"^\d+(\.\d+){0,2}$")


@dataclass(frozen=True)
class Binding:
    """What a name holds where a flag list reads it: the values it surely gets (its assignment and the
    additions on every path), the additions on some paths (value, the branch conditions it runs
    under, whether a list method makes it: `flags.append(...)`), and whether it is given a value
    more than once."""

    values: tuple[PyExpr, ...]
    some_paths: tuple[tuple[PyExpr, tuple, bool], ...] = ()
    reassigned: bool = False


@dataclass(frozen=True)
class FlagRead:
    sure: tuple[str, ...] = ()
    maybe: tuple[str, ...] = ()  # versioned flags are listed here too
    versioned: tuple[VersionedFlag, ...] = ()
    complete: bool = True  # every part read, the names handed back aside
    names: tuple[str, ...] = ()  # names not looked up, holding flags the list always has
    maybe_names: tuple[str, ...] = ()  # names not looked up, holding flags the list has on some paths

    def __add__(self, other: "FlagRead") -> "FlagRead":
        return FlagRead(self.sure + other.sure, self.maybe + other.maybe, self.versioned + other.versioned,
                        self.complete and other.complete, self.names + other.names,
                        self.maybe_names + other.maybe_names)

    def demoted(self) -> "FlagRead":
        """The same flags passed on some paths only."""
        return FlagRead((), self.sure + self.maybe, (), self.complete, (), self.names + self.maybe_names)

    def under_version(self, version: str, at_least: bool) -> "FlagRead":
        """The same flags passed exactly when the toolkit is at least `version` (`at_least`) or older."""
        versioned = tuple(VersionedFlag(flag, version, at_least) for flag in self.sure)
        return FlagRead((), self.sure + self.maybe, versioned, self.complete, (), self.names + self.maybe_names)


def flag_key(flag: str) -> str:
    """What makes two flags the same for a build: a -D flag's macro name, else the flag."""
    return "-D" + split_define(flag)[0] if flag.startswith("-D") else flag


def version_test(test: PyExpr, idioms: Idioms) -> tuple[str, bool] | None:
    """(version, at_least) for a toolkit-version test, as the gate vocabulary spells one (callees
    matched by their last dotted part): a test call with one literal version
    (`is_cuda_version_at_least("12.8")`), a version call compared with a literal one
    (`_jit_cuda_version() >= (12, 9)`, `< Version("12.8")`), or the negation of either; None for
    any other condition."""
    if test.kind == "not" and test.args:
        inner = version_test(test.args[0], idioms)
        return None if inner is None else (inner[0], not inner[1])
    if test.kind == "compare" and test.text in (">=", "<") and len(test.args) == 2:
        left, right = test.args
        if _called(left, idioms.toolkit_version_value_calls) and len(left.args) == 1:
            version = _literal_version(right)
            return None if version is None else (version, test.text == ">=")
        return None
    if not _called(test, idioms.toolkit_version_calls) or len(test.args) != 2:
        return None
    version = _literal_version(test.args[1])
    return None if version is None else (version, True)


def _called(expr: PyExpr, names: frozenset[str]) -> bool:
    return expr.kind == "call" and expr.text.rpartition(".")[2] in names


def _literal_version(expr: PyExpr) -> str | None:
    """'12.8' for `"12.8"`, `(12, 8)` or `Version("12.8")`."""
    if expr.kind == "call" and expr.text.rpartition(".")[2] == "Version" and len(expr.args) == 2:
        expr = expr.args[1]
    if expr.kind == "str" and _VERSION_RE.match(expr.text):
        return expr.text
    if expr.kind == "seq" and expr.text == "tuple" and expr.args and all(
            item.kind == "int" and item.value is not None and item.value >= 0 for item in expr.args):
        return ".".join(str(item.value) for item in expr.args)
    return None


@dataclass
class FlagReader:
    """Reads flag-list expressions. `lookup(name)`: the binding of a name, or None to hand it back;
    `idioms`: the gate vocabulary (arch-flags calls, read whole; toolkit-version tests)."""

    lookup: Callable[[str], Binding | None]
    idioms: Idioms
    max_hops: int = 3
    _seen: set = field(default_factory=set)

    def read(self, expr: PyExpr, hops: int = 0) -> FlagRead:
        kind = expr.kind
        if kind == "str":
            return FlagRead(sure=(expr.text,))
        if kind == "fstr":
            # `f"-DHEAD_ELEMS={head_dim}"`: passed, with a value not read
            readable = expr.text.startswith("-D") and "{}" not in expr.text.partition("=")[0]
            return FlagRead(sure=(expr.text,) if readable else (), complete=False)
        if kind == "seq" or (kind == "binop" and expr.text == "+"):
            return sum((self.read(item, hops) for item in expr.args), FlagRead())
        if kind == "splat" and len(expr.args) == 1:
            return self.read(expr.args[0], hops)
        if kind == "cond" and len(expr.args) == 3:
            return self._branches(expr, hops)
        if kind == "name":
            return self._name(expr.text, hops)
        if kind == "call" and self.idioms.arch_flags_call(expr.text) is not None:
            return FlagRead()
        return FlagRead(sure=_strings_within(expr), complete=False)

    def _branches(self, expr: PyExpr, hops: int) -> FlagRead:
        then_expr, test, else_expr = expr.args
        then, otherwise = self.read(then_expr, hops), self.read(else_expr, hops)
        version = version_test(test, self.idioms)
        if version is not None:
            return then.under_version(*version) + otherwise.under_version(version[0], not version[1])
        both = {flag_key(flag) for flag in then.sure} & {flag_key(flag) for flag in otherwise.sure}
        sure = tuple(flag for flag in then.sure + otherwise.sure if flag_key(flag) in both)
        only_one = tuple(flag for flag in then.sure + otherwise.sure if flag_key(flag) not in both)
        names = tuple(name for name in then.names if name in otherwise.names)
        return FlagRead(sure, only_one + then.maybe + otherwise.maybe, (), then.complete and otherwise.complete,
                        names, tuple(n for n in then.names + otherwise.names if n not in names)
                        + then.maybe_names + otherwise.maybe_names)

    def _name(self, name: str, hops: int) -> FlagRead:
        if hops >= self.max_hops or name in self._seen:
            return FlagRead(complete=False)
        binding = self.lookup(name)
        if binding is None:
            return FlagRead(names=(name,))
        self._seen.add(name)
        try:
            out = sum((self.read(value, hops + 1) for value in binding.values), FlagRead())
            for value, path, method in binding.some_paths:
                out = out + self._added_on_some_paths(value, path, method, hops + 1)
        finally:
            self._seen.discard(name)
        return out if not binding.reassigned else out + FlagRead(complete=False)

    def _added_on_some_paths(self, value: PyExpr, path: tuple, method: bool, hops: int) -> FlagRead:
        """`if is_cuda_version_at_least("12.8"): flags += [...]` is decided by the toolkit; any other
        condition leaves the list open, its flags passed on some paths. A list method's flags are
        passed on some paths (it may sit in a loop); it leaves the list open only where what it adds
        may hold a -D flag not read (`flags.append(f"-I{folder}")` cannot)."""
        read = self.read(value, hops)
        if len(path) == 1:
            version = version_test(path[0][0], self.idioms)
            if version is not None:
                return read.under_version(version[0], version[1] == bool(path[0][1]))
        if method and not _may_hide_define(value):
            return FlagRead((), read.sure + read.maybe, (), True, (), read.names + read.maybe_names)
        return read.demoted() + FlagRead(complete=False)


def _may_hide_define(expr: PyExpr) -> bool:
    """Whether a flag-list expression may pass a -D flag a reading misses: any part but literal
    strings and f-strings that begin with another option (`f"-I{folder}"`)."""
    if expr.kind == "str":
        return False
    if expr.kind == "fstr":
        return not (len(expr.text) > 1 and expr.text[0] == "-" and expr.text[1] not in "D{")
    if expr.kind in ("seq", "splat") or (expr.kind == "binop" and expr.text == "+"):
        return any(_may_hide_define(item) for item in expr.args)
    if expr.kind == "cond" and len(expr.args) == 3:
        return _may_hide_define(expr.args[0]) or _may_hide_define(expr.args[2])
    return True


def _strings_within(expr: PyExpr) -> tuple[str, ...]:
    """The -D strings anywhere inside an expression not read as a flag list (`"-DX=" + str(n)`)."""
    return tuple(sub.text for sub in walk(expr) if sub.kind == "str" and sub.text.startswith("-D"))
