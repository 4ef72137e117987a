"""Human-readable report: `path:line:col: AL101 message`, evidence, then the gate verdicts."""

from __future__ import annotations

from collections import Counter

from archlint.model.findings import Evidence, EvidenceKind, Finding, Level, Location, Verdict
from archlint.model.gates import Reached
from archlint.report import Report

_COLOURS = {"error": "31", "warning": "33", "note": "36", "POLICY": "33", "GENUINE": "32", "EMPTY": "35"}
_VERDICT_ORDER = (Verdict.POLICY, Verdict.EMPTY, Verdict.GENUINE, Verdict.UNKNOWN)
_SHOWN = 3  # kernels, constructs, and checked hops under a finding, before "+N more"
_LISTED = (EvidenceKind.KERNEL, EvidenceKind.CHECKED)


def render(report: Report) -> str:
    paint = _painter(report.colour)
    lines: list[str] = []
    for finding in report.findings:
        lines.extend(_finding_lines(finding, paint))
    if not report.quiet:
        lines.extend(_diagnostic_lines(report))
        lines.extend(_gate_lines(report, paint))
        lines.extend(_summary_lines(report))
    return "\n".join(lines) + "\n" if lines else ""


def _painter(enabled: bool):
    def paint(text: str, key: str) -> str:
        code = _COLOURS.get(key)
        return f"\x1b[{code}m{text}\x1b[0m" if enabled and code else text

    return paint


def _where(location: Location, col: bool = True) -> str:
    return f"{location.path}:{location.line}:{location.col}" if col else f"{location.path}:{location.line}"


def _finding_lines(finding: Finding, paint) -> list[str]:
    tag = " [suppressed]" if finding.suppressed else ""
    head = f"{_where(finding.location)}: {paint(finding.rule, finding.level.value)} {finding.message}{tag}"
    hops = finding.evidence
    if len(hops) == 1 and hops[0].kind is EvidenceKind.GATE and hops[0].location == finding.location:
        hops = ()  # the gate alone: the head line says it
    lines = [head]
    left: Counter[EvidenceKind] = Counter()  # kernels and constructs past the first few of each (AL101's list)
    seen: Counter[EvidenceKind] = Counter()
    for hop in hops:
        if hop.kind in _LISTED:
            seen[hop.kind] += 1
            if seen[hop.kind] > _SHOWN:
                left[hop.kind] += 1
                continue
        lines.append(f"    {_evidence(hop)}")
    if left:
        more = [f"{left[kind]} more {noun}" for kind, noun in zip(_LISTED, ("kernels", "constructs")) if left[kind]]
        lines.append(f"    +{' and '.join(more)} checked")
    return lines


def _evidence(hop: Evidence) -> str:
    return f"{_where(hop.location, col=False)}: {hop.message}"


def _diagnostic_lines(report: Report) -> list[str]:
    ordered = sorted(report.diagnostics, key=lambda d: (d.path, d.line, d.rule, d.message))
    return [f"{d.path}:{d.line}: {d.rule} {d.message}" for d in ordered]


def _gate_lines(report: Report, paint) -> list[str]:
    gates = sorted(report.gates, key=lambda g: (g.location, g.gate_id))
    if not gates:
        return []
    lines = ["", "Gates"]
    for gate in gates:
        admits = ", ".join(gate.admits) or "nothing"
        lines.append(f"{_where(gate.location)}: {gate.text} (admits {admits})")
        for verdict in sorted(gate.verdicts, key=lambda v: v.target):
            chain = " -> ".join(_where(hop.location, col=False) for hop in verdict.evidence)
            label = paint(f"{verdict.verdict.value:<8}", verdict.verdict.value)
            lines.append(f"  {verdict.target:<9} {label} {verdict.reason}")
            if chain:
                lines.append(f"            {chain}")
            if verdict.reached is not None:
                lines.extend(f"            {line}" for line in _checked_lines(verdict.reached))
    lines.extend(_verdict_table(gates))
    return lines


def _checked_lines(reached: Reached) -> list[str]:
    """What a POLICY verdict checked, in two lines: the walk, then the constructs and their guards."""
    kernels = [f"`{hop.name}`" for hop in reached.kernels]
    walk = (f"checked {_plural(len(reached.units), 'unit')}, {_plural(len(reached.headers), 'header')} followed, "
            f"{_plural(len(kernels), 'kernel')}")
    if kernels:
        walk += ": " + _capped(kernels)
    groups: dict[tuple[str, str, str, str], list[Location]] = {}
    for item in reached.constructs:
        groups.setdefault((item.hop.name, item.guard, item.holds, item.needs), []).append(item.hop.location)
    constructs = []
    for (name, guard, holds, needs), places in groups.items():
        times = f" (x{len(places)})" if len(places) > 1 else ""
        under = f"under `{guard}` ({holds}; {needs})" if guard else f"with no arch guard ({needs})"
        constructs.append(f"`{name}` {_where(places[0], col=False)}{times} {under}")
    said = "constructs: " + _capped(constructs) if constructs else "no arch-sensitive construct reached"
    return [walk, said]


def _capped(items: list[str]) -> str:
    more = f" (+{len(items) - _SHOWN} more)" if len(items) > _SHOWN else ""
    return ", ".join(items[:_SHOWN]) + more


def _verdict_table(gates) -> list[str]:
    gate_counts: Counter[Verdict] = Counter()
    pair_counts: Counter[Verdict] = Counter()
    for gate in gates:
        kinds = {verdict.verdict for verdict in gate.verdicts}
        gate_counts.update(kinds)
        pair_counts.update(verdict.verdict for verdict in gate.verdicts)
    lines = ["", f"{'verdict':<9} {'gates':>5} {'targets':>7}"]
    for kind in _VERDICT_ORDER:
        lines.append(f"{kind.value:<9} {gate_counts[kind]:>5} {pair_counts[kind]:>7}")
    return lines


def _summary_lines(report: Report) -> list[str]:
    shown = [f for f in report.findings if not f.suppressed]
    by_level = Counter(f.level for f in shown)
    parts = [f"{by_level[level]} {level.value}" for level in (Level.ERROR, Level.WARNING, Level.NOTE) if by_level[level]]
    noun = "finding" if len(shown) == 1 else "findings"
    line = f"{len(shown)} {noun}"
    if parts:
        line += f" ({', '.join(parts)})"
    line += f" in {_plural(report.files_scanned, 'file')}; {_plural(len(report.gates), 'gate')}"
    if report.suppressed:
        line += f"; {report.suppressed} suppressed"
    if report.baselined:
        line += f"; {report.baselined} in baseline"
    return ["", line]


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"
