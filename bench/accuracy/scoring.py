"""Scoring a checked sample: archlint's verdict against the compiler's answer, the confusion matrix,
POLICY precision and recall, and the report text."""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field

from .pairs import VERDICTS, Pair

COMPILER = ("built", "arch-error", "built-empty", "inconclusive", "not-run")
# The compiler outcomes that prove each verdict right. A GENUINE blocker shows as an error, or, in
# CuTe and CUTLASS (which compile an instruction the target lacks to a CUTE_INVALID_CONTROL_PATH
# trap), as kernels that trap where an admitted build has the instruction (`built-empty`).
EXPECTED = {"POLICY": ("built",), "GENUINE": ("arch-error", "built-empty"), "EMPTY": ("built-empty",)}


@dataclass
class Metrics:
    matrix: dict = field(default_factory=dict)  # verdict -> compiler -> count
    agree: int = 0
    disagree: int = 0
    inconclusive: int = 0
    judged: int = 0  # pairs with a conclusive compiler answer and a POLICY/GENUINE/EMPTY verdict
    policy_precision: float | None = None
    policy_recall: float | None = None
    accuracy: float | None = None
    inconclusive_rate: float | None = None


def is_agreement(verdict: str, compiler: str) -> bool | None:
    """True/False when the pair counts; None when it does not (UNKNOWN, inconclusive, not run)."""
    if verdict not in EXPECTED or compiler in ("inconclusive", "not-run"):
        return None
    return compiler in EXPECTED[verdict]


def metrics(pairs: list[Pair]) -> Metrics:
    out = Metrics(matrix={v: {c: 0 for c in COMPILER} for v in VERDICTS})
    run = [p for p in pairs if p.compiler != "not-run"]
    for pair in pairs:
        out.matrix.setdefault(pair.verdict, {c: 0 for c in COMPILER})[pair.compiler] += 1
        verdict_ok = is_agreement(pair.verdict, pair.compiler)
        if verdict_ok is True:
            out.agree += 1
        elif verdict_ok is False:
            out.disagree += 1
    out.inconclusive = sum(1 for p in run if p.compiler == "inconclusive")
    out.judged = out.agree + out.disagree
    conclusive = [p for p in run if p.compiler != "inconclusive"]
    said_policy = [p for p in conclusive if p.verdict == "POLICY"]
    builds = [p for p in conclusive if p.compiler == "built"]
    if said_policy:
        out.policy_precision = sum(p.compiler == "built" for p in said_policy) / len(said_policy)
    if builds:
        out.policy_recall = sum(p.verdict == "POLICY" for p in builds) / len(builds)
    if out.judged:
        out.accuracy = out.agree / out.judged
    if run:
        out.inconclusive_rate = out.inconclusive / len(run)
    return out


def disagreements(pairs: list[Pair]) -> list[Pair]:
    return [p for p in pairs if is_agreement(p.verdict, p.compiler) is False]


# ---------------------------------------------------------------- report


DECISIVE = ("POLICY", "GENUINE", "EMPTY")


def decisive_shares(pairs: list[Pair]) -> str:
    """Per release and target, the share of (gate, target) verdicts that answer the question
    (POLICY, GENUINE or EMPTY) rather than UNKNOWN; over the whole population, not the sample."""
    by_target: dict[tuple[str, str], Counter] = {}
    for pair in pairs:
        by_target.setdefault((pair.release, pair.target), Counter())[pair.verdict] += 1
    lines = [f"{'release':<22}{'target':<10}{'decisive':>10}{'of':>6}{'share':>8}"]
    for release in sorted({release for release, _ in by_target}):
        rows = sorted((target, counts) for (r, target), counts in by_target.items() if r == release)
        total: Counter = Counter()
        for target, counts in sorted(rows, key=lambda row: _arch_order(row[0])):
            lines.append(_share_row(release, target, counts))
            total += counts
        lines.append(_share_row(release, "all", total))
    return "\n".join(lines)


def _share_row(release: str, target: str, counts: Counter) -> str:
    decisive, whole = sum(counts[v] for v in DECISIVE), sum(counts.values())
    return f"{release:<22}{target:<10}{decisive:>10}{whole:>6}{_fmt(decisive / whole if whole else None):>8}"


def _arch_order(target: str) -> tuple[int, str]:
    digits = "".join(ch for ch in target if ch.isdigit())
    return (int(digits) if digits else 0, target)


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def render(pairs: list[Pair], population: Counter | None = None) -> str:
    m = metrics(pairs)
    lines = []
    if population:
        lines.append("Population (every (gate, excluded target) verdict for the targets asked): "
                     + ", ".join(f"{k} {population[k]}" for k in VERDICTS if population[k]))
    ran = [p for p in pairs if p.compiler != "not-run"]
    lines.append(f"Sample: {len(pairs)} pairs, {len(ran)} compiled")
    lines.append("")
    header = f"{'archlint/nvcc':<16}" + "".join(f"{c:>14}" for c in COMPILER)
    lines.append(header)
    for verdict in VERDICTS:
        row = m.matrix.get(verdict, {})
        lines.append(f"{verdict:<16}" + "".join(f"{row.get(c, 0):>14}" for c in COMPILER))
    lines.append("")
    lines.append(f"verdicts checked (POLICY/GENUINE/EMPTY with a conclusive compile): {m.judged}; "
                 f"right {m.agree}, wrong {m.disagree}; accuracy {_fmt(m.accuracy)}")
    lines.append(f"POLICY precision {_fmt(m.policy_precision)} (POLICY verdicts whose units built), "
                 f"POLICY recall {_fmt(m.policy_recall)} (units that built and archlint called POLICY)")
    lines.append(f"inconclusive compiles: {m.inconclusive} of {len(ran)} ({_fmt(m.inconclusive_rate)})")
    wrong = disagreements(pairs)
    if wrong:
        lines.append("")
        lines.append("Disagreements:")
        for pair in wrong:
            lines.append(f"- [{pair.release}] {pair.gate_id} `{pair.gate_text}` on {pair.target}: "
                         f"archlint {pair.verdict}, nvcc {pair.compiler}")
            lines.append(f"    archlint: {pair.reason}")
            for hop in pair.evidence:
                lines.append(f"      {hop}")
            for unit, outcome, message in pair.unit_outcomes:
                lines.append(f"    nvcc {os.path.basename(unit)}: {outcome}: {message}")
    unknown = [p for p in pairs if p.verdict == "UNKNOWN" and p.compiler not in ("not-run", "inconclusive")]
    if unknown:
        lines.append("")
        lines.append("UNKNOWN verdicts the compiler settled:")
        for pair in unknown:
            lines.append(f"- [{pair.release}] {pair.gate_id} on {pair.target}: nvcc {pair.compiler}; archlint: {pair.reason[:200]}")
    inconclusive = [p for p in pairs if p.compiler == "inconclusive"]
    if inconclusive:
        lines.append("")
        lines.append("Inconclusive (not counted):")
        for pair in inconclusive:
            why = next((m for _, o, m in pair.unit_outcomes if o == "inconclusive"), "")
            lines.append(f"- [{pair.release}] {pair.gate_id} on {pair.target} ({pair.verdict}): {why[:220]}")
    return "\n".join(lines)

