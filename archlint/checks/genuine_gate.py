"""AL102 genuine-gate: a gate excludes targets for a real reason, with the evidence."""

from __future__ import annotations

from typing import Iterator

from ..model import Finding, Verdict
from .context import Context, verdict_findings


def check(ctx: Context) -> Iterator[Finding]:
    yield from verdict_findings(ctx, "AL102", Verdict.GENUINE)
