"""The text report's first screen for the targets asked for (`--target sm_120a`, or `targets` in the
config): a line per target with its counts, then the gates, one short entry each (place, function,
condition, and the one-line reason), in the order a bring-up engineer acts on them: those that could
be widened (POLICY), those shut out for a real reason (GENUINE, EMPTY), the UNKNOWN ones with what
would settle each, and the gates that admit a target where the code they guard cannot work (AL105).
The findings, with their evidence, follow it (report.text)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from archlint.knowledge.arch import sorted_targets
from archlint.model.findings import Finding, Location, Verdict
from archlint.model.gates import GateReport, Reached, TargetVerdict
from archlint.report import Report
from archlint.report.matrix import build_matrix, local_function, summary_line, unworkable
from archlint.report.textparts import Paint, arch_test_note, build_lines, capped, plural, verdict_groups, where

_GATE_TEXT = 100  # a condition longer than this is cut, with "..."


@dataclass(frozen=True)
class _Section:
    title: str
    verdicts: tuple[Verdict, ...]
    meaning: str  # what its gates have in common, for a target named `{target}`
    colour: str  # the painter's key for its title


_SECTIONS = (
    _Section("Can be widened", (Verdict.POLICY,),
             "nothing the gate guards needs what {target} lacks: widen it (AL101; `--diff` prints the fixes archlint can write)",
             "POLICY"),
    _Section("Not widenable", (Verdict.GENUINE, Verdict.EMPTY),
             "the code needs what {target} lacks (GENUINE), or its kernels would compile to nothing there (EMPTY)",
             "GENUINE"),
    _Section("Unknown", (Verdict.UNKNOWN,), "archlint could not decide; under each, what would settle it", ""),
)

# What settles an UNKNOWN, by the kind of its reason (a reason that says how to settle it is not given one).
_SETTLE = (
    ("possible blocker under a condition", "build the unit for the target with nvcc, or `--define NAME=VALUE` "
                                           "the macro the condition reads where the build sets it"),
    ("sources could not be resolved", "scan the tree that holds those sources (a build may generate them), "
                                      "or `--include-dir DIR` for a header"),
    ("evidence incomplete", "build the unit for the target with nvcc: part of its code is rendered in at run time"),
    ("no kernel of the guarded units compiles", "`--define NAME=VALUE` for the -D flag the build passes to select "
                                                "its kernels"),
    ("CuTe DSL kernels", "compile or run the CuTe DSL kernel for the target: archlint does not read CuTe DSL"),
    ("could only be read approximately", "read the gate's condition: archlint could not tell every capability it admits"),
    # last: the two builds of a target named without a suffix disagree, and nothing else is in doubt
    ("(assumes a ", "name the build the project makes, with its suffix (`--target {plain}a`, `{plain}f` or plain "
                    "`{plain}`): archlint could not read the project's flag code for it"),
)
_SETTLE_ELSE = "build the units the gate guards for the target with nvcc"


def focus_lines(report: Report, paint: Paint) -> list[str]:
    """The first screen: the targets' counts, then each section's gates."""
    matrix = build_matrix(report)
    lines = [summary_line(summary) for summary in matrix.summaries]
    lines += build_lines(report.gates)
    target = matrix.targets[0] if len(matrix.targets) == 1 else "the target"
    gates = sorted(report.gates, key=lambda g: (g.location, g.gate_id))
    fixes = _fixes(report.findings)
    for section in _SECTIONS:
        lines.extend(_section_lines(section, gates, target, len(matrix.targets) > 1, fixes, paint))
    lines.extend(_unworkable_lines(report, gates, target, len(matrix.targets) > 1, paint))
    return lines


def _section_lines(section: _Section, gates: list[GateReport], target: str, several: bool,
                   fixes: dict[Location, str], paint: Paint) -> list[str]:
    entries: list[str] = []
    count = 0
    for gate in gates:
        verdicts = [v for v in gate.verdicts if v.verdict in section.verdicts]
        if not verdicts:
            continue
        count += 1
        entries.append(gate_entry(gate))
        for number, group in enumerate(verdict_groups(verdicts, _said)):
            label = f"{group.verdict.value}: " if len(section.verdicts) > 1 else ""
            said = list(group.details) if group.verdict is Verdict.POLICY else [group.reason, *group.details]
            if number == 0 and gate.location in fixes:
                said[0] += f"; fix: {fixes[gate.location]}"
            entries.append(f"      {_targets(group.targets, several)}{label}{said[0]}")
            entries.extend(f"      {line}" for line in said[1:])
    if not count:
        return []
    title = paint(f"{section.title} on {target}" if target != "the target" else section.title, section.colour)
    return ["", f"{title}: {plural(count, 'gate')}; {section.meaning.format(target=target)}", *entries]


def gate_entry(gate: GateReport) -> str:
    """`  path:line  function  condition`: the gate, where it is, named as its module names it."""
    function = local_function(gate.function, gate.location.path) or ("<module>" if gate.location.path.endswith(".py") else "")
    named = f"{function}  " if function else ""  # a build list (CMakeLists.txt) has no enclosing function
    return f"  {where(gate.location, col=False)}  {named}{_short(gate.text)}{arch_test_note(gate)}"


def _short(text: str) -> str:
    """A condition on one line: its spaces collapsed, none inside brackets, long ones cut."""
    said = " ".join(text.split())
    said = re.sub(r"([(\[{]) ", r"\1", said)
    said = re.sub(r",? ([)\]}])", r"\1", said)
    return said if len(said) <= _GATE_TEXT else said[: _GATE_TEXT - 3] + "..."


def _targets(targets: Iterable[str], several: bool) -> str:
    return f"{', '.join(targets)}: " if several else ""


def _said(verdict: TargetVerdict) -> tuple[str, ...]:
    """What an entry says for one verdict besides its reason: for POLICY, what was checked (said
    instead of the reason); for UNKNOWN, what would settle it."""
    if verdict.verdict is Verdict.POLICY:
        return (_checked(verdict),)
    if verdict.verdict is Verdict.UNKNOWN:
        hint = settle_hint(verdict.reason, verdict.target)
        return (f"to settle: {hint}",) if hint else ()
    return ()


def _checked(verdict: TargetVerdict) -> str:
    """`checked 1 unit, 3 kernels; 4 arch-sensitive constructs, all available on the target: `a`, ...`."""
    reached = verdict.reached or Reached((), (), (), ())
    said = f"checked {plural(len(reached.units), 'unit')}, {plural(len(reached.kernels), 'kernel')}; "
    names = list(dict.fromkeys(f"`{item.hop.name}`" for item in reached.constructs))
    if names:
        said += f"{plural(len(names), 'arch-sensitive construct')}, all available on the target: {capped(names)}"
    else:
        said += "no arch-sensitive construct"
    _, lacks, rest = verdict.reason.partition(" lacks")
    extra = rest.strip().lstrip(",; ") if lacks else ""
    return said + (f" {extra}" if extra.startswith("(") else f" ({extra})" if extra else "")


def settle_hint(reason: str, target: str = "") -> str:
    """What would settle an UNKNOWN verdict for `target`; '' where its reason says it already."""
    if "settle" in reason:
        return ""
    hint = next((hint for kind, hint in _SETTLE if kind in reason), _SETTLE_ELSE)
    return hint.replace("{plain}", target.rstrip("af") or "sm_XY")


def _fixes(findings: Iterable[Finding]) -> dict[Location, str]:
    """The fixes an AL101 finding carries, in words, by the gate's location."""
    return {f.location: "; ".join(fix.description for fix in f.fixes) + " (`--diff`, `--fix`)"
            for f in findings if f.rule == "AL101" and f.fixes and not f.suppressed}


def _unworkable_lines(report: Report, gates: list[GateReport], target: str, several: bool, paint: Paint) -> list[str]:
    """The gates that admit a target where the code they guard cannot work (AL105), and why."""
    broken = unworkable(report)
    found = [(gate, broken[gate.location]) for gate in gates if gate.location in broken]
    if not found:
        return []
    title = f"Admitted, but cannot work on {target}" if target != "the target" else "Admitted, but cannot work"
    meaning = "the gate lets the target through, but the code it guards needs what the target lacks or compiles to nothing (AL105)"
    lines = ["", f"{paint(title, 'error')}: {plural(len(found), 'gate')}; {meaning}"]
    for gate, finding in found:
        lines += [gate_entry(gate), f"      {_targets(sorted_targets(finding.targets), several)}{_problem(finding)}"]
    return lines


def _problem(finding: Finding) -> str:
    """An AL105 finding's reason, without the gate it names, and where the problem is."""
    _, but, problem = finding.message.partition(", but ")
    said = problem if but else finding.message
    if finding.evidence:
        said += f" ({where(finding.evidence[-1].location, col=False)})"
    return said
