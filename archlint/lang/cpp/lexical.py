"""Lexical reading of masked C++ text: calls named in a span, and bracket matching."""

from __future__ import annotations

import re
from bisect import bisect_left
from archlint.lang.cpp.directives import Structure


_CALL_RE = re.compile(rb"(?:(?<=[^\w])|^)(~?[A-Za-z_]\w*)\s*(?:<[^;{}()]{0,200}?>\s*)?(?:\(|<<<)")


# `auto kernel = tmpl<...>;` then `cudaLaunchKernelExC(&cfg, (void*)kernel, ...)`: a launch with no call syntax.
_ASSIGNED_RE = re.compile(rb"=\s*&?\s*(?:[A-Za-z_]\w*::)*([A-Za-z_]\w*)\s*(?:<[^;{}()]{0,400}?>)?\s*;")


_ARG_NAME_RE = re.compile(rb"[(,]\s*&?\s*(?:[A-Za-z_]\w*::)*([A-Za-z_]\w*)\s*(?:<[^;{}()]{0,200}?>)?\s*(?=[,)])")


_KEYWORD_NAMES = frozenset(
    "if for while switch return sizeof decltype alignof static_cast reinterpret_cast const_cast "
    "dynamic_cast static_assert __launch_bounds__ __cluster_dims__ __align__ defined".split()
)


_PAIR_RES = {b"(": re.compile(rb"[()]"), b"{": re.compile(rb"[{}]")}


def lexical_calls(masked: bytes, start: int, end: int) -> tuple[str, ...]:
    """Names called (or launched, or passed as an argument, as kernels are to launchers) in a body."""
    return tuple(sorted({name for name, _ in _call_matches(masked, start, end)}))


def guarded_calls(structure: Structure, start: int, end: int) -> tuple[tuple[str, int], ...]:
    """(name, region) of each call, so a call compiled only for some targets is followed only for them."""
    pairs = {(name, structure.region_at(structure.line_of(offset))) for name, offset in _call_matches(structure.masked, start, end)}
    return tuple(sorted(pairs))


def _call_matches(masked: bytes, start: int, end: int):
    if (start, end) == (0, len(masked)) or (masked[start : start + 1] == b"{" and masked[end - 1 : end] == b"}"):
        # No match of either pattern can hold a brace, so a braced body's matches are exactly the
        # whole file's matches inside it: scan each file once, not once per enclosing body.
        offsets, matches = _call_index(masked)
        return matches[bisect_left(offsets, start) : bisect_left(offsets, end)]
    return list(_scan_matches(masked[start:end], start))


def _scan_matches(text: bytes, base: int):
    body = text.replace(b"\\\n", b"  ")  # macro bodies continue lines with a backslash (same length)
    for pattern in (_CALL_RE, _ARG_NAME_RE, _ASSIGNED_RE):
        for match in pattern.finditer(body):
            name = match.group(1).decode()
            if name not in _KEYWORD_NAMES:
                yield name, base + match.start(1)


_last_index: tuple[bytes, list[int], list[tuple[str, int]]] | None = None


def _call_index(masked: bytes) -> tuple[list[int], list[tuple[str, int]]]:
    """(offsets, (name, offset) pairs) of every call match in the file, by offset; the last file's is kept."""
    global _last_index
    if _last_index is None or _last_index[0] is not masked:
        matches = sorted(_scan_matches(masked, 0), key=lambda pair: pair[1])
        _last_index = (masked, [offset for _, offset in matches], matches)
    return _last_index[1], _last_index[2]


def closing_bracket(masked: bytes, start: int, open_char: bytes, close_char: bytes, limit: int = 4_000_000) -> int | None:
    """Offset of the bracket that closes the one at `start` (comments and literals already masked)."""
    depth, pos, stop = 0, start, min(len(masked), start + limit)
    for token in _PAIR_RES[open_char].finditer(masked, pos, stop):
        depth += 1 if token.group(0) == open_char else -1
        if depth == 0:
            return token.start()
    return None
