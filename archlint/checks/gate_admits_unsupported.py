"""AL105 gate-admits-unsupported: a gate lets a target through whose kernels use what it lacks, unguarded."""

from __future__ import annotations

from typing import Iterator

from archlint.checks.context import Context, target_list
from archlint.judge.verdicts import gate_location
from archlint.model.findings import EvidenceKind, Finding


def check(ctx: Context) -> Iterator[Finding]:
    for result in ctx.gate_results:
        broken = [a for a in result.admitted if a.blockers]
        if not broken:
            continue
        names = tuple(a.target.name for a in broken)
        first = broken[0].blockers[0]
        said = first.chain[-1]
        construct = said.name if said.kind is EvidenceKind.CONSTRUCT else first.message
        yield ctx.finding(
            "AL105", gate_location(result.gate), targets=names, symbol=result.gate.function, evidence=first.chain,
            gate=result.gate.text, arch=target_list(names), construct=construct,
        )
