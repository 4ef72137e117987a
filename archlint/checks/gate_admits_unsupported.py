"""AL105 gate-admits-unsupported: a gate lets a target through whose kernels use what it lacks,
unguarded, or whose kernels all compile there only to traps or empty bodies while another admitted
build compiles them with their code."""

from __future__ import annotations

from typing import Iterator

from archlint.checks.context import Context, target_list
from archlint.judge.analysis import HitKind
from archlint.model.findings import EvidenceKind, Finding
from archlint.model.gates import gate_location


def check(ctx: Context) -> Iterator[Finding]:
    for result in ctx.gate_results:
        broken = [a for a in result.admitted if a.blockers]
        if broken:
            names = tuple(a.target.name for a in broken)
            first = broken[0].blockers[0]
            said = first.chain[-1]
            construct = said.name if said.kind is EvidenceKind.CONSTRUCT else first.message
            problem = f"`{construct}` in the code it guards is not available there"
            if said.kind is EvidenceKind.IMAGES:  # a prebuilt module with no image for the target
                problem = f"the code it guards calls `{said.name}`, and {first.message}"
            elif said.kind is EvidenceKind.SMEM:
                problem = f"the code it guards asks more shared memory than it has: {first.message}"
            yield ctx.finding(
                "AL105", gate_location(result.gate), targets=names, symbol=result.gate.function, evidence=first.chain,
                gate=result.gate.text, arch=target_list(names), problem=problem,
            )
            continue
        # A build whose every kernel only traps or is empty, where another admitted build has code:
        # the gate lets a crash (or a silent no-op) through instead of saying "not supported".
        working = any(a.kernels and not a.empty for a in result.admitted)
        hollow = [a for a in result.admitted if a.empty] if working else []
        if hollow:
            names = tuple(a.target.name for a in hollow)
            first = hollow[0].empty[0]
            kernel = first.chain[-1].name
            traps = first.kind is HitKind.TRAP_KERNEL
            if len(hollow[0].empty) == 1:
                problem = f"kernel `{kernel}`, the only kernel it guards, {'only traps' if traps else 'compiles to an empty body'} there"
            else:
                problem = f"every kernel it guards only traps or is empty there (`{kernel}` and {len(hollow[0].empty) - 1} more)"
            yield ctx.finding(
                "AL105", gate_location(result.gate), targets=names, symbol=result.gate.function,
                evidence=first.chain, gate=result.gate.text, arch=target_list(names), problem=problem,
            )
