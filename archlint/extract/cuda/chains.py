"""`if constexpr` chains: which statements a chain chooses between, and whether every choice needs
the same knowledge-base row.

CuTe picks an MMA atom in chains such as `ss_op_selector`: `if constexpr (Tile_N % 256 == 0) return
SM90::GMMA::MMA_64x256x16_...{}; else if constexpr (...) ... else static_assert(...)`. One atom
is compiled, which one depends on template arguments; but when every alternative names an atom of
the same row (or fails to compile, or only reports an error), whichever does the work needs what
that row says.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from archlint.knowledge.prebuilt import load_prebuilt
from archlint.lang.cpp.declarations import without_directives
from archlint.lang.cpp.lexical import closing_bracket

_IF_CONSTEXPR_RE = re.compile(rb"\bif\s+constexpr\s*\(")
_ELSE_RE = re.compile(rb"\s*else\b\s*")
_IF_RE = re.compile(rb"if\s*(?:constexpr\s*)?\(")
_RETURN_RE = re.compile(rb"\breturn\b")
_WORK_RE = re.compile(rb"\breturn\b|<<<")
# `{ return cudaErrorNotSupported; }`: an alternative that only hands back an error code.
_ERROR_RETURN_RE = re.compile(rb"\s*\{?\s*return\s+[\w:]*(?:Error|NotSupported|Unsupported)\w*\s*;\s*\}?\s*")


@dataclass(frozen=True)
class Chain:
    start: int  # offset of its first `if`
    end: int
    alternatives: tuple[tuple[int, int], ...]  # (start, end) of each statement it chooses between
    complete: bool  # it ends in a plain `else`: one alternative is always taken
    nested: tuple[tuple["Chain", ...], ...]  # the chains inside each alternative


def constexpr_branch_spans(masked: bytes) -> list[tuple[int, int]]:
    """(start, end) byte offsets of the statements an `if constexpr` chooses between, `else` included."""
    spans = []
    for match in _IF_CONSTEXPR_RE.finditer(masked):
        condition_end = past_closing(masked, match.end() - 1, b"(", b")")
        if condition_end is None:
            continue
        branch = _statement_end(masked, condition_end)
        if branch is None:
            continue
        end = branch
        otherwise = _ELSE_RE.match(masked, end)
        if otherwise:
            end = _statement_end(masked, otherwise.end()) or end
        spans.append((condition_end, end))
    return spans


def uniform_chains(masked: bytes, sites: Mapping[str, Sequence[int]]) -> dict[str, list[Chain]]:
    """For each row id, the outermost chains every alternative of which holds a site of that row
    (`sites`: row id -> offsets), cannot compile (a `static_assert` and no `return`) or only reports
    an error (`_only_reports_error`)."""
    text = without_directives(masked)
    chains = _chains(text, 0, len(text))
    return {row: [chain for chain in chains if _chain_needs(text, chain, offsets)] for row, offsets in sites.items()}


def _chains(text: bytes, low: int, high: int) -> list[Chain]:
    found: list[Chain] = []
    pos = low
    while (match := _IF_CONSTEXPR_RE.search(text, pos, high)) is not None:
        chain = _chain(text, match)
        if chain is None or chain.end > high:
            pos = match.end()
            continue
        found.append(chain)
        pos = chain.end
    return found


def _chain(text: bytes, match: re.Match[bytes]) -> Chain | None:
    alternatives: list[tuple[int, int]] = []
    complete = False
    current: re.Match[bytes] | None = match
    pos = match.start()
    while current is not None:
        condition_end = past_closing(text, current.end() - 1, b"(", b")")
        branch_end = None if condition_end is None else _statement_end(text, condition_end)
        if condition_end is None or branch_end is None:
            return None if not alternatives else _made(match.start(), pos, alternatives, False, text)
        alternatives.append((condition_end, branch_end))
        pos, current = branch_end, None
        otherwise = _ELSE_RE.match(text, pos)
        if otherwise is None:
            break
        current = _IF_CONSTEXPR_RE.match(text, otherwise.end())
        if current is None:
            end = _statement_end(text, otherwise.end())
            if end is not None:
                alternatives.append((otherwise.end(), end))
                complete, pos = True, end
    return _made(match.start(), pos, alternatives, complete, text)


def _made(start: int, end: int, alternatives: list[tuple[int, int]], complete: bool, text: bytes) -> Chain:
    nested = tuple(tuple(_chains(text, low, high)) for low, high in alternatives)
    return Chain(start, end, tuple(alternatives), complete, nested)


def _chain_needs(text: bytes, chain: Chain, offsets: Sequence[int]) -> bool:
    return chain.complete and all(_alternative_needs(text, span, nested, offsets)
                                  for span, nested in zip(chain.alternatives, chain.nested))


def _alternative_needs(text: bytes, span: tuple[int, int], nested: tuple[Chain, ...], offsets: Sequence[int]) -> bool:
    low, high = span
    if any(low <= offset < high and not any(c.start <= offset < c.end for c in nested) for offset in offsets):
        return True
    if any(_chain_needs(text, chain, offsets) for chain in nested):
        return True
    return _does_no_work(_own_text(text, span, nested))


def _own_text(text: bytes, span: tuple[int, int], nested: tuple[Chain, ...]) -> bytes:
    """An alternative's text with the chains nested in it blanked."""
    low, high = span
    own = bytearray(text[low:high])
    for chain in nested:
        own[chain.start - low : chain.end - low] = b" " * (chain.end - chain.start)
    return bytes(own)


def _does_no_work(own: bytes) -> bool:
    """An alternative that cannot compile (a `static_assert` and no `return`) or only reports an
    error."""
    return (b"static_assert" in own and _RETURN_RE.search(own) is None) or _only_reports_error(own)


def _only_reports_error(own: bytes) -> bool:
    """An alternative that does no work but report an error: a `throw` or error macro
    (rules/kb/prebuilt.toml) with no `return` or kernel launch, or a bare `return` of an error code."""
    if _ERROR_RETURN_RE.fullmatch(own):
        return True
    return load_prebuilt().error_report.search(own) is not None and _WORK_RE.search(own) is None


def names_every_alternative_spells(text: bytes, names_of: Callable[[bytes], set[str]]) -> list[tuple[int, frozenset[str]]]:
    """For each outermost complete chain of `text` (a file with only some builds' code blanked, but
    not `if constexpr` branches): its start, and the names that every alternative doing work
    spells (`names_of` reads them), which whichever alternative is taken compiles."""
    text = without_directives(text)
    found = []
    for chain in _chains(text, 0, len(text)):
        names = _chain_names(text, chain, names_of)
        if names:
            found.append((chain.start, names))
    return found


def _chain_names(text: bytes, chain: Chain, names_of: Callable[[bytes], set[str]]) -> frozenset[str]:
    if not chain.complete:
        return frozenset()
    common: frozenset[str] | None = None
    for span, nested in zip(chain.alternatives, chain.nested):
        own = _own_text(text, span, nested)
        if not nested and _does_no_work(own):
            continue
        names = frozenset(names_of(own)).union(*(_chain_names(text, inner, names_of) for inner in nested))
        common = names if common is None else common & names
    return common or frozenset()


def _statement_end(masked: bytes, pos: int) -> int | None:
    """End offset of the statement starting at or after `pos`: a braced block, or up to its `;`.
    An `if` statement (an `else if` chain) runs to the end of its own branches."""
    while pos < len(masked) and masked[pos : pos + 1].isspace():
        pos += 1
    if masked.startswith(b"{", pos):
        return past_closing(masked, pos, b"{", b"}")
    nested = _IF_RE.match(masked, pos)
    if nested:
        condition_end = past_closing(masked, nested.end() - 1, b"(", b")")
        branch = None if condition_end is None else _statement_end(masked, condition_end)
        otherwise = None if branch is None else _ELSE_RE.match(masked, branch)
        return (_statement_end(masked, otherwise.end()) or branch) if otherwise else branch
    semicolon = masked.find(b";", pos)
    return None if semicolon < 0 else semicolon + 1


def past_closing(masked: bytes, pos: int, opening: bytes, closing: bytes) -> int | None:
    end = closing_bracket(masked, pos, opening, closing)
    return None if end is None else end + 1
