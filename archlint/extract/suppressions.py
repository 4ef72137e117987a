"""The suppression comment grammar, read by both extractors.

Grammar (case-sensitive, ids required; any text after `]` is a free-form reason):

    archlint: ignore[AL101, policy-gate] -- reason
    archlint: file-ignore[AL101]

The text may follow `#` or `//`, or sit inside `/* ... */`. The extractors find comment nodes with
tree-sitter and call `parse_suppression_text` on each node's text.
"""

from __future__ import annotations

import re

from archlint.model.findings import Suppression

_DIRECTIVE_RE = re.compile(r"(?<![\w-])archlint:[ \t]*(ignore|file-ignore)\[([^\]\n]*)\]")


_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")


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


def suppression_of(comment: str, line: int, trailing: bool, next_statement: int) -> Suppression | None:
    parsed = parse_suppression_text(comment)
    if parsed is None:
        return None
    ids, file_level = parsed
    covered = line if trailing or file_level else next_statement
    return Suppression(line=covered, ids=ids, file_level=file_level, comment_line=line)
