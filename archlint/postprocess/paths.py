"""Reported paths: every path a scan result holds, moved from the scan root to the report root.

The engine gives paths relative to the scan root (the folder it walked). People and tools read
them from the repository root: GitHub resolves SARIF URIs and annotations there, `git apply` takes
a diff there, and a baseline must match whichever folder was scanned. `rebase` prefixes each path
with the scan root's place under the report root.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

from archlint.model.findings import Diagnostic, Evidence, Finding, Fix, Location
from archlint.model.gates import GateReport, Reached, TargetVerdict
from archlint.model.scan import ScanResult


def scan_prefix(scan_root: str | Path, report_root: str | Path) -> str:
    """The scan root relative to the report root, posix, '' when they are the same folder.
    Raises ValueError when the scan root is not inside the report root."""
    relative = Path(os.path.realpath(scan_root)).relative_to(os.path.realpath(report_root)).as_posix()
    return "" if relative == "." else relative


def rebase(result: ScanResult, report_root: str | Path) -> ScanResult:
    """The result with every path relative to `report_root` (a folder at or above its root)."""
    prefix = scan_prefix(result.root, report_root)
    if not prefix:
        return result
    move = _Mover(prefix)
    return replace(
        result,
        root=str(Path(os.path.realpath(report_root))),
        findings=tuple(move.finding(f) for f in result.findings),
        diagnostics=tuple(move.diagnostic(d) for d in result.diagnostics),
        gates=tuple(move.gate(g) for g in result.gates),
        suppressions=tuple((move.path(path), items) for path, items in result.suppressions),
        binaries=tuple(replace(binary, path=move.path(binary.path)) for binary in result.binaries),
    )


class _Mover:
    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        # the gates' evidence chains repeat one another, as the same objects (model.records.shared):
        # each location is moved once, and each hop once per set of paths to move in its message,
        # found by identity (the entries keep both alive)
        self._locations: dict[Location, Location] = {}
        self._movable: dict[tuple[str, ...], tuple[str, ...]] = {}
        self._hops: dict[tuple[int, int], tuple[Evidence, tuple[str, ...], Evidence]] = {}

    def path(self, path: str) -> str:
        if path == ".":
            return self.prefix
        if not path or os.path.isabs(path):  # none, or one the engine could not place under the root
            return path
        return f"{self.prefix}/{path}"

    def location(self, location: Location) -> Location:
        moved = self._locations.get(location)
        if moved is None:
            moved = self._locations[location] = replace(location, path=self.path(location.path))
        return moved

    def text(self, message: str, paths: Iterable[str]) -> str:
        """A message with the root-relative paths it names (`builds X`, `(X:557)`, `X carries ...`)
        moved too, where a path stands on its own: not the tail of a longer one, nor code or an include
        quoted as written (`x.h`, "x.h", <x.h>: a launcher's file name, an include's text)."""
        return self._moved(message, _movable(paths))

    def _moved(self, message: str, movable: tuple[str, ...]) -> str:
        """The message with `movable` (paths, longest first) moved where they stand on their own."""
        for path in movable:
            if path in message:
                message = _standing_replaced(message, path, self.path(path))
        return message

    def hop(self, hop: Evidence, chain: Iterable[str] = ()) -> Evidence:
        """The hop moved, with the paths its message names among its own and its chain's (`chain`)."""
        return self._hop(hop, self._interned(_movable((hop.source, hop.location.path, *chain))))

    def _hop(self, hop: Evidence, movable: tuple[str, ...]) -> Evidence:
        key = (id(hop), id(movable))
        known = self._hops.get(key)
        if known is not None:
            return known[2]
        message = self._moved(hop.message, movable)
        moved = replace(hop, location=self.location(hop.location), message=message, source=self.path(hop.source))
        self._hops[key] = (hop, movable, moved)
        return moved

    def hops(self, hops: tuple[Evidence, ...]) -> tuple[Evidence, ...]:
        # every hop's own paths are among its chain's: the paths to move are the chain's, for each hop
        movable = self._interned(_movable({p for hop in hops for p in (hop.source, hop.location.path)}))
        return tuple(self._hop(hop, movable) for hop in hops)

    def _interned(self, movable: tuple[str, ...]) -> tuple[str, ...]:
        return self._movable.setdefault(movable, movable)

    def finding(self, finding: Finding) -> Finding:
        fixes = tuple(Fix(self.location(fix.location), fix.replacement, fix.description) for fix in finding.fixes)
        message = self.text(finding.message, touched_paths(finding))
        return replace(finding, location=self.location(finding.location), evidence=self.hops(finding.evidence), fixes=fixes,
                       message=message)

    def diagnostic(self, diagnostic: Diagnostic) -> Diagnostic:
        return replace(diagnostic, path=self.path(diagnostic.path))

    def gate(self, gate: GateReport) -> GateReport:
        return replace(
            gate,
            gate_id=self.path(gate.gate_id),  # `path:line:col`: the HTML's anchors, the JSON's `id`
            location=self.location(gate.location),
            sources=tuple(self.path(p) for p in gate.sources),
            verdicts=tuple(self.verdict(v) for v in gate.verdicts),
            arch_test=self.hop(gate.arch_test) if gate.arch_test is not None else None,
        )

    def verdict(self, verdict: TargetVerdict) -> TargetVerdict:
        reached = verdict.reached
        if reached is not None:
            reached = Reached(
                units=tuple(self.path(p) for p in reached.units),
                headers=tuple(self.path(p) for p in reached.headers),
                kernels=self.hops(reached.kernels),
                constructs=tuple(replace(c, hop=self.hop(c.hop)) for c in reached.constructs),
                path=self.hops(reached.path),
            )
        walked = verdict.reached.path if verdict.reached is not None else ()
        named = {p for hop in (*verdict.evidence, *verdict.empty_kernels, *walked) for p in (hop.source, hop.location.path)}
        return replace(verdict, evidence=self.hops(verdict.evidence), empty_kernels=self.hops(verdict.empty_kernels),
                       reached=reached, reason=self.text(verdict.reason, named))


def _movable(paths: Iterable[str]) -> tuple[str, ...]:
    """The root-relative paths among `paths` (each once), longest first: a longer path is moved
    before a shorter one that is its tail."""
    return tuple(sorted({p for p in paths if p and p != "." and not os.path.isabs(p)}, key=len, reverse=True))


_NOT_BEFORE = "./`'\"<-"  # nor a word character: the tail of a longer path, or quoted code or an include
_NOT_AFTER = "/`'\">-"  # nor a word character, nor a dot and one: a longer name, or quoted


def _standing_replaced(message: str, path: str, moved: str) -> str:
    r"""`message` with `path` replaced by `moved` wherever it stands on its own (see _Mover.text):
    what `re.sub(r"(?<![\w./`'\"<-])PATH(?![\w/`'\">-]|\.\w)", moved, message)` gives, without
    compiling a pattern for every path of a scan."""
    parts: list[str] = []
    start, end = 0, len(message)
    found = message.find(path)
    while found >= 0:
        after = found + len(path)
        if _stands(message, found, after, end):
            parts += (message[start:found], moved)
            start = after
            found = message.find(path, after)
        else:
            found = message.find(path, found + 1)
    return "".join(parts) + message[start:] if parts else message


def _stands(message: str, found: int, after: int, end: int) -> bool:
    if found > 0:
        before = message[found - 1]
        if before in _NOT_BEFORE or before.isalnum() or before == "_":
            return False
    if after < end:
        following = message[after]
        if following in _NOT_AFTER or following.isalnum() or following == "_":
            return False
        if following == "." and after + 1 < end and (message[after + 1].isalnum() or message[after + 1] == "_"):
            return False
    return True


def touched_paths(finding: Finding) -> set[str]:
    """Every file a finding's location or evidence chain runs through."""
    return {finding.location.path, *(hop.location.path for hop in finding.evidence),
            *(hop.source for hop in finding.evidence if hop.source)}


def gate_paths(gate: GateReport) -> set[str]:
    """Every file a gate's verdicts rest on: the gate, its units, and each verdict's chain and walk."""
    paths = {gate.location.path, *gate.sources}
    for verdict in gate.verdicts:
        hops = [*verdict.evidence, *verdict.empty_kernels]
        if verdict.reached is not None:
            reached = verdict.reached
            paths.update(reached.units, reached.headers)
            hops += [*reached.kernels, *reached.path, *(c.hop for c in reached.constructs)]
        paths.update(hop.location.path for hop in hops)
        paths.update(hop.source for hop in hops if hop.source)
    return paths

