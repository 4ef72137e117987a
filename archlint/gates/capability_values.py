"""The values a capability evaluation works with, and the three-valued logic over them.

`gates.capability` folds a Python condition for one compute capability; what it folds to is one of
these: a plain Python value, UNKNOWN, the device's capability or properties, a reference to a
scanned function, an attribute table. The values, the scope and trace an evaluation carries, and
the logic that keeps UNKNOWN apart from True and False are kept here, apart from the evaluator
that walks expressions, so that what a gate reads can import them without the walk.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import NamedTuple

from archlint.model.python import PyExpr


class _Unknown:
    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN = _Unknown()


@dataclass(frozen=True)
class Props:
    major: int
    minor: int

    def member(self, name: str) -> int:
        """`props.major` or `props.minor`, as the evaluated Python reads it."""
        return self.major if name == "major" else self.minor


class Capability(NamedTuple):
    """The device's capability as a capability call yields it: a (major, minor) pair that compares as
    one, indexes as one and has `.major` and `.minor` (PyTorch's tuple, vLLM's DeviceCapability)."""

    major: int
    minor: int


@dataclass(frozen=True)
class AttrTable:
    """What an attribute-table call (`get_platform()`) returns: an object whose attribute `x` is the
    call of the function its tables name for `x`."""

    call: str  # the callee's last dotted part, a key of Idioms.table_names


@dataclass(frozen=True)
class FuncRef:
    qualname: str
    bound: tuple[tuple[str, object], ...] = ()


@dataclass(frozen=True)
class ArchTest:
    """A comparison that read the capability, where it is written: `get_compute_capability(d)[0] == 10`
    in the return statement of a scanned helper, the assignment of a name, or the condition itself."""

    module: str
    line: int  # the statement's first line
    expr: PyExpr


@dataclass
class Trace:
    """What an evaluation touched: decides whether a condition is a gate and how exact it is."""

    arch: bool = False  # a capability source was read
    predicate: bool = False  # ... inside a scanned function returning a boolean
    opaque: list[str] = field(default_factory=list)  # arch-looking things that could not be evaluated
    toolkit_tests: list[str] = field(default_factory=list)  # versions toolkit-version calls compared with
    # The innermost comparisons that read the capability, in the order evaluated (repeats kept):
    # what a condition naming no architecture itself rests on.
    tests: list[ArchTest] = field(default_factory=list)

    def take(self, arch: bool, predicate: bool, opaque, tests, toolkit_tests) -> None:
        """Add what a nested evaluation (an assignment's value, a call's returns) touched."""
        self.arch |= arch
        self.predicate |= predicate
        self.opaque.extend(opaque)
        self.tests.extend(tests)
        self.toolkit_tests.extend(toolkit_tests)


@dataclass(frozen=True)
class Scope:
    module: str
    function: str  # local qualname
    line: int | None
    bound: tuple[tuple[str, object], ...] = ()


def truth(value):
    if value is UNKNOWN or isinstance(value, (FuncRef, Props)):
        return UNKNOWN
    try:
        return bool(value)
    except Exception:
        return UNKNOWN


def and_(left, right):
    """Three-valued `and`: False wins over UNKNOWN."""
    if left is False or right is False:
        return False
    if left is UNKNOWN or right is UNKNOWN:
        return UNKNOWN
    return True


def or_(left, right):
    """Three-valued `or`: True wins over UNKNOWN."""
    if left is True or right is True:
        return True
    if left is UNKNOWN or right is UNKNOWN:
        return UNKNOWN
    return False


_COMPARES = {
    "==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
    "in": lambda a, b: a in b, "not in": lambda a, b: a not in b, "is": operator.is_, "is not": operator.is_not,
}


def compare(op, left, right):
    """One comparison operator of a chain (`==`, `in`, `is not`, ...) on two values, or UNKNOWN."""
    if left is UNKNOWN or right is UNKNOWN or isinstance(left, (FuncRef, Props)) or isinstance(right, (FuncRef, Props)):
        return UNKNOWN
    if op in ("in", "not in") and isinstance(right, tuple) and UNKNOWN in right:
        return UNKNOWN
    function = _COMPARES.get(op)
    if function is None:
        return UNKNOWN
    try:
        return bool(function(left, right))
    except TypeError:
        return UNKNOWN


def members(base, names: list[str], trace: Trace):
    """`.major` or `.minor` of the device's capability or properties (a read of the capability)."""
    if isinstance(base, (Props, Capability)) and len(names) == 1 and names[0] in ("major", "minor"):
        trace.arch = True
        return base.major if names[0] == "major" else base.minor
    return UNKNOWN


def element(value, position: int):
    """The element an unpacking assignment gives its target at `position`."""
    if isinstance(value, tuple) and 0 <= position < len(value):
        return value[position]
    return UNKNOWN
