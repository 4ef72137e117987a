"""`static_assert`s on constants whose value depends on the target.

SGLang's `AlignedVector` asserts `sizeof(T) * N <= kMaxVecBytes`, and `kMaxVecBytes` is
`SGL_ARCH_BLACKWELL_OR_GREATER ? 32 : 16`: a 32-byte vector that builds for sm_100a fails to
compile for sm_80 with no instruction to show for it. archlint cannot evaluate the assertion
(`sizeof`, template arguments), but it can tell that it tests a constant whose value on the
excluded target differs from its value on an admitted build: a possible blocker, so UNKNOWN at most.
"""

from __future__ import annotations

import re

from archlint.lang.cpp.directives import Structure
from archlint.lang.cpp.expr import parse_condition
from archlint.lang.cpp.lexical import closing_bracket
from archlint.model.cuda import ArchConstant, StaticAssert

_CONSTEXPR_RE = re.compile(rb"\bconstexpr\b[^;=(){}]*?\b([A-Za-z_]\w*)\s*=\s*([^;{}]+);")
_MACRO_USE_RE = re.compile(rb"\b(?:[A-Z][A-Z0-9_]{2,}|__CUDA_ARCH\w*)\b")
_STATIC_ASSERT_RE = re.compile(rb"\bstatic_assert\s*\(")
_NAME_RE = re.compile(rb"[A-Za-z_]\w*")


def arch_constants(structure: Structure) -> tuple[ArchConstant, ...]:
    """Constants initialised from an expression that spells a macro."""
    found = []
    for match in _CONSTEXPR_RE.finditer(structure.masked):
        text = match.group(2)
        if not _MACRO_USE_RE.search(text):
            continue
        line = structure.line_of(match.start(1))
        initializer = " ".join(text.decode("utf-8", "replace").split())
        found.append(ArchConstant(match.group(1).decode(), parse_condition(initializer), initializer, line,
                                  structure.region_at(line)))
    return tuple(found)


def static_asserts(structure: Structure, enclosing) -> tuple[StaticAssert, ...]:
    """Every `static_assert`, with the names of its condition (its message is a masked literal)."""
    found = []
    masked = structure.masked
    for match in _STATIC_ASSERT_RE.finditer(masked):
        close = closing_bracket(masked, match.end() - 1, b"(", b")")
        if close is None:
            continue
        names = tuple(dict.fromkeys(n.decode() for n in _NAME_RE.findall(masked[match.end() : close])))
        line = structure.line_of(match.start())
        col = match.start() - structure.line_starts[line - 1] + 1
        found.append(StaticAssert(names, line, col, structure.region_at(line), enclosing(line)))
    return tuple(found)


