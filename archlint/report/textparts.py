"""What the text reports share: colours, places, counts, capped lists, lines fitted to a width, and
a gate's verdicts grouped by what they say."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from archlint.knowledge.arch import arch_order
from archlint.model.findings import Location, Verdict
from archlint.model.gates import GateReport, TargetVerdict

COLOURS = {"error": "31", "warning": "33", "note": "36", "POLICY": "33", "GENUINE": "32", "EMPTY": "35"}
SHOWN = 3  # kernels, constructs, and checked hops under a finding, before "+N more"
WIDTH = 400  # no line of the report is longer: a longer one goes on below (fitted)
_ARCH_VALUE_RE = re.compile(r"(__CUDA_ARCH__ = )(\d+)")

Paint = Callable[[str, str], str]


def painter(enabled: bool) -> Paint:
    def paint(text: str, key: str) -> str:
        code = COLOURS.get(key)
        return f"\x1b[{code}m{text}\x1b[0m" if enabled and code else text

    return paint


def where(location: Location, col: bool = True) -> str:
    return f"{location.path}:{location.line}:{location.col}" if col else f"{location.path}:{location.line}"


def arch_test_note(gate: GateReport) -> str:
    """` (arch test `major == 10`, line 12)` for a gate whose own text names no architecture: the
    comparison it rests on, in its file (`line N`) or another (`path:N`); '' for any other gate."""
    test = gate.arch_test
    if test is None:
        return ""
    place = f"line {test.location.line}" if test.location.path == gate.location.path else where(test.location, col=False)
    return f" (arch test `{test.name}`, {place})"


@dataclass(frozen=True)
class Group:
    """Targets of one gate that share a verdict, a reason (up to the target's own name and
    __CUDA_ARCH__ value) and what backs it: one line in the report."""

    verdict: Verdict
    targets: tuple[str, ...]  # arch order
    reason: str
    details: tuple[str, ...]  # the evidence chain, or what a POLICY verdict checked


def verdict_groups(verdicts: Iterable[TargetVerdict],
                   details: Callable[[TargetVerdict], tuple[str, ...]]) -> list[Group]:
    """The verdicts of one gate, grouped by verdict, reason (up to the target's own name and
    __CUDA_ARCH__ values) and `details` (the lines said under the reason), targets in arch order."""
    members: dict[tuple, list[TargetVerdict]] = {}
    for verdict in sorted(verdicts, key=lambda v: arch_order(v.target)):
        template = _reason_template(verdict)
        members.setdefault((verdict.verdict, template, details(verdict)), []).append(verdict)
    return [Group(kind, tuple(v.target for v in group), _group_reason(template, group), details)
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


def capped(items: list[str]) -> str:
    more = f" (+{len(items) - SHOWN} more)" if len(items) > SHOWN else ""
    return ", ".join(items[:SHOWN]) + more


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


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def build_lines(gates) -> list[str]:
    """Once per target named without a suffix: the build it is judged as, and why."""
    builds = {(v.target, v.build) for gate in gates for v in gate.verdicts if v.build}
    return [f"{target}: {note} (--toolkit X.Y for another toolkit)"
            for target, note in sorted(builds, key=lambda b: arch_order(b[0]))]
