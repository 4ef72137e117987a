"""Parse the expression of a `#if`/`#elif` directive into an expression tree (model.Expr).

The grammar is the C preprocessor's constant-expression grammar. Anything that does not parse
becomes `Opaque`, which evaluates to unknown: a condition archlint cannot read must never be
taken as true or false.
"""

from __future__ import annotations

import re

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


class ExprError(ValueError):
    """Raised by `parse_strict` when a condition does not parse."""


_TOKEN_RE = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<num>0[xX][0-9a-fA-F']+|0[bB][01']+|\d[\d']*)(?P<suffix>[uUlL]*)
  | (?P<char>'(?:\\.|[^'\\])+')
  | (?P<name>[A-Za-z_]\w*)
  | (?P<op>&&|\|\||==|!=|<=|>=|<<|>>|[-+*/%<>!~&|^?:(),])
  """,
    re.VERBOSE,
)

# Binary operators by precedence, loosest first (C's table, minus assignment and comma).
_BINARY_LEVELS: tuple[tuple[str, ...], ...] = (
    ("||",),
    ("&&",),
    ("|",),
    ("^",),
    ("&",),
    ("==", "!="),
    ("<", "<=", ">", ">="),
    ("<<", ">>"),
    ("+", "-"),
    ("*", "/", "%"),
)
_MAX_DEPTH = 200
# Operators in one condition: a longer chain becomes Opaque, so every later walk over the tree
# (evaluation, rendering, pickling) stays far from the recursion limit.
_MAX_NODES = 128


def _tokenize(text: str) -> list[tuple[str, str]]:
    tokens: list[tuple[str, str]] = []
    pos = 0
    while pos < len(text):
        match = _TOKEN_RE.match(text, pos)
        if not match:
            raise ExprError(f"unexpected character {text[pos]!r} at column {pos + 1}")
        pos = match.end()
        kind = match.lastgroup
        if match.group("ws") is not None:
            continue
        if match.group("num") is not None:
            tokens.append(("num", match.group("num")))
        elif kind == "char":
            tokens.append(("char", match.group("char")))
        elif kind == "name":
            tokens.append(("name", match.group("name")))
        else:
            tokens.append(("op", match.group("op")))
    return tokens


def _int_value(literal: str) -> int:
    digits = literal.replace("'", "")
    if digits[:2] in ("0x", "0X"):
        return int(digits[2:], 16)
    if digits[:2] in ("0b", "0B"):
        return int(digits[2:], 2)
    if len(digits) > 1 and digits.startswith("0"):
        return int(digits, 8)
    return int(digits)


def _char_value(literal: str) -> int:
    body = literal[1:-1]
    escapes = {"\\n": 10, "\\t": 9, "\\0": 0, "\\\\": 92, "\\'": 39}
    if body in escapes:
        return escapes[body]
    return ord(body[-1])


class _Parser:
    def __init__(self, tokens: list[tuple[str, str]]):
        self.tokens = tokens
        self.pos = 0
        self.depth = 0
        self.nodes = 0

    def node(self, expr: Expr) -> Expr:
        self.nodes += 1
        if self.nodes > _MAX_NODES:
            raise ExprError(f"condition has more than {_MAX_NODES} operators")
        return expr

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self) -> tuple[str, str]:
        token = self.peek()
        if token is None:
            raise ExprError("unexpected end of condition")
        self.pos += 1
        return token

    def expect(self, op: str) -> None:
        token = self.take()
        if token != ("op", op):
            raise ExprError(f"expected {op!r}, found {token[1]!r}")

    def parse(self) -> Expr:
        expr = self.ternary()
        extra = self.peek()
        if extra is not None:
            raise ExprError(f"unexpected {extra[1]!r}")
        return expr

    def ternary(self) -> Expr:
        self.depth += 1
        if self.depth > _MAX_DEPTH:
            raise ExprError("condition nested too deeply")
        cond = self.binary(0)
        if self.peek() == ("op", "?"):
            self.take()
            then = self.ternary()
            self.expect(":")
            other = self.ternary()
            cond = self.node(Ternary(cond, then, other))
        self.depth -= 1
        return cond

    def binary(self, level: int) -> Expr:
        if level == len(_BINARY_LEVELS):
            return self.unary()
        left = self.binary(level + 1)
        while True:
            token = self.peek()
            if token is None or token[0] != "op" or token[1] not in _BINARY_LEVELS[level]:
                return left
            self.take()
            left = self.node(Binary(token[1], left, self.binary(level + 1)))

    def unary(self) -> Expr:
        token = self.peek()
        if token is not None and token[0] == "op" and token[1] in ("!", "-", "+", "~"):
            self.take()
            self.depth += 1
            if self.depth > _MAX_DEPTH:
                raise ExprError("condition nested too deeply")
            operand = self.unary()
            self.depth -= 1
            return self.node(Unary(token[1], operand))
        return self.primary()

    def primary(self) -> Expr:
        kind, text = self.take()
        if kind == "num":
            return Num(_int_value(text))
        if kind == "char":
            return Num(_char_value(text))
        if kind == "name":
            return self.name(text)
        if text == "(":
            inner = self.ternary()
            self.expect(")")
            return inner
        raise ExprError(f"unexpected {text!r}")

    def name(self, text: str) -> Expr:
        if text == "defined":
            return self.defined()
        if text in ("true", "false"):
            return Num(1 if text == "true" else 0)
        if self.peek() == ("op", "("):
            return self.macro_call(text)
        return Name(text)

    def defined(self) -> Expr:
        if self.peek() == ("op", "("):
            self.take()
            kind, name = self.take()
            self.expect(")")
        else:
            kind, name = self.take()
        if kind != "name":
            raise ExprError("defined needs a macro name")
        return Defined(name)

    def macro_call(self, name: str) -> Expr:
        self.expect("(")
        args: list[Expr] = []
        if self.peek() == ("op", ")"):
            self.take()
            return MacroCall(name, ())
        while True:
            args.append(self.ternary())
            token = self.take()
            if token == ("op", ")"):
                return MacroCall(name, tuple(args))
            if token != ("op", ","):
                raise ExprError(f"expected ',' or ')' in {name}(...)")


def parse_strict(text: str) -> Expr:
    """Parse a condition; raise ExprError when it is not a preprocessor constant expression."""
    tokens = _tokenize(text)
    if not tokens:
        raise ExprError("empty condition")
    try:
        return _Parser(tokens).parse()
    except ExprError:
        raise
    except RecursionError:
        raise ExprError("condition nested too deeply") from None
    except ValueError as error:  # e.g. an integer literal longer than Python converts
        raise ExprError(str(error)) from None


def parse_condition(text: str) -> Expr:
    """Parse a condition; anything unreadable becomes Opaque (evaluates to unknown)."""
    try:
        return parse_strict(text)
    except (ExprError, RecursionError, ValueError):
        return Opaque(text.strip())


def render(expr: Expr) -> str:
    """Readable text for evidence (fully parenthesised where nesting makes it ambiguous)."""
    if isinstance(expr, Num):
        return str(expr.value)
    if isinstance(expr, Name):
        return expr.name
    if isinstance(expr, Defined):
        return f"defined({expr.name})"
    if isinstance(expr, Unary):
        return f"{expr.op}{_wrap(expr.operand)}"
    if isinstance(expr, Binary):
        return f"{_wrap(expr.left)} {expr.op} {_wrap(expr.right)}"
    if isinstance(expr, Ternary):
        return f"{_wrap(expr.cond)} ? {_wrap(expr.then)} : {_wrap(expr.other)}"
    if isinstance(expr, MacroCall):
        return f"{expr.name}({', '.join(render(arg) for arg in expr.args)})"
    return expr.text


def _wrap(expr: Expr) -> str:
    text = render(expr)
    return f"({text})" if isinstance(expr, (Binary, Ternary)) else text
