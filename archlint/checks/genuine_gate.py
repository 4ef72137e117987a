"""AL102 genuine-gate: a gate excludes targets for a real reason, with the evidence."""

from __future__ import annotations

from typing import Iterator

from ..model import Finding, Verdict
from ..verdicts import gate_location
from .context import Context, target_list


def check(ctx: Context) -> Iterator[Finding]:
    for result in ctx.gate_results:
        genuine = [v for v in result.excluded if v.verdict is Verdict.GENUINE]
        if genuine:
            names = tuple(v.target for v in genuine)
            yield ctx.finding(
                "AL102", gate_location(result.gate), targets=names, symbol=result.gate.function,
                evidence=genuine[0].evidence, gate=result.gate.text, arch=target_list(names), reason=genuine[0].reason,
            )
