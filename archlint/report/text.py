"""Human-readable report: `path:line:col: AL101 message`, evidence, then the gate verdicts."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from archlint.knowledge.arch import arch_order, sorted_targets
from archlint.model.findings import Evidence, EvidenceKind, Finding, Level, Location, Verdict
from archlint.model.gates import GateReport, Reached, TargetVerdict
from archlint.report import Report

_COLOURS = {"error": "31", "warning": "33", "note": "36", "POLICY": "33", "GENUINE": "32", "EMPTY": "35"}
_VERDICT_ORDER = (Verdict.POLICY, Verdict.EMPTY, Verdict.GENUINE, Verdict.UNKNOWN)
_SHOWN = 3  # kernels, constructs, and checked hops under a finding, before "+N more"
WIDTH = 400  # no line of the report is longer: a longer one goes on below (fitted)
_LISTED = (EvidenceKind.KERNEL, EvidenceKind.CHECKED)
_ARCH_VALUE_RE = re.compile(r"(__CUDA_ARCH__ = )(\d+)")


def render(report: Report) -> str:
    paint = _painter(report.colour)
    lines: list[str] = []
    for finding in report.findings:
        lines.extend(_finding_lines(finding, paint))
    if not report.quiet:
        lines.extend(_diagnostic_lines(report))
        lines.extend(_gate_lines(report, paint))
        lines.extend(_summary_lines(report))
    return "\n".join(fitted(lines)) + "\n" if lines else ""


def render_gates(report: Report) -> str:
    """`archlint gates`: the gate block and the verdict table, nothing else."""
    lines = _gate_lines(report, _painter(report.colour))[2:]  # without the blank line and heading
    return "\n".join(fitted(lines)) + "\n" if lines else "no gates found\n"


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
    hops = tuple(dict.fromkeys(finding.evidence))  # each hop once
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
        admits = ", ".join(sorted_targets(gate.admits)) or "nothing"
        lines.append(f"`{gate.function or '<module>'}` at {_where(gate.location, col=False)}: {gate.text}"
                     f"{arch_test_note(gate)} (admits {admits})")
        for group in _verdict_groups(gate.verdicts):
            label = paint(group.verdict.value, group.verdict.value)
            lines.append(f"  {', '.join(group.targets)}  {label}  {group.reason}")
            lines.extend(f"      {line}" for line in group.details)
    lines.extend(_verdict_table(gates))
    return lines


def arch_test_note(gate: GateReport) -> str:
    """` (arch test `major == 10`, line 12)` for a gate whose own text names no architecture: the
    comparison it rests on, in its file (`line N`) or another (`path:N`); '' for any other gate."""
    test = gate.arch_test
    if test is None:
        return ""
    place = f"line {test.location.line}" if test.location.path == gate.location.path else _where(test.location, col=False)
    return f" (arch test `{test.name}`, {place})"


@dataclass(frozen=True)
class _Group:
    """Targets of one gate that share a verdict, a reason (up to the target's own name and
    __CUDA_ARCH__ value) and what backs it: one line in the report."""

    verdict: Verdict
    targets: tuple[str, ...]  # arch order
    reason: str
    details: tuple[str, ...]  # the evidence chain, or what a POLICY verdict checked


def _verdict_groups(verdicts: Iterable[TargetVerdict]) -> list[_Group]:
    members: dict[tuple, list[TargetVerdict]] = {}
    for verdict in sorted(verdicts, key=lambda v: arch_order(v.target)):
        template = _reason_template(verdict)
        members.setdefault((verdict.verdict, template, _details(verdict)), []).append(verdict)
    return [_Group(kind, tuple(v.target for v in group), _group_reason(template, group), details)
            for (kind, template, details), group in members.items()]


def _reason_template(verdict: TargetVerdict) -> str:
    said = re.sub(rf"(?<![\w.]){re.escape(verdict.target)}(?!\w)", "\0T", verdict.reason)
    return _ARCH_VALUE_RE.sub(r"\1\0A", said)


def _group_reason(template: str, group: list[TargetVerdict]) -> str:
    """The shared reason: the target's name said once as 'each target', the __CUDA_ARCH__ values
    listed side by side."""
    if len(group) == 1:
        return group[0].reason
    values = [[match.group(2) for match in _ARCH_VALUE_RE.finditer(v.reason)] for v in group]
    slots = iter(", ".join(dict.fromkeys(column)) for column in zip(*values))
    filled = re.sub("\0A", lambda _: next(slots, "?"), template)
    return filled.replace("\0T", "each target")


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
    walk = (f"checked {_plural(len(reached.units), 'unit')}, {_plural(len(reached.headers), 'header')} followed, "
            f"{_plural(len(kernels), 'kernel')}")
    if kernels:
        walk += ": " + _capped(kernels)
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
    shown, room, last = [], _SHOWN, ""
    for (guard, holds, needs), places in groups.items():
        if room <= 0:
            break
        under = f"under `{guard}` ({holds}; {needs})" if guard else f"with no arch guard ({needs})"
        names = dict(list(places.items())[:room])
        said, last = _construct_places(names, last)
        shown.append(f"{said} {under}")
        room -= len(names)
    more = f" (+{total - _SHOWN} more)" if total > _SHOWN else ""
    return "constructs: " + ", ".join(shown) + more


def _construct_places(places: dict[str, list[Location]], last: str = "") -> tuple[str, str]:
    """`a` x.cuh:10, `b` :15 (x2): each construct at its first place, the file named when it changes;
    and the last file named."""
    shown = []
    for name, where in places.items():
        first = where[0]
        place = f":{first.line}" if first.path == last else _where(first, col=False)
        times = f" (x{len(where)})" if len(where) > 1 else ""
        shown.append(f"`{name}` {place}{times}")
        last = first.path
    return ", ".join(shown), last


def _capped(items: list[str]) -> str:
    more = f" (+{len(items) - _SHOWN} more)" if len(items) > _SHOWN else ""
    return ", ".join(items[:_SHOWN]) + more


def fitted(lines: Iterable[str], width: int = WIDTH) -> list[str]:
    """Each line at most `width` characters: a longer one is broken before the last ` -> ` (an
    evidence chain), or after the last `; `, `, ` or space that fits, and goes on below, indented
    six more than the line itself. Nothing is cut."""
    out: list[str] = []
    for line in lines:
        indent = " " * (len(line) - len(line.lstrip(" ")) + 6)
        while len(line) > width:
            cut = _break_at(line, width, len(indent))
            if cut <= 0:
                break
            out.append(line[:cut].rstrip())
            line = indent + line[cut:].lstrip()
        out.append(line)
    return out


def _break_at(line: str, width: int, floor: int) -> int:
    """Where to break a line that is too long: before ` -> `, else after `; ` or `, `, else at a
    space, the first of these found in the second half of `width`; else the latest found past
    `floor`; -1 for none."""
    found = []
    for mark, keep in ((" -> ", 0), ("; ", 1), (", ", 1), (" ", 0)):
        at = line.rfind(mark, floor + 1, width)
        if at >= width // 2:
            return at + keep
        if at > floor:
            found.append(at + keep)
    return max(found, default=-1)


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
