"""Units that run prebuilt kernels: device code loaded at run time (`cuModuleLoadData` on a fetched
cubin), not compiled from the unit. Nothing in the scanned trees says what such kernels need, so a
unit that runs them is never POLICY on its own kernels' account. Its host code may say which GPUs
the binaries serve: a check of the SM version that throws for the others, or an arch-compatibility
predicate the unit calls. A target outside that set is GENUINE, with the check as evidence; any
other target is UNKNOWN.

A unit runs prebuilt kernels when code it can compile calls a loader (rules/kb/prebuilt.toml
`[[loader]]`), or when it includes a header of their launch interface or kernel table
(`[[host_header]]` rows with `runs_prebuilt`), found in the scanned trees or not.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass

from archlint.judge.hits import Hit, HitKind
from archlint.judge.view import Judging, TargetView
from archlint.knowledge.arch import cc_text
from archlint.knowledge.prebuilt import HostHeader, load_prebuilt
from archlint.link.cuda import ResolvedInclude
from archlint.model.cuda import ArchCheck
from archlint.model.findings import Evidence, EvidenceKind, Location

# SM versions as host code spells them (major * 10 + minor): 75 .. 121, and any later one.
_SM_RANGE = range(10, 200)
_INTEGER_RE = re.compile(r"(\d+)[uUlL]*")


@dataclass(frozen=True)
class _Marker:
    """Where a unit loads prebuilt kernels."""

    hop: Evidence
    short: str  # what it is, for a reason
    fetched: bool  # an include of a header fetched with them, not found in the scanned trees
    chain: tuple[Evidence, ...]


@dataclass(frozen=True)
class _Served:
    """A check the unit surely runs, and the SM versions it lets through (None: not all readable)."""

    check: ArchCheck
    path: str
    sms: frozenset[int] | None


IncludeChain = Callable[[str], tuple[Evidence, ...]]  # the hops from the unit to a file it includes
Reach = tuple[set[tuple[str, str]], set[tuple[str, str]], frozenset[str]]


def prebuilt_hits(view: TargetView, parents: dict[str, tuple[str, int] | None], reach: Reach,
                  include_chain: IncludeChain) -> tuple[list[Hit], list[Hit]]:
    """(excluding, unknown): the checks that keep the target from the unit's prebuilt kernels (each a
    GENUINE reason), or else one UNKNOWN hit saying where the unit loads them; ([], []) for a unit
    that runs none. `reach`: the functions compiled, those surely compiled, the names surely called."""
    reached, surely, called = reach
    markers = _markers(view, sorted(parents), reached, include_chain)
    if not markers:
        return [], []
    target = view.target
    served = _served(view, sorted(parents), surely, called)
    first = markers[0]
    excluding = [_excluding(view, item, first, include_chain(item.path)) for item in served
                 if item.sms is not None and target.cc not in item.sms]
    if excluding:
        return excluding, []
    return [], [_unknown(view, first, served)]


PrebuiltInclude = tuple[ResolvedInclude, HostHeader]


def prebuilt_includes(judging: Judging, path: str) -> tuple[PrebuiltInclude, ...]:
    """A file's includes of a header of prebuilt kernels' launch interface or kernel table, with its row."""
    knowledge = load_prebuilt()
    rows = ((resolved, knowledge.host_header(resolved.include.target)) for resolved in judging.index.resolved(path))
    return tuple((resolved, row) for resolved, row in rows if row is not None and row.runs_prebuilt)


def _markers(view: TargetView, files: list[str], reached: set[tuple[str, str]], include_chain: IncludeChain) -> list[_Marker]:
    found = []
    for path in files:
        facts = view.index.files[path]
        for resolved, row in view.judging.shared(prebuilt_includes, path):
            include = resolved.include
            if not _may_compile(view, path, include.region):
                continue
            where = "fetched with them, not in the scanned trees" if resolved.target is None else "in the scanned trees"
            message = f'`#include "{include.target}"`: {row.summary} ({where}) [{row.id}]'
            hop = Evidence(Location(path, include.line), message, EvidenceKind.PREBUILT, source=include.target)
            found.append(_Marker(hop, f'`#include "{include.target}"`', resolved.target is None, include_chain(path)))
        for loader in facts.loaders:
            if (path, loader.function) not in reached or view.truth(path, loader.region, host=True) == 0:
                continue
            message = f"`{loader.name}` in `{_short(loader.function)}` loads device code at run time"
            hop = Evidence(Location(path, loader.line, loader.col), message, EvidenceKind.PREBUILT, name=loader.name)
            found.append(_Marker(hop, message, False, include_chain(path)))
    return sorted(found, key=lambda m: (len(m.chain), m.hop.location))  # the nearest to the unit first


def _may_compile(view: TargetView, path: str, region: int) -> bool:
    return view.truth(path, region) != 0 or view.truth(path, region, host=True) != 0


def _served(view: TargetView, files: list[str], surely: set[tuple[str, str]], called: frozenset[str]) -> list[_Served]:
    """The checks and called predicates the unit surely runs, with the SMs each lets through."""
    constants: dict[str, set[int]] = {}
    for path in files:
        for constant in view.index.files[path].sm_constants:
            if view.truth(path, constant.region, host=True) != 0:
                constants.setdefault(constant.name, set()).add(constant.value)
    found = []
    for path in files:
        for check in view.index.files[path].arch_checks:
            if (path, check.function) not in surely or view.truth(path, check.region, host=True) != 1:
                continue
            if check.kind == "check" and not check.unconditional:
                continue
            if check.kind == "predicate" and check.name not in called:
                continue
            values = [_value(view, value, constants) for value in check.values]
            sms = frozenset(v for v in values if v is not None)
            readable = len(sms) == len(set(values)) and all(v in _SM_RANGE for v in sms)
            found.append(_Served(check, path, sms if readable else None))
    return found


def _value(view: TargetView, text: str, constants: dict[str, set[int]]) -> int | None:
    """An SM value as written: a literal, a constant the unit's files define once, or a macro."""
    literal = _INTEGER_RE.fullmatch(text)
    if literal:
        return int(literal.group(1))
    name = text.rsplit("::", 1)[-1]
    values = set(constants.get(name, ()))
    for binding in view.index.bindings.get(name, ()):
        number = _INTEGER_RE.fullmatch(binding.value.strip("() "))
        if binding.params is None and not binding.undef and number:
            values.add(int(number.group(1)))
    return values.pop() if len(values) == 1 else None


def _excluding(view: TargetView, item: _Served, marker: _Marker, chain: tuple[Evidence, ...]) -> Hit:
    check, target = item.check, view.target
    sms = sorted(item.sms or ())
    served = f"SM {_and(sms)} (compute capability {', '.join(cc_text(sm) for sm in sms)})"
    message = (f"the unit runs prebuilt kernels ({_marker_text(marker)}), and {_check_text(check)} lets them run only on "
               f"{served}; {target} is compute capability {cc_text(target.cc)}")
    location = Location(item.path, check.line, check.col)
    hop = Evidence(location, message, EvidenceKind.ARCH_CHECK, name=check.name)
    return Hit(HitKind.ARCH_CHECK, location, message, chain + (marker.hop, hop), True)


def _unknown(view: TargetView, marker: _Marker, served: list[_Served]) -> Hit:
    target = view.target
    head = f"the unit runs prebuilt kernels ({_marker_text(marker)}), which the scanned code does not hold"
    admitting = [item for item in served if item.sms is not None]
    unreadable = [item for item in served if item.sms is None]
    if admitting:  # the check serves the target: only the binaries could say more
        said = f"{_check_text(admitting[0].check)} lets {target} through, and what the binaries hold is not in the scanned code"
        return _prebuilt_hit(marker, f"{head}; {said}", "")
    if unreadable:
        check = unreadable[0].check
        said = f"{_check_text(check)} compares with values archlint cannot read ({', '.join(check.values[:4])})"
        return _prebuilt_hit(marker, f"{head}; {said}", "settle by scanning the folder that defines them or passing it with --include-dir")
    if marker.fetched:
        settle = "settle by scanning the headers and kernel table the JIT fetches (--include-dir), or with a check of the SM version where the kernels load"
    else:
        settle = "settle with a check of the SM version (`sm == 100 || sm == 103`) in the host code that loads them"
    return _prebuilt_hit(marker, f"{head}; no check in its host code says which GPUs they serve", settle)


def _prebuilt_hit(marker: _Marker, message: str, settle: str) -> Hit:
    return Hit(HitKind.PREBUILT, marker.hop.location, message, marker.chain + (marker.hop,), False, settle)


def _marker_text(marker: _Marker) -> str:
    location = marker.hop.location
    return f"{marker.short}, {posixpath.basename(location.path)}:{location.line}"


def _and(numbers: list[int]) -> str:
    return " and ".join(str(n) for n in numbers) if len(numbers) < 3 else ", ".join(map(str, numbers[:-1])) + f" and {numbers[-1]}"


def _check_text(check: ArchCheck) -> str:
    if check.kind == "predicate":
        return f"`{check.name}`, which the unit calls with the SM version (`{check.text}`),"
    return f"`{check.text}` in `{_short(check.function)}`"


def _short(qualname: str) -> str:
    return qualname.rsplit("::", 1)[-1]

