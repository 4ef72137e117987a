"""AL101 policy-gate: a gate excludes targets on which everything it guards would build and run."""

from __future__ import annotations

from typing import Iterator

from archlint.model.findings import Finding, Fix, Location, Verdict
from archlint.judge.verdicts import gate_location
from archlint.checks.context import Context, target_list


def check(ctx: Context) -> Iterator[Finding]:
    for result in ctx.gate_results:
        policy = [v for v in result.excluded if v.verdict is Verdict.POLICY]
        if not policy:
            continue
        gate = result.gate
        names = tuple(v.target for v in policy)
        fixes = _fix(gate, names)
        yield ctx.finding(
            "AL101", gate_location(gate), targets=names, symbol=gate.function, fixes=fixes,
            evidence=tuple(e for v in policy for e in v.evidence[:1]),
            gate=gate.text, arch=target_list(names), major=_addition_text(gate, names),
        )


def _additions(gate, names: tuple[str, ...]) -> list[int]:
    from archlint.knowledge.arch import parse_target

    values = set()
    for name in names:
        target = parse_target(name)
        values.add(target.major if getattr(gate, "unit", "major") == "major" else target.cc)
    return sorted(values)


def _addition_text(gate, names: tuple[str, ...]) -> str:
    return ", ".join(str(v) for v in _additions(gate, names))


def _fix(gate, names: tuple[str, ...]) -> tuple[Fix, ...]:
    literal = getattr(gate, "majors_literal", None)
    span = getattr(gate, "list_span", None)
    if literal is None or span is None:
        return ()
    widened = sorted(set(literal) | set(_additions(gate, names)))
    line, col, end_line, end_col = span
    opening, closing = getattr(gate, "list_brackets", "[]")
    replacement = opening + ", ".join(str(v) for v in widened) + closing
    location = Location(gate.path, line, col, end_line, end_col)
    return (Fix(location, replacement, f"add {_addition_text(gate, names)} to the gate's list"),)
