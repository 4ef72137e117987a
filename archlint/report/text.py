"""Human-readable report: `path:line:col: AL101 message`, evidence, then the gate verdicts. With the
targets asked for (`--target`, or `targets` in the config), the report leads with them
(`report.focus`): the gates that could be widened first."""

from __future__ import annotations

from collections import Counter

from archlint.knowledge.arch import sorted_targets
from archlint.model.findings import Evidence, EvidenceKind, Finding, Level, Location, Verdict
from archlint.model.gates import Reached, TargetVerdict
from archlint.report import Report
from archlint.report.extensions import extension_line
from archlint.report.focus import focus_lines
from archlint.report.matrix import build_matrix, summary_line
from archlint.report.textparts import (SHOWN, Paint, arch_test_note, build_lines, capped, fitted, painter, plural,
                                       verdict_groups, where)

_VERDICT_ORDER = (Verdict.POLICY, Verdict.EMPTY, Verdict.GENUINE, Verdict.UNKNOWN)
_LISTED = (EvidenceKind.KERNEL, EvidenceKind.CHECKED)


def render(report: Report) -> str:
    paint = painter(report.colour)
    findings = [line for finding in report.findings for line in _finding_lines(finding, paint)]
    if report.quiet:
        lines = findings
    elif report.targets_asked:
        lines = focus_lines(report, paint)
        if findings:
            lines += ["", "Findings", *findings]
        lines += _diagnostic_lines(report)
        if report.verbose:
            lines += _gate_lines(report, paint)
        lines += _extension_lines(report) + _summary_lines(report)
    else:
        lines = [*findings, *_diagnostic_lines(report), *_gate_lines(report, paint), *_target_lines(report),
                 *_extension_lines(report), *_summary_lines(report)]
    return "\n".join(fitted(lines)) + "\n" if lines else ""


def render_gates(report: Report) -> str:
    """`archlint gates`: the gate block (every gate) and the verdict table, nothing else."""
    lines = _gate_lines(report, painter(report.colour), every=True)[2:]  # without the blank line and heading
    return "\n".join(fitted(lines)) + "\n" if lines else "no gates found\n"


def _finding_lines(finding: Finding, paint: Paint) -> list[str]:
    tag = " [suppressed]" if finding.suppressed else ""
    head = f"{where(finding.location)}: {paint(finding.rule, finding.level.value)} {finding.message}{tag}"
    hops = tuple(dict.fromkeys(finding.evidence))  # each hop once
    if len(hops) == 1 and hops[0].kind is EvidenceKind.GATE and hops[0].location == finding.location:
        hops = ()  # the gate alone: the head line says it
    lines = [head]
    left: Counter[EvidenceKind] = Counter()  # kernels and constructs past the first few of each (AL101's list)
    seen: Counter[EvidenceKind] = Counter()
    for hop in hops:
        if hop.kind in _LISTED:
            seen[hop.kind] += 1
            if seen[hop.kind] > SHOWN:
                left[hop.kind] += 1
                continue
        lines.append(f"    {_evidence(hop)}")
    if left:
        more = [f"{left[kind]} more {noun}" for kind, noun in zip(_LISTED, ("kernels", "constructs")) if left[kind]]
        lines.append(f"    +{' and '.join(more)} checked")
    return lines


def _evidence(hop: Evidence) -> str:
    return f"{where(hop.location, col=False)}: {hop.message}"


def _diagnostic_lines(report: Report) -> list[str]:
    ordered = sorted(report.diagnostics, key=lambda d: (d.path, d.line, d.rule, d.message))
    return [f"{d.path}:{d.line}: {d.rule} {d.message}" for d in ordered]


def _gate_lines(report: Report, paint: Paint, every: bool = False) -> list[str]:
    """Each gate with a line per group of excluded targets; without `every` (or -v), only the gates
    that exclude one of the targets (one admitting a target where its code cannot work has its
    AL105 finding, and its own group when targets are asked for)."""
    gates = sorted(report.gates, key=lambda g: (g.location, g.gate_id))
    if not gates:
        return []
    shown = [gate for gate in gates if every or report.verbose or gate.verdicts]
    lines = ["", "Gates", *build_lines(gates)]
    for gate in shown:
        admits = ", ".join(sorted_targets(gate.admits)) or "nothing"
        lines.append(f"`{gate.function or '<module>'}` at {where(gate.location, col=False)}: {gate.text}"
                     f"{arch_test_note(gate)} (admits {admits})")
        for group in verdict_groups(gate.verdicts, _details):
            label = paint(group.verdict.value, group.verdict.value)
            lines.append(f"  {', '.join(group.targets)}  {label}  {group.reason}")
            lines.extend(f"      {line}" for line in group.details)
    if len(shown) < len(gates):
        left = len(gates) - len(shown)
        lines.append(f"({plural(left, 'more gate')} {'excludes' if left == 1 else 'exclude'} none of the targets; "
                     "-v lists them)")
    lines.extend(_verdict_table(gates))
    return lines


def _details(verdict: TargetVerdict) -> tuple[str, ...]:
    chain = _chain(verdict.evidence)
    lines = [chain] if chain else []
    if verdict.reached is not None:
        lines.extend(_checked_lines(verdict.reached))
    return tuple(lines)


def _chain(hops: tuple[Evidence, ...]) -> str:
    """`a.py:7 -> :11 -> b.cu:1 -> c.cuh:8 -> :9`: each place once, the file named when it changes."""
    places = list(dict.fromkeys((hop.location.path, hop.location.line) for hop in hops))
    shown, last = [], None
    for path, line in places:
        shown.append(f":{line}" if path == last else f"{path}:{line}")
        last = path
    return " -> ".join(shown)


def _checked_lines(reached: Reached) -> list[str]:
    """What a POLICY verdict checked, in two lines: the walk, then the constructs and their guards."""
    kernels = [f"`{hop.name}`" for hop in reached.kernels]
    walk = (f"checked {plural(len(reached.units), 'unit')}, {plural(len(reached.headers), 'header')} followed, "
            f"{plural(len(kernels), 'kernel')}")
    if kernels:
        walk += ": " + capped(kernels)
    return [walk, _constructs_line(reached)]


def _constructs_line(reached: Reached) -> str:
    """The first three arch-sensitive constructs checked, each at its first place, grouped by the arch
    guard they compile under and what they need, then how many more (`--format json` has them all)."""
    groups: dict[tuple[str, str, str], dict[str, list[Location]]] = {}
    for item in reached.constructs:
        places = groups.setdefault((item.guard, item.holds, item.needs), {})
        places.setdefault(item.hop.name, []).append(item.hop.location)
    total = sum(len(places) for places in groups.values())
    if not total:
        return "no arch-sensitive construct reached"
    shown, room, last = [], SHOWN, ""
    for (guard, holds, needs), places in groups.items():
        if room <= 0:
            break
        under = f"under `{guard}` ({holds}; {needs})" if guard else f"with no arch guard ({needs})"
        names = dict(list(places.items())[:room])
        said, last = _construct_places(names, last)
        shown.append(f"{said} {under}")
        room -= len(names)
    more = f" (+{total - SHOWN} more)" if total > SHOWN else ""
    return "constructs: " + ", ".join(shown) + more


def _construct_places(places: dict[str, list[Location]], last: str = "") -> tuple[str, str]:
    """`a` x.cuh:10, `b` :15 (x2): each construct at its first place, the file named when it changes;
    and the last file named."""
    shown = []
    for name, found in places.items():
        first = found[0]
        place = f":{first.line}" if first.path == last else where(first, col=False)
        times = f" (x{len(found)})" if len(found) > 1 else ""
        shown.append(f"`{name}` {place}{times}")
        last = first.path
    return ", ".join(shown), last


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


def _target_lines(report: Report) -> list[str]:
    """Per target, the gates that could be widened and the rest (the HTML matrix's lines), and how
    to see one target's first."""
    summaries = build_matrix(report).summaries if report.gates else ()
    if not summaries:
        return []
    return ["", "Per target (`--target T` leads with T's gates that could be widened)",
            *(f"  {summary_line(summary)}" for summary in summaries)]


def _extension_lines(report: Report) -> list[str]:
    """One line per prebuilt extension module: the images it carries, and those that run on each target."""
    with_code = [facts for facts in report.binaries if facts.has_device_code]
    without = len(report.binaries) - len(with_code)
    if not report.binaries:
        return []
    return ["", "Prebuilt extension modules (images read from their fatbins)",
            *(f"  {extension_line(facts, report.targets)}" for facts in with_code),
            *([f"  {plural(without, 'more module' if with_code else 'module')} without device code"] if without else [])]


def _summary_lines(report: Report) -> list[str]:
    shown = [f for f in report.findings if not f.suppressed]
    by_level = Counter(f.level for f in shown)
    parts = [f"{by_level[level]} {level.value}" for level in (Level.ERROR, Level.WARNING, Level.NOTE) if by_level[level]]
    noun = "finding" if len(shown) == 1 else "findings"
    line = f"{len(shown)} {noun}"
    if parts:
        line += f" ({', '.join(parts)})"
    line += f" in {plural(report.files_scanned, 'file')}; {plural(len(report.gates), 'gate')}"
    if report.suppressed:
        line += f"; {report.suppressed} suppressed"
    if report.baselined:
        line += f"; {report.baselined} in baseline"
    return ["", line]


def report_summary_line(report: Report) -> str:
    """The report's last line, `66 findings (9 error, 22 warning, 35 note) in 10026 files; 132 gates`,
    for the terminal when the report itself goes to a file."""
    return _summary_lines(report)[-1]
