"""Three-valued evaluation of preprocessor conditions for one compilation target.

A value is an int or None (unknown). Logic follows Kleene's three-valued tables: `0 && ?` is 0,
`1 || ?` is 1, anything else touching an unknown is unknown. An identifier nobody defines is
unknown (it may come from a -D flag), except the arch macros nvcc itself owns: those are known
to be undefined (0) on a target that does not define them, as the C standard says of undefined
identifiers in `#if`; so are macros the build is known not to pass (`NOT_PASSED`) when no code
defines them.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Callable, Mapping

from archlint.knowledge.arch import ARCH_MACRO_RE, Target
from archlint.lang.cpp.expr import parse_condition
from archlint.model.cexpr import (
    Binary,
    Defined,
    Expr,
    MacroCall,
    Name,
    Num,
    Opaque,
    Ternary,
    Unary,
)

Value = int | None

# What nvcc 13.0 defines on every pass, whatever the target (the toolkit the knowledge base was proved with).
TOOLKIT_MACROS: Mapping[str, int | None] = {
    "__CUDACC__": 1,
    "__NVCC__": 1,
    "__CUDACC_VER_MAJOR__": 13,
    "__CUDACC_VER_MINOR__": 0,
    "__CUDACC_VER_BUILD__": 88,
    "CUDA_VERSION": 13000,
    "CUDART_VERSION": 13000,
    "__cplusplus": 201703,
    "__CUDACC_RTC__": None,  # known undefined outside NVRTC
}
_MAX_MACRO_DEPTH = 64
UNKNOWN_DEFINE = object()  # a `defines` value: the macro is defined, its value unknown
NOT_PASSED = object()  # a `defines` value: no -D flag sets it; undefined unless the code defines it
# A `defines` key whose value (a frozenset) names every macro the build may get from a -D flag: any
# other ordinary name (no leading underscore: those are the compiler's and toolkit's) that no code
# defines is undefined.
PASSABLE = "-D*"
_INT_LIMIT = 1 << 64


@dataclass(frozen=True)
class Binding:
    """One `#define`/`#undef` of a macro somewhere in the scanned code, with the guard it sits under."""

    value: str
    params: tuple[str, ...] | None
    guard: tuple[Expr, ...]  # conjunction of the enclosing regions' conditions
    undef: bool = False


@dataclass
class Evaluator:
    """Evaluates conditions for one target (None = the host pass) under the scanned macros."""

    target: Target | None
    bindings: Mapping[str, tuple[Binding, ...]] = field(default_factory=dict)
    defines: Mapping[str, object] = field(default_factory=dict)  # -D flags: int, UNKNOWN_DEFINE or NOT_PASSED
    _in_progress: set[str] = field(default_factory=set)
    _defined_cache: dict[str, Value] = field(default_factory=dict)
    _value_cache: dict[str, Value] = field(default_factory=dict)
    _parsed: dict[str, Expr] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._known = dict(TOOLKIT_MACROS)
        if self.target is not None:
            self._known.update(self.target.device_macros())
        self._known.update({k: v for k, v in self.defines.items() if isinstance(v, int)})
        # Passed with -D but with a value archlint cannot read: defined, value unknown.
        self._unknown = {k for k, v in self.defines.items() if v is UNKNOWN_DEFINE}
        self._not_passed = {k for k, v in self.defines.items() if v is NOT_PASSED}
        passable = self.defines.get(PASSABLE)
        self._passable = passable if isinstance(passable, frozenset) else None

    # ------------------------------------------------------------ public

    def truth(self, expr: Expr) -> Value:
        """1, 0 or None for a condition."""
        value = self.value(expr)
        return None if value is None else int(value != 0)

    def all_true(self, exprs: tuple[Expr, ...]) -> Value:
        """Conjunction of several conditions (a guard)."""
        result: Value = 1
        for expr in exprs:
            value = self.truth(expr)
            if value == 0:
                return 0
            if value is None:
                result = None
        return result

    def value(self, expr: Expr) -> Value:
        handler = _HANDLERS.get(type(expr))
        if handler is None:
            return None
        try:
            return handler(self, expr)
        except RecursionError:  # macros nested deeper than the stack: unknown, which is always sound
            return None

    def undecided_macros(self, exprs: tuple[Expr, ...]) -> tuple[str, ...]:
        """The macros that leave a guard undecided, followed through the macros defined in terms of
        them (`IS_MLA` -> `HEAD_ELEMS`): what a `--define` would settle."""
        found: dict[str, None] = {}
        for expr in exprs:
            if self.truth(expr) is None:
                self._collect_undecided(expr, found, 0)
        return tuple(found)

    def _collect_undecided(self, expr: Expr, found: dict[str, None], depth: int) -> None:
        if isinstance(expr, Defined):
            if self.is_defined(expr.name) is None:
                found.setdefault(expr.name)
            return
        if isinstance(expr, Name):
            if self.macro_value(expr.name) is None:
                body = self._single_body(expr.name) if depth < 8 else None
                if body is None:
                    found.setdefault(expr.name)
                else:
                    self._collect_undecided(body, found, depth + 1)
            return
        for child in _children(expr):
            self._collect_undecided(child, found, depth)

    def _single_body(self, name: str) -> Expr | None:
        """The parsed value of a macro defined once, live for this target, without parameters."""
        found = self._live_bindings(name) if name not in self._unknown else None
        if not found or found[1] or len(found[0]) != 1 or found[0][0].params is not None or not found[0][0].value:
            return None
        return self._parse(found[0][0].value)

    # ------------------------------------------------------------ macros

    def is_defined(self, name: str) -> Value:
        if name in self._unknown:
            return 1
        if name in self._known:
            return 0 if self._known[name] is None else 1
        if ARCH_MACRO_RE.match(name):
            return 0
        if name in self._defined_cache:
            return self._defined_cache[name]
        if name in self._in_progress:
            return 0  # `#ifndef X / #define X default`: assume no -D overrides the default
        result = self._with_progress(name, self._defined_from_bindings)
        self._defined_cache[name] = result
        return result

    def macro_value(self, name: str) -> Value:
        if name in self._unknown:
            return None
        if name in self._known:
            known = self._known[name]
            return 0 if known is None else known
        if ARCH_MACRO_RE.match(name):
            return 0
        if name in self._value_cache:
            return self._value_cache[name]
        if name in self._in_progress:
            return None
        result = self._with_progress(name, self._value_from_bindings)
        self._value_cache[name] = result
        return result

    def _with_progress(self, name: str, compute: Callable[[str], Value]) -> Value:
        if len(self._in_progress) >= _MAX_MACRO_DEPTH:
            return None
        self._in_progress.add(name)
        try:
            return compute(name)
        finally:
            self._in_progress.discard(name)

    def _live_bindings(self, name: str) -> tuple[list[Binding], bool] | None:
        """Bindings whose guard is true, and whether any is undecided; None if nobody defines it."""
        bindings = self.bindings.get(name)
        if not bindings:
            return None
        live, undecided = [], False
        for binding in bindings:
            state = self.all_true(binding.guard)
            if state == 1:
                live.append(binding)
            elif state is None:
                undecided = True
        return live, undecided

    def _not_passed_here(self, name: str) -> bool:
        return name in self._not_passed or (
            self._passable is not None and not name.startswith("_") and name not in self._passable)

    def _defined_from_bindings(self, name: str) -> Value:
        found = self._live_bindings(name)
        if found is None:
            return 0 if self._not_passed_here(name) else None
        live, undecided = found
        if undecided or (live and any(b.undef for b in live) and not all(b.undef for b in live)):
            return None
        return int(bool(live) and not live[-1].undef)

    def _value_from_bindings(self, name: str) -> Value:
        found = self._live_bindings(name)
        if found is None:
            return 0 if self._not_passed_here(name) else None
        live, undecided = found
        if undecided:
            return self._agreed_value(name, bool(live))
        defs = [b for b in live if not b.undef]
        if not defs:
            return 0
        values = {self._binding_value(b) for b in defs}
        return values.pop() if len(values) == 1 else None

    def _agreed_value(self, name: str, surely_bound: bool) -> Value:
        """A macro some of whose definitions sit under undecided guards: the value every definition that
        may hold gives it, if they agree (`#if !defined(USE_ROCM)` `SGL_CUDA_ARCH >= 900` `#else` `0`,
        both 0 for sm_80); an `#undef`, or no definition holding, gives 0 in a condition."""
        values = {0 if binding.undef else self._binding_value(binding)
                  for binding in self.bindings.get(name, ()) if self.all_true(binding.guard) != 0}
        if not surely_bound:
            values.add(0)
        return values.pop() if len(values) == 1 else None

    def _binding_value(self, binding: Binding) -> Value:
        if binding.params is not None:
            return None
        if binding.value == "":
            return None  # `#define X` used as a number is an error in C; say unknown
        return self.value(self._parse(binding.value))

    def _parse(self, text: str) -> Expr:
        expr = self._parsed.get(text)
        if expr is None:
            expr = self._parsed[text] = parse_condition(text)
        return expr


def _num(ev: Evaluator, expr: Num) -> Value:
    return expr.value


def _name(ev: Evaluator, expr: Name) -> Value:
    return ev.macro_value(expr.name)


def _defined(ev: Evaluator, expr: Defined) -> Value:
    return ev.is_defined(expr.name)


_UNARY: Mapping[str, Callable[[int], int]] = {"!": lambda v: int(v == 0), "-": operator.neg, "+": operator.pos, "~": operator.invert}


def _unary(ev: Evaluator, expr: Unary) -> Value:
    value = ev.value(expr.operand)
    if value is None:
        return None
    return _UNARY[expr.op](value)


def _logical(ev: Evaluator, expr: Binary) -> Value:
    left = ev.truth(expr.left)
    short = 0 if expr.op == "&&" else 1
    if left == short:
        return short
    right = ev.truth(expr.right)
    if right == short:
        return short
    if left is None or right is None:
        return None
    return 1 - short


_ARITH: Mapping[str, Callable[[int, int], int]] = {
    "==": lambda a, b: int(a == b),
    "!=": lambda a, b: int(a != b),
    "<": lambda a, b: int(a < b),
    "<=": lambda a, b: int(a <= b),
    ">": lambda a, b: int(a > b),
    ">=": lambda a, b: int(a >= b),
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "&": operator.and_,
    "|": operator.or_,
    "^": operator.xor,
}


def _binary(ev: Evaluator, expr: Binary) -> Value:
    if expr.op in ("&&", "||"):
        return _logical(ev, expr)
    left, right = ev.value(expr.left), ev.value(expr.right)
    if left is None or right is None:
        return None
    if expr.op in ("/", "%"):
        if right == 0:
            return None
        quotient = abs(left) // abs(right) * (1 if (left >= 0) == (right >= 0) else -1)
        return quotient if expr.op == "/" else left - quotient * right
    if expr.op in ("<<", ">>"):
        if right < 0 or right >= 64:
            return None
        return left << right if expr.op == "<<" else left >> right
    result = _ARITH[expr.op](left, right)
    return result if -_INT_LIMIT < result < _INT_LIMIT else None


def _ternary(ev: Evaluator, expr: Ternary) -> Value:
    cond = ev.truth(expr.cond)
    if cond is None:
        then, other = ev.value(expr.then), ev.value(expr.other)
        return then if then == other else None
    return ev.value(expr.then if cond else expr.other)


def _macro_call(ev: Evaluator, expr: MacroCall) -> Value:
    return None


def _opaque(ev: Evaluator, expr: Opaque) -> Value:
    return None


_HANDLERS: Mapping[type, Callable] = {
    Num: _num,
    Name: _name,
    Defined: _defined,
    Unary: _unary,
    Binary: _binary,
    Ternary: _ternary,
    MacroCall: _macro_call,
    Opaque: _opaque,
}


def _children(expr: Expr) -> tuple[Expr, ...]:
    if isinstance(expr, Unary):
        return (expr.operand,)
    if isinstance(expr, Binary):
        return (expr.left, expr.right)
    if isinstance(expr, Ternary):
        return (expr.cond, expr.then, expr.other)
    return ()


def describe(value: Value) -> str:
    return {1: "true", 0: "false", None: "unknown"}[value]
