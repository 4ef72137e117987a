"""AL101 policy-gate: a gate excludes targets on which everything it guards would build and run."""

from __future__ import annotations

from typing import Iterator

from archlint.checks.context import Context, target_list
from archlint.knowledge.arch import parse_target
from archlint.model.findings import Evidence, EvidenceKind, Finding, Fix, Location, Verdict
from archlint.model.gates import Gate, TargetVerdict, gate_location


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
            evidence=_evidence(gate, policy),
            gate=gate.text, arch=target_list(names), major=_addition_text(gate, names),
        )


def _evidence(gate: Gate, policy: list[TargetVerdict]) -> tuple[Evidence, ...]:
    """One POLICY target's path: the gate, the Python calls to the units, each unit, then every kernel
    and arch-sensitive construct checked for that target. The target with the most constructs
    checked (the first on a tie): the one whose verdict rests on the most."""
    first = max(policy, key=lambda v: len(v.reached.constructs) if v.reached is not None else -1)
    if first.reached is not None and first.reached.path:
        return first.reached.path
    return (Evidence(gate_location(gate), f"gate `{gate.text}` excludes {first.target}", EvidenceKind.GATE),)


def _additions(gate: Gate, names: tuple[str, ...]) -> list[int]:
    values = set()
    for name in names:
        target = parse_target(name)
        values.add(target.major if gate.unit == "major" else target.cc)
    return sorted(values)


def _addition_text(gate: Gate, names: tuple[str, ...]) -> str:
    return ", ".join(str(v) for v in _additions(gate, names))


def _fix(gate: Gate, names: tuple[str, ...]) -> tuple[Fix, ...]:
    """Widen the gate's literal list, written with its own brackets: `(9, 10)` stays a tuple."""
    literal, span, brackets = gate.majors_literal, gate.list_span, gate.list_brackets
    if literal is None or span is None or brackets is None:
        return ()
    widened = sorted(set(literal) | set(_additions(gate, names)))
    line, col, end_line, end_col = span
    opening, closing = brackets
    items = ", ".join(str(v) for v in widened) + ("," if opening == "(" and len(widened) == 1 else "")
    replacement = opening + items + closing
    location = Location(gate.path, line, col, end_line, end_col)
    return (Fix(location, replacement, f"add {_addition_text(gate, names)} to the gate's list"),)
