"""AL102 genuine-gate: a gate excludes targets for a real reason, with the evidence."""

from __future__ import annotations

from typing import Iterator

from archlint.checks.context import Context, verdict_findings
from archlint.model.findings import Finding, Verdict


def check(ctx: Context) -> Iterator[Finding]:
    yield from verdict_findings(ctx, "AL102", Verdict.GENUINE)
