"""AL104 unresolved-gate: what the gate guards could not be resolved, so no verdict can be given."""

from __future__ import annotations

from typing import Iterator

from archlint.checks.context import Context, verdict_findings
from archlint.model.findings import Finding, Verdict


def check(ctx: Context) -> Iterator[Finding]:
    yield from verdict_findings(ctx, "AL104", Verdict.UNKNOWN)
