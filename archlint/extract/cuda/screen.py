"""What the file rules could report in a CUDA file, found without a C++ parse: the `RuleSites` a
file read for its directives only carries, so that the engine reads in full the files no gate
builds only where a scan target would get a finding (engine/freefiles.py).

Each part is a superset of what the full facts give the file rules, found the same way on the same
text: PTX opcodes of every `asm(...)` (extract_cuda's `_ptx_constructs`, read from the bytes
decoded as Latin-1 so that offsets are byte offsets: opcodes are ASCII), the intrinsics an
instruction check reads (kb.identifier_pattern's names, without the context filters that drop
some), constant shared-memory requests (smem.smem_requests itself) and whether any kernel is
defined and the region of the first line of code of each (a kernel empty on a target has it
compiled out there).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache

from archlint.extract.cuda.functions import _RETURN_ONLY_RE, _signature_paren
from archlint.extract.cuda.smem import smem_requests
from archlint.knowledge.arch import Target, known_ccs
from archlint.knowledge.kb import KnowledgeBase
from archlint.lang.cpp.directives import Structure
from archlint.lang.cpp.lexical import closing_bracket
from archlint.lang.cpp.ptx import PtxError, _literals_from, opcodes
from archlint.model.cuda import RuleSites

_ASM_RE = re.compile(rb"(?:asm|__asm__)\s*(?:volatile|__volatile__)?\s*(?:goto\s*)?\(")
_WORD = re.compile(rb"\w")
_WORD_OR_DOT = re.compile(rb"[\w.]")


def asm_statements(masked: bytes) -> Iterator[re.Match[bytes]]:
    """Each `asm(`, `asm volatile(`, `__asm__ __volatile__(` ... at a word start: the matches of
    `\\b(?:asm|__asm__)...\\(`, searched from the literal `asm` (many times faster)."""
    pos = 0
    while (found := masked.find(b"asm", pos)) >= 0:
        start = found - 2 if masked[found - 2 : found] == b"__" else found
        match = _ASM_RE.match(masked, start)
        if match is not None and not (start and _WORD.match(masked, start - 1)):
            yield match
            pos = match.end()
        else:
            pos = found + 3


def rule_sites(data: bytes, structure: Structure, kb: KnowledgeBase) -> RuleSites:
    sites = _ptx_sites(data, structure, kb) | _intrinsic_sites(data, structure, kb)
    smem = tuple(request for request in smem_requests(structure, _nowhere) if request.nbytes is not None)
    kernels, unread = _kernel_starts(structure)
    return RuleSites(tuple(sorted(kernels)), unread, tuple(sorted(sites)), smem)


def _kernel_starts(structure: Structure) -> tuple[set[int], bool]:
    """The region of the first line of code of each kernel body (a kernel empty on a target has that
    line compiled out there), found as functions' lexical reading finds a body; and whether some
    `__global__` had no body found so (then any condition of the file may empty a kernel)."""
    masked, regions, unread = structure.masked, set(), False
    start = masked.find(b"__global__")
    while start >= 0:
        end = start + len(b"__global__")
        if (start == 0 or not _WORD.match(masked, start - 1)) and not _WORD.match(masked, end):
            brace = _body_brace(masked, end)
            if brace is None:
                unread = True
            elif brace >= 0:
                regions.add(_first_code_region(structure, brace))
        start = masked.find(b"__global__", end)
    return regions, unread


def _body_brace(masked: bytes, after: int) -> int | None:
    """The offset of the `{` opening the body of the function whose qualifier ends at `after`; -1
    for a declaration (a `;` first); None where it cannot be told."""
    opening = _signature_paren(masked, after)
    closing = closing_bracket(masked, opening, b"(", b")") if opening is not None else None
    if closing is None:
        return -1 if masked.find(b";", after, after + 400) >= 0 and masked.find(b"{", after, after + 400) < 0 else None
    brace = masked.find(b"{", closing, closing + 400)
    semicolon = masked.find(b";", closing, brace if brace >= 0 else closing + 400)
    if semicolon >= 0:
        return -1
    return brace if brace >= 0 else None


def _first_code_region(structure: Structure, brace: int) -> int:
    """The region of the first body line extract.cuda.functions counts as code (not blank, not a
    directive, not only braces or `return;`), from the text after the opening brace."""
    first = structure.line_of(brace)
    for offset, text in enumerate(structure.masked[brace + 1 : brace + 1 + _BODY_WINDOW].split(b"\n")):
        stripped = text.strip().strip(b"{};").strip()
        if stripped and not stripped.startswith(b"#") and not _RETURN_ONLY_RE.match(stripped):
            return structure.region_at(first + offset)
    return structure.region_at(first)


_BODY_WINDOW = 1 << 16  # bytes after a kernel's brace looked through for its first line of code


def _nowhere(line: int) -> str:
    return ""


def _ptx_sites(data: bytes, structure: Structure, kb: KnowledgeBase) -> set[tuple[str, str, int]]:
    found: set[tuple[str, str, int]] = set()
    if b"asm" not in data:
        return found
    text = data.decode("latin-1")
    for match in asm_statements(structure.masked):
        names = _checked_opcodes(_asm_text(text, match.end()), kb)
        if names:
            region = structure.region_at(structure.line_of(match.start()))
            found.update(("ptx", name, region) for name in names)
    return found


# What ptx._literals_from reads, as one match: string literals and the gaps between them. The
# text it spans decides what they read, unless a raw string follows (then it is read in full).
_LITERALS_RE = re.compile(r'(?:\s+|//[^\n]*|/\*.*?\*/|^[ \t]*#[^\n]*|(?:u8|u|U|L)?"(?:[^"\\\n]|\\.)*")*', re.DOTALL | re.MULTILINE)
_RAW_START_RE = re.compile(r'(?:u8|u|U|L)?R"')
_read: dict[str, str] = {}


def _asm_text(text: str, pos: int) -> str:
    """ptx._literals_from(text, pos), read once per distinct span of literals."""
    span = _LITERALS_RE.match(text, pos)
    end = span.end() if span is not None else pos
    if _RAW_START_RE.match(text, end):
        return _literals_from(text, pos)
    key = text[pos:end]
    if key not in _read:
        if len(_read) > 8192:
            _read.clear()
        _read[key] = _literals_from(text, pos)
    return _read[key]


@lru_cache(maxsize=8192)
def _checked_opcodes(asm_text: str, kb: KnowledgeBase) -> tuple[str, ...]:
    """The opcodes of an asm statement's text that some known target lacks (generated kernels
    repeat the same few thousand texts hundreds of thousands of times)."""
    try:
        names = opcodes(asm_text)
    except PtxError:
        return ()
    return tuple(dict.fromkeys(name for name in names if _lacking_somewhere(kb, "ptx", name)))


def _intrinsic_sites(data: bytes, structure: Structure, kb: KnowledgeBase) -> set[tuple[str, str, int]]:
    """Every spelling of an intrinsic that emits an instruction, found as kb.identifier_pattern finds
    it: not after a word character or a dot, and ending a word."""
    found: set[tuple[str, str, int]] = set()
    masked = structure.masked
    for anchor, names in _emitting_names(kb):
        if anchor in data:
            for name, kind in names:
                _spellings(masked, name, kind, structure, found)
    return found


def _spellings(masked: bytes, name: bytes, kind: str, structure: Structure, found: set[tuple[str, str, int]]) -> None:
    start = masked.find(name)
    while start >= 0:
        end = start + len(name)
        if (start == 0 or not _WORD_OR_DOT.match(masked, start - 1)) and not _WORD.match(masked, end):
            found.add((kind, name.decode(), structure.region_at(structure.line_of(start))))
        start = masked.find(name, end)


_ANCHOR = 8  # bytes: names sharing their first ones are looked for once (cp_async_bulk_*)


@lru_cache(maxsize=4)
def _emitting_names(kb: KnowledgeBase) -> tuple[tuple[bytes, tuple[tuple[bytes, str], ...]], ...]:
    """The knowledge base's plain intrinsic names that some known target lacks and that are neither
    a CuTe atom nor a CUTLASS arch tag (those never emit an instruction where they are named), with
    the kind extract_cuda gives them, grouped by their first bytes."""
    groups: dict[bytes, list[tuple[bytes, str]]] = {}
    for name in sorted(kb.intrinsic_names):
        if name.startswith(kb.intrinsic_prefixes) or name in kb.arch_tag_names:
            continue
        kind = "attribute" if name.startswith("__cluster_dims__") else "intrinsic"
        if _lacking_somewhere(kb, kind, name):
            groups.setdefault(name.encode()[:_ANCHOR], []).append((name.encode(), kind))
    return tuple((anchor, tuple(names)) for anchor, names in sorted(groups.items()))


def _lacking_somewhere(kb: KnowledgeBase, kind: str, name: str) -> bool:
    """The construct has a knowledge-base row and some target archlint knows lacks it (a plain
    target has the least: `a` and `f` only add)."""
    requirement = kb.requirement(kind, name)
    return requirement is not None and not all(requirement.supports(Target(cc, "")) for cc in known_ccs())
