"""Preprocessor expressions: the parsed form of an `#if` condition."""

from __future__ import annotations

from dataclasses import dataclass

from archlint.model.records import fast_pickling


@dataclass(frozen=True, slots=True)
class Num:
    value: int


@dataclass(frozen=True, slots=True)
class Name:
    name: str


@dataclass(frozen=True, slots=True)
class Defined:
    name: str


@dataclass(frozen=True, slots=True)
class Unary:
    op: str  # '!', '-', '+', '~'
    operand: "Expr"


@dataclass(frozen=True, slots=True)
class Binary:
    op: str  # '&&', '||', '==', '!=', '<', '<=', '>', '>=', '+', '-', '*', '/', '%', '<<', '>>', '&', '|', '^'
    left: "Expr"
    right: "Expr"


@dataclass(frozen=True, slots=True)
class Ternary:
    cond: "Expr"
    then: "Expr"
    other: "Expr"


@dataclass(frozen=True, slots=True)
class MacroCall:
    """A function-like macro invoked in a condition; its value is unknown to archlint."""

    name: str
    args: tuple["Expr", ...]


@dataclass(frozen=True, slots=True)
class Opaque:
    """A condition archlint could not parse; always evaluates to unknown."""

    text: str


Expr = Num | Name | Defined | Unary | Binary | Ternary | MacroCall | Opaque


TRUE_EXPR = Num(1)


fast_pickling(globals())
