"""AL104 unresolved-gate: what the gate guards could not be resolved, so no verdict can be given."""

from __future__ import annotations

from typing import Iterator

from ..model import Finding, Verdict
from ..verdicts import gate_location
from .context import Context, target_list


def check(ctx: Context) -> Iterator[Finding]:
    for result in ctx.gate_results:
        unknown = [v for v in result.excluded if v.verdict is Verdict.UNKNOWN]
        if unknown:
            names = tuple(v.target for v in unknown)
            yield ctx.finding(
                "AL104", gate_location(result.gate), targets=names, symbol=result.gate.function,
                evidence=unknown[0].evidence, gate=result.gate.text, arch=target_list(names), reason=unknown[0].reason,
            )
