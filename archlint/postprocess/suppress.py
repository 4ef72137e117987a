"""In-source suppressions: the comment grammar, and matching suppressions to findings.

Grammar (case-sensitive, ids required; any text after `]` is a free-form reason):

    archlint: ignore[AL101, policy-gate] -- reason
    archlint: file-ignore[AL205]

The text may follow `#` or `//`, or sit inside `/* ... */`. The facts extractors find comment
nodes with tree-sitter and call `parse_suppression_text` on each node's text. A suppression covers
the lines the extractor gave it: in Python, every line of the statement its comment is on.
A Python `# noqa: AL101` covers nothing; AL903 says what to write instead.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from archlint.knowledge.rules import RuleInfo
from archlint.model.findings import Finding, Level, Location, Suppression

UNUSED = "AL900"
UNKNOWN = "AL901"
NOQA = "AL903"
META_RULES = (UNUSED, UNKNOWN, NOQA)


@dataclass(frozen=True)
class _Entry:
    """One id of one suppression comment, resolved to a rule id (None when unknown)."""

    path: str
    suppression: Suppression
    written: str
    rule: str | None

    def covers(self, finding: Finding) -> bool:
        if self.rule != finding.rule or self.path != finding.location.path:
            return False
        return self.suppression.covers(finding.location.line)


def apply_suppressions(
    findings: Iterable[Finding],
    suppressions_by_path: Mapping[str, Sequence[Suppression]],
    registry: Mapping[str, RuleInfo],
    *,
    active_rules: Iterable[str] | None = None,
) -> tuple[list[Finding], list[Finding]]:
    """Mark covered findings `suppressed=True`; report unused (AL900) and unknown (AL901) ids.

    `registry` maps rule id -> RuleInfo (see `archlint.registry.load_rules`). `active_rules`,
    when given, limits AL900 to suppressions of rules that actually ran, so `--select AL101`
    does not call every other suppression unused. AL900/AL901 findings can themselves be
    silenced by a suppression naming them on the same line or file.
    """
    entries = _entries(suppressions_by_path, registry)
    noqa = _noqa_hints(suppressions_by_path, entries, registry)
    used: set[int] = set()
    marked = [_mark(finding, entries, used) for finding in findings]
    active = set(active_rules) if active_rules is not None else set(registry)
    meta = []
    for index, entry in enumerate(entries):
        if entry.rule is None:
            meta.append(_meta(UNKNOWN, entry, registry))
        elif index not in used and entry.rule in active and entry.rule not in META_RULES:
            meta.append(_meta(UNUSED, entry, registry))
    meta = [_mark(finding, entries, set()) for finding in meta + noqa]
    return marked, sorted(meta, key=Finding.sort_key)


def _entries(suppressions_by_path: Mapping[str, Sequence[Suppression]], registry: Mapping[str, RuleInfo]) -> list[_Entry]:
    names = {info.name: rule_id for rule_id, info in registry.items()}
    entries = []
    for path in sorted(suppressions_by_path):
        ordered = sorted(suppressions_by_path[path], key=lambda s: (s.comment_line, s.line, s.file_level))
        for suppression in ordered:
            if suppression.noqa:
                continue
            for written in suppression.ids:
                rule = written if written in registry else names.get(written)
                entries.append(_Entry(path, suppression, written, rule))
    return entries


def _mark(finding: Finding, entries: Sequence[_Entry], used: set[int]) -> Finding:
    hits = [index for index, entry in enumerate(entries) if entry.covers(finding)]
    used.update(hits)
    if hits and not finding.suppressed:
        return replace(finding, suppressed=True)
    return finding


def _meta(rule: str, entry: _Entry, registry: Mapping[str, RuleInfo]) -> Finding:
    info = registry.get(rule)
    level = info.severity if info is not None else Level.WARNING
    kind = "file-ignore" if entry.suppression.file_level else "ignore"
    if rule == UNKNOWN:
        message = f"Unknown rule `{entry.written}` in `archlint: {kind}[...]`"
    else:
        message = f"Unused suppression: no {entry.rule} finding here (`archlint: {kind}[{entry.written}]`)"
    location = Location(entry.path, entry.suppression.comment_line or entry.suppression.line)
    return Finding(
        rule=rule,
        level=level,
        message=message,
        location=location,
        symbol=f"{kind}:{entry.written}",
        snippet=f"archlint: {kind}[{entry.written}]",
    )


def _noqa_hints(suppressions_by_path: Mapping[str, Sequence[Suppression]], entries: Sequence[_Entry],
                registry: Mapping[str, RuleInfo]) -> list[Finding]:
    """AL903 for each `# noqa:` naming archlint rules, less those an `archlint: ignore[...]` in the
    same comment names too: ruff and flake8 read noqa, archlint does not."""
    written_beside = {(entry.path, entry.suppression.comment_line, entry.rule) for entry in entries}
    hints = []
    for path in sorted(suppressions_by_path):
        for suppression in suppressions_by_path[path]:
            if not suppression.noqa:
                continue
            ids = [rule for rule in suppression.ids
                   if rule in registry and (path, suppression.comment_line, rule) not in written_beside]
            if ids:
                hints.append(_noqa_hint(path, suppression.comment_line, ids, registry))
    return hints


def _noqa_hint(path: str, line: int, ids: Sequence[str], registry: Mapping[str, RuleInfo]) -> Finding:
    info = registry.get(NOQA)
    listed = ", ".join(ids)
    return Finding(
        rule=NOQA,
        level=info.severity if info is not None else Level.NOTE,
        message=f"`# noqa: {listed}` is not read by archlint; write `# archlint: ignore[{listed}]`",
        location=Location(path, line),
        symbol=f"noqa:{','.join(ids)}",
        snippet=f"noqa: {listed}",
    )
