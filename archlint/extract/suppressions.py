"""The suppression comment grammar, read by both extractors.

Grammar (case-sensitive, ids required; any text after `]` is a free-form reason):

    archlint: ignore[AL101, policy-gate] -- reason
    archlint: file-ignore[AL101]

The text may follow `#` or `//`, or sit inside `/* ... */`. The extractors find comment nodes with
tree-sitter and call `parse_suppression_text` on each node's text.

A Python comment that names archlint ids in another tool's grammar (`# noqa: AL101`, as ruff and
flake8 read it) suppresses nothing; it is kept as a `noqa` Suppression so the report can say what
to write instead (AL903).
"""

from __future__ import annotations

import re

from archlint.model.findings import Suppression

_DIRECTIVE_RE = re.compile(r"(?<![\w-])archlint:[ \t]*(ignore|file-ignore)\[([^\]\n]*)\]")
# flake8's and ruff's form: `# noqa: E501, AL101` (codes separated by commas or spaces)
_NOQA_RE = re.compile(r"#[ \t]*noqa[ \t]*:[ \t]*([A-Za-z]+[0-9]+(?:[ \t,]+[A-Za-z]+[0-9]+)*)", re.IGNORECASE)
_ARCHLINT_ID_RE = re.compile(r"AL[0-9]+")
# a `noqa` (as ruff writes it, or in capitals) naming an archlint-shaped code further on its line;
# a literal first, so that `re` searches for it as fast as `in` does
_NOQA_BYTES = (re.compile(rb"noqa[ \t]*:[^\n]*AL[0-9]"), re.compile(rb"NOQA[ \t]*:[^\n]*AL[0-9]"))


_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")


def may_hold_notes(data: bytes) -> bool:
    """The bytes may hold a suppression comment or a `noqa` naming an archlint id: a file without
    either is not searched for comments."""
    return b"archlint:" in data or any(pattern.search(data) is not None for pattern in _NOQA_BYTES)


def parse_suppression_text(comment_text: str) -> tuple[tuple[str, ...], bool] | None:
    """Parse one comment's text into (ids as written, file_level), or None if it holds none.

    A directive with no ids, or with a malformed id, is not a suppression: there is no blanket
    form, so `archlint: ignore[]` silences nothing.
    """
    match = _DIRECTIVE_RE.search(comment_text)
    if match is None:
        return None
    ids = tuple(part.strip() for part in match.group(2).split(",") if part.strip())
    if not ids or not all(_ID_RE.match(rule_id) for rule_id in ids):
        return None
    return ids, match.group(1) == "file-ignore"


def noqa_ids(comment_text: str) -> tuple[str, ...]:
    """The archlint-shaped codes (`AL101`) a `# noqa:` comment names; () for a plain `# noqa` or
    one naming other tools' codes only."""
    found: list[str] = []
    for match in _NOQA_RE.finditer(comment_text):
        found += [code for code in re.split(r"[ \t,]+", match.group(1)) if _ARCHLINT_ID_RE.fullmatch(code)]
    return tuple(dict.fromkeys(found))


def python_suppressions(comment: str, line: int, span: tuple[int, int]) -> list[Suppression]:
    """What one Python comment on `line` says: a suppression of the logical line `span` (or of the
    file), and a `noqa` naming archlint ids."""
    found: list[Suppression] = []
    parsed = parse_suppression_text(comment)
    if parsed is not None:
        ids, file_level = parsed
        first, last = (line, line) if file_level else span
        found.append(Suppression(first, ids, file_level, line, last))
    noqa = noqa_ids(comment) if "noqa" in comment.lower() else ()
    if noqa:
        found.append(Suppression(line, noqa, False, line, line, noqa=True))
    return found
