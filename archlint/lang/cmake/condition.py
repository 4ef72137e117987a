"""`if()` conditions, evaluated in three values (True, False, None for unknown) with CMake's
precedence: parentheses, unary tests, binary tests, NOT, AND, OR. An unquoted argument naming a
variable stands for its value; a quoted one is a string (policy CMP0054, NEW since CMake 3.1)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from archlint.lang.cmake.values import UNKNOWN, known, split_list, truth, version_compare

Tri = bool | None
_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class Word:
    """One condition argument after `${}` expansion; `quoted` when written in quotes or brackets."""

    text: str
    quoted: bool


_UNARY = {"EXISTS", "COMMAND", "DEFINED", "TARGET", "POLICY", "TEST", "IS_DIRECTORY", "IS_SYMLINK", "IS_ABSOLUTE",
          "IS_READABLE", "IS_WRITABLE", "IS_EXECUTABLE"}
_VERSION = {"VERSION_LESS": lambda c: c < 0, "VERSION_GREATER": lambda c: c > 0, "VERSION_EQUAL": lambda c: c == 0,
            "VERSION_LESS_EQUAL": lambda c: c <= 0, "VERSION_GREATER_EQUAL": lambda c: c >= 0}
_NUMBER = {"LESS": lambda a, b: a < b, "GREATER": lambda a, b: a > b, "EQUAL": lambda a, b: a == b,
           "LESS_EQUAL": lambda a, b: a <= b, "GREATER_EQUAL": lambda a, b: a >= b}
_STRING = {"STRLESS": lambda a, b: a < b, "STRGREATER": lambda a, b: a > b, "STREQUAL": lambda a, b: a == b,
           "STRLESS_EQUAL": lambda a, b: a <= b, "STRGREATER_EQUAL": lambda a, b: a >= b}
_BINARY = {*_VERSION, *_NUMBER, *_STRING, "MATCHES", "IN_LIST", "PATH_EQUAL"}


class Condition:
    """Evaluates one `if()`'s words. `lookup(name)` is a variable's value, None when undefined (or
    UNKNOWN inside the value when archlint cannot know it)."""

    def __init__(self, lookup: Callable[[str], str | None]):
        self.lookup = lookup

    def evaluate(self, words: list[Word]) -> Tri:
        try:
            items: list[Word | Tri] = list(words)
            return self._reduce(items)
        except (IndexError, ValueError, re.error):
            return None

    def _reduce(self, items: list) -> Tri:
        items = self._parentheses(items)
        items = self._unary(items)
        items = self._binary(items)
        items = self._not(items)
        return self._logic(items)

    def _parentheses(self, items: list) -> list:
        out: list = []
        i = 0
        while i < len(items):
            item = items[i]
            if isinstance(item, Word) and not item.quoted and item.text == "(":
                depth, j = 1, i + 1
                while depth:
                    other = items[j]
                    if isinstance(other, Word) and not other.quoted:
                        depth += {"(": 1, ")": -1}.get(other.text, 0)
                    j += 1
                out.append(self._reduce(items[i + 1: j - 1]))
                i = j
            else:
                out.append(item)
                i += 1
        return out

    def _unary(self, items: list) -> list:
        out: list = []
        i = 0
        while i < len(items):
            item = items[i]
            if _keyword(item) in _UNARY and i + 1 < len(items):
                out.append(self._unary_test(_keyword(item), items[i + 1]))
                i += 2
            else:
                out.append(item)
                i += 1
        return out

    def _unary_test(self, op: str, operand) -> Tri:
        if op != "DEFINED" or not isinstance(operand, Word):
            return None
        text = operand.text
        if text.startswith(("ENV{", "CACHE{")) or not known(text):
            return None
        value = self.lookup(text)
        return None if value is not None and not known(value) else value is not None

    def _binary(self, items: list) -> list:
        out: list = []
        i = 0
        while i < len(items):
            if i + 2 < len(items) and _keyword(items[i + 1]) in _BINARY:
                out.append(self._binary_test(_keyword(items[i + 1]), items[i], items[i + 2]))
                i += 3
            else:
                out.append(items[i])
                i += 1
        return out

    def _binary_test(self, op: str, left, right) -> Tri:
        if not isinstance(left, Word) or not isinstance(right, Word):
            return None
        if op == "IN_LIST":
            listed = self.lookup(right.text)
            a = self._value(left)
            if listed is None:
                return False
            return None if not (known(listed) and known(a)) else a in split_list(listed)
        a, b = self._value(left), self._value(right, left=False)
        if not (known(a) and known(b)):
            return None
        if op in _VERSION:
            return _VERSION[op](version_compare(a, b))
        if op in _STRING:
            return _STRING[op](a, b)
        if op == "MATCHES":
            return re.search(b, a) is not None
        if op == "PATH_EQUAL":
            return a.rstrip("/") == b.rstrip("/")
        try:
            return _NUMBER[op](float(a), float(b))
        except ValueError:
            return False

    def _value(self, word: Word, left: bool = True) -> str:
        """A binary test's operand: an unquoted word naming a defined variable is its value. A name
        whose value archlint cannot know stands for that unknown value on the left of a test
        (`if(X STREQUAL "cuda")`), and for itself on the right, where constants are written."""
        if word.quoted:
            return word.text
        if not known(word.text):
            return UNKNOWN
        if not _NAME_RE.fullmatch(word.text):
            return word.text
        value = self.lookup(word.text)
        if value is None or (not left and not known(value)):
            return word.text
        return value

    def _not(self, items: list) -> list:
        out: list = []
        for item in reversed(items):
            if _keyword(item) == "NOT" and out:
                operand = out.pop()
                value = self._truth(operand)
                out.append(None if value is None else not value)
            else:
                out.append(item)
        return list(reversed(out))

    def _logic(self, items: list) -> Tri:
        # AND binds tighter than OR: split on OR, each part a conjunction
        parts: list[list] = [[]]
        for item in items:
            if _keyword(item) == "OR":
                parts.append([])
            else:
                parts[-1].append(item)
        values = [self._conjunction(part) for part in parts]
        if any(v is True for v in values):
            return True
        return None if any(v is None for v in values) else False

    def _conjunction(self, items: list) -> Tri:
        values = [self._truth(item) for item in items if _keyword(item) != "AND"]
        if not values:
            return False
        if any(v is False for v in values):
            return False
        return None if any(v is None for v in values) else True

    def _truth(self, item) -> Tri:
        """A lone operand: a constant, else an unquoted variable name whose value is not false."""
        if item is None or isinstance(item, bool):
            return item
        word: Word = item
        if not known(word.text):
            return None
        constant = truth(word.text)
        if constant is not None or word.quoted or not _NAME_RE.fullmatch(word.text):
            return bool(constant)
        value = self.lookup(word.text)
        if value is None:
            return False
        if not known(value):
            return None
        return bool(truth(value)) if truth(value) is not None else True


def _keyword(item) -> str:
    return item.text if isinstance(item, Word) and not item.quoted else ""
