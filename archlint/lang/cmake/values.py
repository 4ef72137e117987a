"""CMake values: everything is a string, a list is a string split on `;`. A part archlint cannot
know (a variable the command line, the cache or an uninterpreted command sets) is held as the
marker UNKNOWN inside the string, so list items and comparisons touching it stay unknown."""

from __future__ import annotations

import re

UNKNOWN = "\x00?"  # an unknown part of a value

_FALSE = {"", "0", "OFF", "NO", "FALSE", "N", "IGNORE", "NOTFOUND"}
_TRUE = {"1", "ON", "YES", "TRUE", "Y"}
_REF_RE = re.compile(r"\$(ENV|CACHE)?\{([^${}]*)\}")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", ";": "\\;"}


def known(value: str) -> bool:
    return UNKNOWN not in value


def split_list(value: str) -> list[str]:
    """A CMake list's items, empty items dropped (as an unquoted expansion drops them); `\\;` is
    kept inside its item."""
    items, current, depth = [], [], 0
    i = 0
    while i < len(value):
        char = value[i]
        if char == "\\" and i + 1 < len(value) and value[i + 1] == ";":
            current.append(";")
            i += 2
            continue
        if char == "[":
            depth += 1
        elif char == "]" and depth:
            depth -= 1
        if char == ";" and not depth:
            items.append("".join(current))
            current = []
        else:
            current.append(char)
        i += 1
    items.append("".join(current))
    return [item for item in items if item]


def join_list(items: list[str] | tuple[str, ...]) -> str:
    return ";".join(items)


def unescape(text: str) -> str:
    """Escape sequences of a quoted or unquoted argument (`\\.` -> `.`, `\\n` -> newline)."""
    if "\\" not in text:
        return text
    out, i = [], 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def expand(text: str, lookup) -> str:
    """`${VAR}` references replaced, innermost first (`${${X}_DIR}`); `$ENV{..}` and `$CACHE{..}`
    are unknown. `lookup(name)` gives a variable's value ('' when undefined, UNKNOWN when not known)."""
    for _ in range(64):
        match = _REF_RE.search(text)
        if match is None:
            return text
        kind, name = match.group(1), match.group(2)
        value = UNKNOWN if kind or not known(name) else lookup(name)
        text = text[: match.start()] + value + text[match.end():]
    return text


def truth(value: str) -> bool | None:
    """if(<constant>): True, False, or None when the value is unknown or not a constant."""
    if not known(value):
        return None
    upper = value.upper()
    if upper in _TRUE:
        return True
    if upper in _FALSE or upper.endswith("-NOTFOUND"):
        return False
    try:
        return float(value) != 0
    except ValueError:
        return None


def version_compare(left: str, right: str) -> int:
    """CMake's version comparison: components compared as integers, a component ends at the first
    character that is not a digit (so `12.0a` equals `12.0`), missing components are 0."""
    a, b = _components(left), _components(right)
    width = max(len(a), len(b))
    a += [0] * (width - len(a))
    b += [0] * (width - len(b))
    return (a > b) - (a < b)


def _components(text: str) -> list[int]:
    out = []
    for part in text.split("."):
        digits = re.match(r"\d*", part)
        number = digits.group(0) if digits else ""
        out.append(int(number) if number else 0)
        if len(number) != len(part):
            break
    return out
