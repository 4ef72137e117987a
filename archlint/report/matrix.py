"""The GPU support matrix the HTML and markdown reports draw: one row per gate (grouped by module,
then function), one column per target in arch order, and a summary per target.

Built from the same GateReports the JSON report writes, and the AL105 findings (a gate that admits a
target where the code it guards cannot work); both reports word a target's summary with
`summary_line`. A gate that excludes none of the targets and admits none where its code cannot work
gets no row unless the report is verbose (`-v`); the summaries count every gate.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from archlint.knowledge.arch import TargetError, parse_target
from archlint.model.findings import Finding, Location, Verdict
from archlint.model.gates import GateReport, TargetVerdict
from archlint.report import Report

ADMITTED = "admitted"  # a cell's state when the gate lets the target through
CANNOT_WORK = "cannot work"  # ... and the code it guards cannot work there (AL105)
NOT_EVALUATED = ""  # the gate has no verdict for this target (it was not evaluated for it)
VERDICTS = tuple(v.value for v in (Verdict.POLICY, Verdict.GENUINE, Verdict.EMPTY, Verdict.UNKNOWN))
_TARGET_NAME = re.compile(r"\bsm_\d{2,3}[af]?\b")


@dataclass(frozen=True)
class Cell:
    target: str
    state: str  # one of VERDICTS, ADMITTED, CANNOT_WORK or NOT_EVALUATED
    verdict: TargetVerdict | None  # the verdict behind a POLICY/GENUINE/EMPTY/UNKNOWN cell
    finding: Finding | None = None  # the AL105 finding behind a CANNOT_WORK cell


@dataclass(frozen=True)
class Row:
    gate: GateReport
    module: str  # the gate's file, root-relative
    function: str  # the function the gate is written in, without its module; '' at module level
    cells: tuple[Cell, ...]  # one per Matrix.targets, in that order

    @property
    def where(self) -> str:
        return f"{self.gate.location.path}:{self.gate.location.line}"


@dataclass(frozen=True)
class TargetSummary:
    target: str
    counts: dict[str, int]  # state -> gates in it, for VERDICTS, ADMITTED and CANNOT_WORK
    unknown_reasons: tuple[tuple[str, int], ...]  # the commonest kinds of UNKNOWN reason, commonest first
    widenable: tuple[Row, ...] = ()  # the gates whose exclusion of the target is POLICY, in row order


@dataclass(frozen=True)
class Matrix:
    targets: tuple[str, ...]  # in arch order
    rows: tuple[Row, ...]  # sorted by module, function, line; the gates listed (listed_gates)
    summaries: tuple[TargetSummary, ...]  # one per target, same order; over every gate
    unlisted: int = 0  # gates left out of `rows`: they exclude no target and admit none where they cannot work


def build_matrix(report: Report, reasons_shown: int = 3) -> Matrix:
    named = _named_targets(report.gates)
    aliases = _build_names(report.targets, named)
    targets = arch_sorted({*(aliases.get(t, t) for t in report.targets), *named})
    broken = unworkable(report)
    rows = _grouped(tuple(_row(gate, targets, broken.get(gate.location), aliases) for gate in report.gates))
    summaries = tuple(_summary(rows, index, target, reasons_shown) for index, target in enumerate(targets))
    shown = tuple(row for row in rows if report.verbose or listed(row.gate, broken))
    return Matrix(targets, shown, summaries, len(rows) - len(shown))


def _build_names(asked: Iterable[str], named: set[str]) -> dict[str, str]:
    """A target asked for without a suffix (`sm_120`) whose builds the verdicts name with one
    (`sm_120a`): one column, under the build's name."""
    builds: dict[int, set[str]] = {}
    for name in named:
        builds.setdefault(_cc(name), set()).add(name)
    aliases = {}
    for name in asked:
        found = builds.get(_cc(name), set()) - {name}
        if len(found) == 1 and name not in named:
            aliases[name] = found.pop()
    return aliases


def _cc(name: str) -> int:
    try:
        return parse_target(name).cc
    except TargetError:
        return -1


def unworkable(report: Report) -> dict[Location, Finding]:
    """The AL105 finding of each gate that has one (shown, not suppressed), by the gate's location:
    the targets it admits where the code it guards cannot work, and why."""
    return {finding.location: finding for finding in report.findings
            if finding.rule == "AL105" and not finding.suppressed}


def listed(gate: GateReport, broken: dict[Location, Finding]) -> bool:
    """Whether a report lists the gate without -v: it excludes one of the targets (it has a verdict),
    or admits one where the code it guards cannot work (AL105)."""
    return bool(gate.verdicts) or gate.location in broken


def arch_sorted(names: Iterable[str]) -> tuple[str, ...]:
    """Target names oldest architecture first (sm_80 < sm_90a < sm_100a < sm_120a < sm_121a); a name
    that is not a target goes last."""
    return tuple(sorted(set(names), key=_arch_key))


def _arch_key(name: str) -> tuple:
    try:
        target = parse_target(name)
    except TargetError:
        return (1, 0, "", name)
    return (0, target.cc, target.suffix, name)


def _named_targets(gates: Iterable[GateReport]) -> set[str]:
    """The targets the verdicts name (a build's own name: `sm_120a` for an asked `sm_120`); a gate's
    admits reach past the scan's targets (the default target of every CC it admits) and add none."""
    return {verdict.target for gate in gates for verdict in gate.verdicts}


def _row(gate: GateReport, targets: tuple[str, ...], broken: Finding | None, aliases: dict[str, str]) -> Row:
    verdicts = {verdict.target: verdict for verdict in gate.verdicts}
    admitted = {aliases.get(name, name) for name in gate.admits}
    failing = {aliases.get(name, name) for name in broken.targets} if broken is not None else set()
    cells = []
    for target in targets:
        verdict = verdicts.get(target)
        if verdict is not None:
            cells.append(Cell(target, verdict.verdict.value, verdict))
        elif target in failing:
            cells.append(Cell(target, CANNOT_WORK, None, broken))
        else:
            cells.append(Cell(target, ADMITTED if target in admitted else NOT_EVALUATED, None))
    return Row(gate, gate.location.path, local_function(gate.function, gate.location.path), tuple(cells))


def local_function(qualified: str, path: str) -> str:
    """`flashinfer.jit.comm.gen_module` written in `jit/comm.py` -> `gen_module`: what follows the
    module's own name in the qualified name. The module is found by the file's dotted path, read from
    its end, since the scan root may sit above the package or inside it."""
    if not qualified:
        return ""
    parts = qualified.split(".")
    stem = path.rsplit(".", 1)[0].split("/")
    if len(stem) > 1 and stem[-1] == "__init__":
        stem = stem[:-1]
    for end in range(len(parts) - 1):
        depth = min(end + 1, len(stem))
        if parts[end + 1 - depth:end + 1] == stem[-depth:]:
            return ".".join(parts[end + 1:])
    if stem[-1] in parts[:-1]:  # a package imported under another name than its folder's
        return ".".join(parts[parts.index(stem[-1]) + 1:])
    return qualified


def _grouped(rows: tuple[Row, ...]) -> tuple[Row, ...]:
    """By module, then by function in source order (where its first gate is), then by place."""
    first: dict[tuple[str, str], tuple[int, int]] = {}
    for row in rows:
        key, place = (row.module, row.function), (row.gate.location.line, row.gate.location.col)
        first[key] = min(first.get(key, place), place)
    return tuple(sorted(rows, key=lambda row: (row.module, first[row.module, row.function], row.function,
                                               row.gate.location, row.gate.gate_id)))


def _summary(rows: tuple[Row, ...], index: int, target: str, reasons_shown: int) -> TargetSummary:
    counts = Counter(row.cells[index].state for row in rows)
    reasons = Counter(reason_kind(cell.verdict.reason) for row in rows
                      if (cell := row.cells[index]).state == Verdict.UNKNOWN.value and cell.verdict is not None)
    ordered = sorted(reasons.items(), key=lambda item: (-item[1], item[0]))
    widenable = tuple(row for row in rows if row.cells[index].state == Verdict.POLICY.value)
    return TargetSummary(target, {state: counts[state] for state in (*VERDICTS, ADMITTED, CANNOT_WORK)},
                         tuple(ordered[:reasons_shown]), widenable)


def reason_kind(reason: str) -> str:
    """What kind of reason a verdict gives, without its particulars: the words before the first
    `:` or `(`, target names generalised (`... cannot decide for sm_80: <construct>` -> `... cannot
    decide for the target`), so that gates with the same kind of doubt count together."""
    head = re.split(r"[:(]", reason, maxsplit=1)[0].strip()
    head = _TARGET_NAME.sub("the target", head)
    return head or reason.strip()


def summary_line(summary: TargetSummary) -> str:
    """`sm_120a: 11 gates could be widened, 6 genuine, 0 empty, 38 unknown, 4 admitted, 2 admitted
    but cannot work` (plain text)."""
    counts = summary.counts
    widened = "gate could be widened" if counts["POLICY"] == 1 else "gates could be widened"
    return (f"{summary.target}: {counts['POLICY']} {widened}, {counts['GENUINE']} genuine, "
            f"{counts['EMPTY']} empty, {counts['UNKNOWN']} unknown, {counts[ADMITTED]} admitted, "
            f"{counts[CANNOT_WORK]} admitted but cannot work")
