"""What a CUDA re-scan (engine.rescan) does about the gates linked scan-wide: the host checks'
gates (gates.host) and the units the Python gates' op calls reach (gates.ops). Their reach follows
definitions across every file, so a changed file can change gates whose include closures do not
hold it.

A change leaves them as stored, or has them derived again from the re-scan's index, as a full scan
derives them, where every gate keeps the same units (only places, evidence and layers can differ:
a check moved down its file, a definition moved, a call added inside a unit); or it needs a full
scan, which reads other files in full when the units change.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from archlint.engine.samefacts import spells_any
from archlint.engine.stateparts import read_part
from archlint.engine.store import GateMemo, OpLinking, ScanState
from archlint.gates.host import host_gates
from archlint.gates.ops import op_linked, through_ops
from archlint.model.files import SourceFile
from archlint.model.gates import HOST_KIND
from archlint.model.host import HostFacts

UNTOUCHED, DERIVED, FULL = "untouched", "derived", "full"


def host_change(fresh, state: ScanState, digests, cache) -> str:
    """FULL when a changed file's previous facts are not at hand (or were read for its directives
    only), a cold scan would now choose otherwise which host files it reads first (a helper's name
    or a word that chooses them spelled or no longer spelled), a registration changed where no op
    call is linked (one may be now), or, where op calls are linked, what they were linked from is
    not stored. DERIVED when its host facts differ, its scope-wide
    declarations differ, a definition changed whose name a host check's reach looked up (any
    definition, where op calls are linked), a definition moved that such a gate's evidence points
    into, or, for a file holding host facts or where op calls are linked, its functions' names and
    kinds differ. In a scan with neither host gates nor linked op calls only the host facts count:
    whether a check is a gate reads its arms and the helpers, no definition. UNTOUCHED otherwise."""
    sensitive = state.host_linked or any(memo.gate.kind == HOST_KIND for memo in state.memos)
    derive = False
    cited: set[str] | None = None
    for facts in fresh:
        new = facts.cuda
        if new is None or (not sensitive and new.host is None):
            continue
        path = facts.file.path
        if path in state.shallow or path not in digests:
            return FULL
        stored = cache.stored(facts.file, digests[path][1])
        old = stored.cuda if stored is not None else None
        if old is None:
            return FULL
        was, now = _placeless_host(old.host), _placeless_host(new.host)
        if _helpers(was) != _helpers(now):
            return FULL
        if not state.host_linked and (was.registrations if was else ()) != (now.registrations if now else ()):
            return FULL  # an op call may be linked now: what it was linked from is not stored
        if new.host is not None and state.host_words and _spells(facts.file, state.host_words) != (path in state.host_first):
            return FULL  # a full scan would read it in full first now, or no longer (engine.linking._host_files)
        if old.host != new.host and (state.host_linked or was != now or _holds_host_gate(state, path)):
            derive = True
        if derive or not sensitive:
            continue
        derive = _reach_changed(old, new, state)
        if derive or old.declarations.items == new.declarations.items:
            continue
        if cited is None:  # where the host checks' (and the op calls') evidence chains point
            linked = [m for m in state.memos if state.host_linked or m.gate.kind == HOST_KIND]
            cited = {hop.location.path for memo in linked for chain in memo.units.evidence.values() for hop in chain}
        derive = path in cited
    if derive and state.host_linked and read_part(state.op_linking) is None:
        return FULL
    return DERIVED if derive else UNTOUCHED


def _holds_host_gate(state: ScanState, path: str) -> bool:
    return any(memo.gate.kind == HOST_KIND and memo.gate.path == path for memo in state.memos)


def _reach_changed(old, new, state: ScanState) -> bool:
    """Whether what the host checks' and the op calls' reach reads of the file changed (other than
    definitions that only moved)."""
    was, now = old.declarations, new.declarations
    if (was.loose, was.read, was.instantiated, was.namespaces) != (now.loose, now.read, now.instantiated, now.namespaces):
        return True
    if (new.host is not None or state.host_linked) and _kinds(old) != _kinds(new):
        return True
    if was.items == now.items:
        return False
    before, after = _placeless(was.items), _placeless(now.items)
    changed = {name for item in (before - after) + (after - before) for name in item.names}
    return bool(changed and (state.host_linked or changed & state.host_names))


def derived_memos(state: ScanState, index) -> tuple[tuple[GateMemo, ...], frozenset[str]] | None:
    """The stored memos with the gates linked scan-wide derived again from `index`, as a full scan
    derives them (a memo whose gate and units are as stored is the stored one), and the names the
    host checks' reach looked up; None where a gate would be judged on other units than before,
    or a gate appears or goes (a full scan reads other files in full then)."""
    host = host_gates(index)
    if state.host_linked:
        linking = read_part(state.op_linking)
        if not isinstance(linking, OpLinking) or not op_linked(index, linking.ops):
            return None
        others = through_ops(list(linking.judged), linking.ops, index, host.pairs, linking.wholes)
    else:  # no op call is linked: the other gates' units are the stored ones
        others = [(m.gate, m.units) for m in state.memos if m.gate.kind != HOST_KIND]
    derived = others + list(host.pairs)
    if len(derived) != len(state.memos):
        return None
    out = []
    for memo, (gate, units) in zip(state.memos, derived):
        if (gate.kind, gate.path, units.sources) != (memo.gate.kind, memo.gate.path, memo.units.sources):
            return None
        out.append(memo if (gate, units) == (memo.gate, memo.units) else GateMemo(gate, units, memo.deps))
    return tuple(out), host.asked


def _placeless(items) -> Counter:
    return Counter(replace(item, start=(0, 0), end=(0, 0)) for item in items)


def _placeless_host(host: HostFacts | None) -> HostFacts | None:
    if host is None:
        return None
    checks = tuple(replace(check, line=0, col=0, end_line=0, end_col=0, arms=tuple(replace(arm, line=0) for arm in check.arms))
                   for check in host.checks)
    return HostFacts(checks, tuple(replace(helper, line=0) for helper in host.helpers),
                     tuple(replace(registration, line=0, col=0) for registration in host.registrations))


def _helpers(host: HostFacts | None) -> frozenset[str]:
    """The capability helpers' names: words that choose the host files a cold scan reads first."""
    return frozenset(helper.name for helper in host.helpers) if host is not None else frozenset()


def _spells(file: SourceFile, words: tuple[str, ...]) -> bool:
    try:
        with open(file.absolute, "rb") as handle:
            return spells_any(handle.read(), words)
    except OSError:
        return False


def _kinds(cuda) -> tuple:
    return tuple((f.name, f.kind, f.template) for f in cuda.functions)
