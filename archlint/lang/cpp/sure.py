"""What a definition compiles wherever it is compiled: its text with the parts only some builds or
some uses compile blanked (`if constexpr` branches, preprocessor conditionals, type tests, type
selections, member-function bodies). `Declaration.sure_uses` and `Construct.unconditional` are read
from it; `judge.reach.Unreached.named` follows them to what a unit surely instantiates."""

from __future__ import annotations

import re

from archlint.lang.cpp.declarations import blank, type_test_spans
from archlint.lang.cpp.lexical import argument_spans

_BRACKETS_RE = re.compile(rb"[{};]")

_SELECTION_RE = re.compile(rb"\b(?:conditional|enable_if)(?:_t)?\s*<")
_CLASS_HEAD_RE = re.compile(rb"\b(?:struct|class|union)\b[^;{}()]*$")
_FUNCTION_HEAD_RE = re.compile(rb"\)\s*(?:(?:const|volatile|noexcept|override|final|mutable|&&?)\s*|->[^;{}]*)*$")


def member_body_spans(masked: bytes) -> list[tuple[int, int]]:
    """(start, end) of the bodies of functions defined inside a class: a class template's member
    function is compiled only where something calls it, not with the class."""
    spans: list[tuple[int, int]] = []
    stack: list[tuple[str, int]] = []  # (kind, offset of its `{`)
    last = 0
    for match in _BRACKETS_RE.finditer(masked):
        char, at = match.group(0), match.start()
        if char == b"{":
            head = masked[last:at]
            kind = "class" if _CLASS_HEAD_RE.search(head) else "function" if _FUNCTION_HEAD_RE.search(head) else "other"
            stack.append((kind, at))
        elif char == b"}" and stack:
            kind, opened = stack.pop()
            if kind == "function" and stack and stack[-1][0] == "class":
                spans.append((opened, at + 1))
        last = at + 1
    return spans


def sure_text(masked: bytes, unsure: list[tuple[int, int]]) -> bytes:
    """`masked` with the given spans, type tests and type selections blanked (newlines kept): what
    is left is compiled wherever its definition is."""
    spans = unsure + type_test_spans(masked)
    if b"conditional" in masked or b"enable_if" in masked:
        spans += list(argument_spans(masked, _SELECTION_RE))
    return blank_spans(masked, spans)


def blank_spans(text: bytes, spans: list[tuple[int, int]]) -> bytes:
    """`text` with each (start, end) span blanked, newlines kept."""
    out = bytearray(text)
    for start, end in spans:
        out[start:end] = blank(text[start:end])
    return bytes(out)
