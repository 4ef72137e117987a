"""Lexical reading of masked C++ text: calls named in a span, and bracket matching (the bracket
closing an opening one, a template's closing `>`, comma-separated argument lists and their spans),
shared by the declarations reading, the sure-text blanking and the prebuilt-call reading."""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Iterable, Iterator

from archlint.lang.cpp.directives import Structure

# Possessive runs (`*+`): no shorter identifier or blank run could match where the whole one did
# not, and giving nothing back makes the scan twice as fast.
_CALL_RE = re.compile(rb"(?<!\w)(~?[A-Za-z_]\w*+)\s*+(?:<[^;{}()]{0,200}?>\s*+)?(?:\(|<<<)")


# `auto kernel = tmpl<...>;` (or `= (void*)tmpl<...>;`) then `cudaLaunchKernelExC(&cfg, (void*)kernel, ...)`:
# a launch with no call syntax.
_ASSIGNED_RE = re.compile(rb"=\s*(?:\(\s*(?:const\s+)?void\s*(?:const\s*)?\*\s*\)\s*)?&?\s*(?:[A-Za-z_]\w*::)*"
                          rb"([A-Za-z_]\w*)\s*(?:<[^;{}()]{0,400}?>)?\s*;")


# `std::make_shared<Runner>(...)`, `new Runner(...)`: a call of the class's constructors.
_CONSTRUCTED_RE = re.compile(rb"(?:\bmake_(?:shared|unique)\s*<\s*|\bnew\s+)(?:[A-Za-z_]\w*::)*([A-Za-z_]\w*)\s*[(>{]")


_ARG_NAME_RE = re.compile(rb"[(,]\s*+&?\s*+(?:[A-Za-z_]\w*+::)*+([A-Za-z_]\w*+)\s*+(?:<[^;{}()]{0,200}?>)?\s*+(?=[,)])")


_KEYWORD_NAMES = frozenset(
    "if for while switch return sizeof decltype alignof static_cast reinterpret_cast const_cast "
    "dynamic_cast static_assert __launch_bounds__ __cluster_dims__ __align__ defined".split()
)


IDENT_RE = re.compile(rb"[A-Za-z_]\w*")


_PAIR_RES = {b"(": re.compile(rb"[()]"), b"{": re.compile(rb"[{}]")}


def whole_words(words: Iterable[str | bytes]) -> re.Pattern[bytes]:
    """A pattern matching any of the words where it stands as a whole word (in sorted order, so
    one set of words always compiles to the same pattern)."""
    spelled = sorted(w.encode() if isinstance(w, str) else w for w in words)
    return re.compile(rb"\b(?:" + b"|".join(map(re.escape, spelled)) + rb")\b")


def lexical_calls(masked: bytes, start: int, end: int) -> tuple[str, ...]:
    """Names called (or launched, or passed as an argument, as kernels are to launchers) in a body."""
    return tuple(sorted({name for name, _ in _scan_matches(masked[start:end], start)}))


class FileCalls:
    """The calls of one file's masked text, by span. No match of any pattern can hold a brace, so a
    braced body's matches are exactly the whole file's matches inside it: the file is scanned once,
    when a braced body or the whole file is first asked for, not once per enclosing body."""

    def __init__(self, structure: Structure) -> None:
        self.structure = structure
        self._offsets: list[int] | None = None
        self._matches: list[tuple[str, int]] = []

    def guarded(self, start: int, end: int) -> tuple[tuple[str, int], ...]:
        """(name, region) of each call in the span, so a call compiled only for some targets is
        followed only for them."""
        structure = self.structure
        pairs = {(name, structure.region_at(structure.line_of(offset))) for name, offset in self._matches_in(start, end)}
        return tuple(sorted(pairs))

    def _matches_in(self, start: int, end: int) -> list[tuple[str, int]]:
        masked = self.structure.masked
        if (start, end) == (0, len(masked)) or (masked[start : start + 1] == b"{" and masked[end - 1 : end] == b"}"):
            if self._offsets is None:
                self._matches = sorted(_scan_matches(masked, 0), key=lambda pair: pair[1])
                self._offsets = [offset for _, offset in self._matches]
            return self._matches[bisect_left(self._offsets, start) : bisect_left(self._offsets, end)]
        return list(_scan_matches(masked[start:end], start))


def _scan_matches(text: bytes, base: int) -> Iterator[tuple[str, int]]:
    body = text.replace(b"\\\n", b"  ")  # macro bodies continue lines with a backslash (same length)
    for pattern in (_CALL_RE, _ARG_NAME_RE, _ASSIGNED_RE, _CONSTRUCTED_RE):
        for match in pattern.finditer(body):
            name = match.group(1).decode()
            if name not in _KEYWORD_NAMES:
                yield name, base + match.start(1)


def closing_bracket(masked: bytes, start: int, open_char: bytes, close_char: bytes, limit: int = 4_000_000) -> int | None:
    """Offset of the bracket that closes the one at `start` (comments and literals already masked)."""
    depth, pos, stop = 0, start, min(len(masked), start + limit)
    for token in _PAIR_RES[open_char].finditer(masked, pos, stop):
        depth += 1 if token.group(0) == open_char else -1
        if depth == 0:
            return token.start()
    return None


def closing_angle(text: bytes, start: int) -> int | None:
    """The `>` closing the `<` at `start`, skipping parentheses (where `<` and `>` compare)."""
    depth, parens = 0, 0
    for pos in range(start, len(text)):
        char = text[pos : pos + 1]
        if char == b"(":
            parens += 1
        elif char == b")":
            parens -= 1
        elif parens == 0 and char == b"<":
            depth += 1
        elif parens == 0 and char == b">":
            depth -= 1
            if depth == 0:
                return pos
    return None


def split_arguments(args: bytes, angles: bool = True) -> list[bytes]:
    """Comma-separated parts of an argument list, outside nested brackets (`<...>` among them unless
    `angles` is off: in an expression `<` compares)."""
    opening, closing = (b"<([{", b">)]}") if angles else (b"([{", b")]}")
    parts, depth, start = [], 0, 0
    for pos, byte in enumerate(args):
        if byte in opening:
            depth += 1
        elif byte in closing:
            depth -= 1
        elif byte == ord(",") and depth == 0:
            parts.append(args[start:pos])
            start = pos + 1
    parts.append(args[start:])
    return parts


def inside_brackets(head: bytes) -> bool:
    """Whether the head ends inside an open parenthesis or template argument list."""
    parens = angles = 0
    for byte in head:
        if byte == 40:  # (
            parens += 1
        elif byte == 41:
            parens -= 1
        elif parens == 0 and byte == 60:  # <
            angles += 1
        elif parens == 0 and byte == 62 and angles > 0:
            angles -= 1
    return parens > 0 or angles > 0


def argument_spans(text: bytes, opener: re.Pattern) -> Iterator[tuple[int, int]]:
    """(after the `<`, at the `>`) of each outermost argument list `opener` (ending at a `<`) opens."""
    pos = 0
    for test in opener.finditer(text):
        if test.start() < pos:
            continue
        close = closing_angle(text, test.end() - 1)
        if close is None:
            return
        yield test.end(), close
        pos = close
