"""What choosing a class template's specialisation or a function overload needs.

A specialisation (`CollectiveBuilder<arch::Sm120, ...>`) or an overload taking
`Copy_Traits<SM90_BULK_COPY_AUTO, ...>` is compiled only where something names the types its
arguments spell, or the types its `enable_if` condition tests for. This module reads those
requirements from an argument list as clauses (all must hold; each is met when any one of its names
is named); `declarations` attaches them to the definitions it reads. It is its own module because it
reads conditions (`&&`, `||`, `!`, `is_same_v<...>`), not declarations.
"""

from __future__ import annotations

import re
from collections.abc import Set as AbstractSet

from archlint.lang.cpp.lexical import IDENT_RE, closing_angle, closing_bracket, split_arguments

# Names a specialisation's argument may spell that select nothing by themselves.
_NOT_KEYS = frozenset(
    "void bool char int unsigned signed long short float double auto const volatile typename true false "
    "enable_if enable_if_t void_t conditional conditional_t type_identity_t".split()
)
_ENABLE_IF_RE = re.compile(rb"^\s*(?:typename\s+)?(?:(?:cute|std|cutlass|cuda)\s*::\s*)?enable_if(?:_t)?\s*<")
TYPE_TEST_RE = re.compile(rb"\b(?:is_same|is_base_of)(?:_v)?\s*<")
# Logical operators with the brackets that hide them; a disjunction or a negated group inside an
# alternative; a test negated by `!`/`not`.
_AND_RE = re.compile(rb"[(\[{<]|[)\]}>]|&&|\band\b")
_OR_RE = re.compile(rb"[(\[{<]|[)\]}>]|\|\||\bor\b")
_GROUP_RE = re.compile(rb"\|\||\bor\b|(?:!|\bnot\b)\s*\(")
_NEGATED_RE = re.compile(rb"(?:!|\bnot)\s*(?:\w+\s*::\s*)*$")
_PLAIN_TYPE_RE = re.compile(rb"^\s*(?:typename\s+)?(?:::)?((?:\w+\s*::\s*)*)(\w+)\s*(?:<.*>)?\s*(?:const\s*)?[&*]*\s*$", re.S)


def template_argument_keys(text: bytes, params: AbstractSet[str]) -> list[tuple[str, ...]]:
    """Clauses for the concrete types among the template arguments `text` spells, at any depth."""
    clauses: list[tuple[str, ...]] = []
    start = text.find(b"<")
    while start >= 0:
        close = closing_angle(text, start)
        if close is None:
            break
        args = text[start + 1 : close]
        clauses += [clause for clause in specialisation_keys(args, params) if not _ENABLE_IF_RE.match(args)]
        clauses += template_argument_keys(args, params)
        start = text.find(b"<", close)
    return clauses


def specialisation_keys(args: bytes, params: AbstractSet[str]) -> tuple[tuple[str, ...], ...]:
    """What choosing a specialisation needs, as clauses that must all hold, each met when any one of
    its names is named: every type an argument spells (`arch::Sm120`), and the types an `enable_if`
    condition tests for (`is_same_v<ArchTag, arch::Sm103>`, `is_base_of_v<KernelScheduleX, Tag>`).
    What this cannot read adds no clause: the specialisation then counts as chosen more often, never less."""
    clauses: list[tuple[str, ...]] = []
    for arg in split_arguments(args):
        condition = _ENABLE_IF_RE.match(arg)
        if condition is not None:
            close = closing_angle(arg, condition.end() - 1)
            clauses += _condition_clauses(arg[condition.end() : close if close is not None else len(arg)], params)
            continue
        match = _PLAIN_TYPE_RE.match(arg)
        if match is not None and _is_key(match.group(2).decode(), params):
            # `Op::PREFETCH` needs `Op` too (a namespace is declared nowhere, so it needs nothing)
            qualifiers = IDENT_RE.findall(match.group(1))
            clauses += [(name.decode(),) for name in (*qualifiers, match.group(2)) if _is_key(name.decode(), params)]
    return tuple(dict.fromkeys(clauses))


def _condition_clauses(condition: bytes, params: AbstractSet[str]) -> list[tuple[str, ...]]:
    clauses = []
    for conjunct in _split_logical(condition, _AND_RE):
        alternatives = _split_logical(_unparen(conjunct), _OR_RE)
        names = [_tested_type(alternative, params) for alternative in alternatives]
        tested = [name for name in names if name]
        if len(tested) == len(names):
            clauses.append(tuple(dict.fromkeys(tested)))
    return clauses


def _tested_type(alternative: bytes, params: AbstractSet[str]) -> str | None:
    """A type that must be named for a conjunction of tests to hold: the first concrete argument of a
    positive `is_same`/`is_base_of` test. None when the alternative is itself a disjunction or negates
    a group, where no single name is needed."""
    if _GROUP_RE.search(alternative):
        return None
    for test in TYPE_TEST_RE.finditer(alternative):
        if _NEGATED_RE.search(alternative[: test.start()]):
            continue
        close = closing_angle(alternative, test.end() - 1)
        for arg in split_arguments(alternative[test.end() : close if close is not None else len(alternative)]):
            match = _PLAIN_TYPE_RE.match(arg)
            if match is not None and _is_key(match.group(2).decode(), params):
                return match.group(2).decode()
    return None


def _is_key(name: str, params: AbstractSet[str]) -> bool:
    return not (name in params or name in _NOT_KEYS or name[0].isdigit() or name.endswith(("_t", "_v")))


def _split_logical(text: bytes, pattern: re.Pattern) -> list[bytes]:
    """`text` split at the top-level logical operators `pattern` finds (outside brackets)."""
    parts, depth, start = [], 0, 0
    for match in pattern.finditer(text):
        token = match.group(0)
        if token in (b"(", b"[", b"{", b"<"):
            depth += 1
        elif token in (b")", b"]", b"}", b">"):
            depth = max(0, depth - 1)
        elif depth == 0:
            parts.append(text[start : match.start()])
            start = match.end()
    parts.append(text[start:])
    return [part for part in parts if part.strip()]


def _unparen(text: bytes) -> bytes:
    stripped = text.strip()
    while stripped.startswith(b"(") and closing_bracket(stripped, 0, b"(", b")", len(stripped)) == len(stripped) - 1:
        stripped = stripped[1:-1].strip()
    return stripped
