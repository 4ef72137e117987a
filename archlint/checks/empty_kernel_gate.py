"""AL103 empty-kernel-gate: without the gate, kernels would compile to empty bodies on those targets."""

from __future__ import annotations

import re
from typing import Iterator

from archlint.model.findings import Finding, Verdict
from archlint.judge.verdicts import gate_location
from archlint.checks.context import Context, target_list

_KERNEL_RE = re.compile(r"kernel `([^`]+)`")
_TRAPPING_CALL_RE = re.compile(r"^`([^`]+)` \(line \d+\) traps for")


def check(ctx: Context) -> Iterator[Finding]:
    for result in ctx.gate_results:
        empty = [v for v in result.excluded if v.verdict is Verdict.EMPTY or v.empty_kernels]
        if not empty:
            continue
        names = tuple(v.target for v in empty)
        first = empty[0]
        message = first.empty_kernels[0] if first.empty_kernels else first.reason
        evidence = first.evidence if first.verdict is Verdict.EMPTY else ()
        yield ctx.finding(
            "AL103", gate_location(result.gate), targets=names, symbol=result.gate.function, evidence=evidence,
            gate=result.gate.text, arch=target_list(names), effect=_effect(message),
        )


def _effect(message: str) -> str:
    """What widening the gate would build: an empty or trap-only kernel, or kernels calling a helper that traps."""
    call = _TRAPPING_CALL_RE.search(message)
    if call:
        return f"kernels calling `{call.group(1)}` would trap"
    kernel = _KERNEL_RE.search(message)
    name = kernel.group(1) if kernel else "?"
    return f"kernel `{name}` would only trap" if "only traps" in message else f"kernel `{name}` would compile to an empty body"
