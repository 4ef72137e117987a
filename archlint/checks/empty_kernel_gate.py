"""AL103 empty-kernel-gate: without the gate, kernels would compile to empty bodies on those targets."""

from __future__ import annotations

from dataclasses import replace
from typing import Iterator

from archlint.checks.context import Context, gate_evidence, target_list
from archlint.model.findings import Evidence, EvidenceKind, Finding, Verdict
from archlint.model.gates import gate_location


def check(ctx: Context) -> Iterator[Finding]:
    for result in ctx.gate_results:
        # an EMPTY verdict always names its kernels; a GENUINE one may name some too
        empty = [v for v in result.excluded if v.empty_kernels]
        if not empty:
            continue
        names = tuple(v.target for v in empty)
        first = empty[0]
        # a GENUINE verdict's chain leads to its blocker: show the gate and the kernel instead
        evidence = first.evidence if first.verdict is Verdict.EMPTY else ()
        if not evidence:
            evidence = (*gate_evidence(result.gate, replace(first, evidence=())), first.empty_kernels[0])
        yield ctx.finding(
            "AL103", gate_location(result.gate), targets=names, symbol=result.gate.function, evidence=evidence,
            gate=result.gate.text, arch=target_list(names), effect=_effect(first.empty_kernels[0]),
        )


def _effect(hop: Evidence) -> str:
    """What widening the gate would build: an empty or trap-only kernel, or kernels calling a helper that traps."""
    if hop.kind is EvidenceKind.TRAP_CALL:
        return f"kernels calling `{hop.name}` would trap"
    if hop.kind is EvidenceKind.TRAP_KERNEL:
        return f"kernel `{hop.name}` would only trap"
    return f"kernel `{hop.name}` would compile to an empty body"
