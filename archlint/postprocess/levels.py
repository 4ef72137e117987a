"""Levels: each finding at its rule's effective level (`levels` in the config); `none` drops it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

from archlint.model.findings import Finding, Level


def relevel(findings: Iterable[Finding], levels: Mapping[str, Level]) -> list[Finding]:
    """Set each finding's level to its rule's effective level; drop rules set to `none`."""
    out = []
    for finding in findings:
        level = levels.get(finding.rule, finding.level)
        if level is Level.NONE:
            continue
        out.append(finding if level is finding.level else replace(finding, level=level))
    return out
