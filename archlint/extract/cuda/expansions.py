"""Calls spelled like macros': where a file expands a function-like macro, and what it passes.

A request a macro body makes (`cudaFuncSetAttribute(kernelTyped, ..., smemSize)` inside
`#define LAUNCH_PDL(..., smemSize, stream)`) exists only in the translation units that expand the
macro, with the size each expansion passes: `/*smemSize=*/0` at the call in code, or a parameter
of another macro whose body expands this one, passed on. The calls are read lexically from the
masked text, as the preprocessor splits them: at the commas outside parentheses. Names in capitals
are the ones read, the convention macros follow; a call to a macro of another spelling is not seen,
and a request it makes stays unsized (judge/macro_sizes.py).
"""

from __future__ import annotations

import re
from bisect import bisect_right

from archlint.lang.cpp.directives import Structure
from archlint.lang.cpp.lexical import closing_bracket
from archlint.model.cuda import MacroDef, MacroExpansion

_CALL_RE = re.compile(rb"\b([A-Z_][A-Z0-9_]{2,})\s*\(")
_DEFINING_RE = re.compile(rb"#\s*define\s+$")
_PRODUCT_RE = re.compile(r"(\d+)[uUlL]*(?:\s*\*\s*(\d+)[uUlL]*)*")
_FACTOR_RE = re.compile(r"(\d+)[uUlL]*")
_NAME_RE = re.compile(r"[A-Za-z_]\w*")
_MAX_ARGUMENTS_BYTES = 20_000  # a call whose arguments run longer is read as passing nothing known


def macro_expansions(structure: Structure) -> tuple[MacroExpansion, ...]:
    """Every call spelled like a macro's, once per (name, macro around it, arguments)."""
    masked = structure.masked
    if not _CALL_RE.search(masked):
        return ()
    bodies = sorted((d.line, d.end_line or d.line, d) for d in structure.defines if d.params is not None and not d.undef)
    starts = [line for line, _, _ in bodies]
    found: dict[tuple, MacroExpansion] = {}
    for match in _CALL_RE.finditer(masked):
        line_start = masked.rfind(b"\n", 0, match.start()) + 1
        if _DEFINING_RE.search(masked, line_start, match.start()):
            continue  # the name a #define defines
        line = structure.line_of(match.start())
        define = _body_at(bodies, starts, line)
        arguments = _arguments(masked, match.end() - 1, define)
        name = match.group(1).decode()
        within = define.name if define is not None else ""
        found.setdefault((name, within, arguments), MacroExpansion(name, line, arguments, within))
    return tuple(found.values())


def _body_at(bodies: list[tuple[int, int, MacroDef]], starts: list[int], line: int) -> MacroDef | None:
    at = bisect_right(starts, line) - 1
    if at < 0:
        return None
    first, last, define = bodies[at]
    return define if first <= line <= last else None


def _arguments(masked: bytes, opening: int, define: MacroDef | None) -> tuple[int | str | None, ...]:
    closing = closing_bracket(masked, opening, b"(", b")", _MAX_ARGUMENTS_BYTES)
    if closing is None:
        return ()
    inner = masked[opening + 1 : closing].replace(b"\\\n", b"  ").decode("utf-8", "replace")
    params = set(define.params or ()) if define is not None else set()
    return tuple(_argument(part.strip(), params, define is None) for part in _split(inner)) if inner.strip() else ()


def _split(inner: str) -> list[str]:
    """The arguments, split at the commas outside parentheses (brackets and braces protect none)."""
    parts, depth, start = [], 0, 0
    for at, char in enumerate(inner):
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(inner[start:at])
            start = at + 1
    parts.append(inner[start:])
    return parts


def _argument(spelled: str, params: set[str], in_code: bool) -> int | str | None:
    if _PRODUCT_RE.fullmatch(spelled):
        value = 1
        for factor in _FACTOR_RE.findall(spelled):
            value *= int(factor)
        return value
    if spelled in params or (in_code and _NAME_RE.fullmatch(spelled)):
        return spelled  # a parameter passed on; in code, the variable passed, named for the reason
    return None
