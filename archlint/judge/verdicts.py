"""Verdicts for Python gates: for each target a gate excludes, POLICY, GENUINE, EMPTY or UNKNOWN.

A false POLICY (telling someone to widen a gate that then fails to build or silently computes
nothing) is the costliest mistake, so POLICY needs positive evidence: guarded sources found,
every include inside the scanned trees resolved, no blocker, no possible blocker.
"""

from __future__ import annotations

from archlint.judge.analysis import Analysis, Hit, analyze_units
from archlint.judge.extensions import extension_hits
from archlint.judge.pinned import pinned_policy_note, pinned_specs, pinned_unit_blocker
from archlint.judge.resources import resource_refusal
from archlint.judge.view import Defines, Judging
from archlint.knowledge.arch import Target, known_ccs
from archlint.model.findings import Evidence, EvidenceKind, Location, Verdict
from archlint.model.gates import Gate, GuardedUnits, ProjectBuild, Reached, TargetVerdict, gate_location

def excluded_targets(gate: Gate, targets: tuple[Target, ...]) -> tuple[Target, ...]:
    admits = set(gate.admits)
    return tuple(t for t in targets if t.cc not in admits)


def build_target(gate: Gate, target: Target) -> tuple[Target, ...]:
    """The target(s) the gate's build would compile for, the project's own suffix first.

    A target named with its suffix is built as named. Otherwise the suffix the project's flag code
    gives the capability (its normaliser, read for the scan's toolkit) is used; where that could not
    be read, the suffix its admitted targets get is assumed (arch-specific libraries build every
    target the same way), and the plain build is judged too; `verdict_for` says which one the
    verdict assumes.
    """
    if target.suffix:
        return (target,)
    project = _project_build(gate, target.cc)
    if project is not None:
        return (Target(target.cc, project.suffix),)
    if target.cc < 90:
        return (target,)
    suffix = _project_suffix(gate, target.cc)
    if suffix in ("a", "f") and _suffix_allowed(target.cc, suffix):
        return (Target(target.cc, suffix),)
    if suffix == "":
        return (target,)
    return (Target(target.cc, "a"), target)


def _project_build(gate: Gate, cc: int) -> ProjectBuild | None:
    """How the project's normaliser builds `cc`, where it answers with a suffix nvcc accepts."""
    for build in gate.project_builds:
        if build.cc == cc and (build.suffix == "" or _suffix_allowed(cc, build.suffix)):
            return build
    return None


def build_note(gate: Gate, target: Target) -> str:
    """Why `target` (a capability the user named without a suffix) is judged as the build it is."""
    project = None if target.suffix else _project_build(gate, target.cc)
    if project is None or not (project.suffix or project.toolkits):
        return ""  # built as named, whatever the toolkit
    return project.describe()


def _project_suffix(gate: Gate, cc: int) -> str:
    by_cc = dict(gate.suffix_by_cc)
    if by_cc.get(cc, "?") != "?":
        return by_cc[cc]
    known = {s for c, s in by_cc.items() if c >= 90 and s != "?"}
    if len(known) == 1 and gate.suffix in ("?", *known):
        return "?"  # decided by verdict_for: the admitted targets' suffix first, plain too
    return gate.suffix


def _suffix_allowed(cc: int, suffix: str) -> bool:
    return cc >= 90 if suffix == "a" else cc >= 100


def judge(analysis: Analysis, units: GuardedUnits, exact: bool) -> tuple[Verdict, str, tuple[Evidence, ...]]:
    target = analysis.target
    if analysis.blockers:
        return Verdict.GENUINE, *_first(analysis.blockers)
    if analysis.empty:
        return Verdict.EMPTY, *_first(analysis.empty, " kernels")
    if analysis.arch_checks:
        return Verdict.GENUINE, *_first(analysis.arch_checks)
    missing, present = extension_hits(units.extensions, target)
    if missing:
        return Verdict.GENUINE, *_first(missing)
    pinned = pinned_unit_blocker(units, target)
    if pinned is not None:
        return Verdict.GENUINE, *pinned
    if present and not units.sources:
        return Verdict.UNKNOWN, f"{present[0].message}{_settle(present[0])}", present[0].chain
    if not units.sources:
        why = f"unresolved: {', '.join(units.unresolved[:3])}" if units.unresolved else "no CUDA source found behind it"
        return Verdict.UNKNOWN, f"guarded sources could not be resolved ({why})", ()
    if analysis.possible:
        first = analysis.possible[0]
        reason = f"possible blocker under a condition archlint cannot decide for {target}: {first.message}"
        return Verdict.UNKNOWN, reason + _settle(first), first.chain
    if analysis.unresolved:
        first = analysis.unresolved[0]
        return Verdict.UNKNOWN, f"evidence incomplete: {first.message}{_settle(first)}", first.chain
    if units.unresolved:
        return Verdict.UNKNOWN, f"some guarded sources could not be resolved: {', '.join(units.unresolved[:3])}", ()
    if not exact:
        return Verdict.UNKNOWN, "the gate's condition could only be read approximately", ()
    if present:
        return Verdict.UNKNOWN, f"{present[0].message}{_settle(present[0])}", present[0].chain
    if analysis.prebuilt:
        first = analysis.prebuilt[0]
        return Verdict.UNKNOWN, f"{first.message}{_settle(first)}", first.chain
    if units.python_kernels:
        return Verdict.UNKNOWN, f"the gate's code {units.python_kernels[-1].message}", units.python_kernels
    if analysis.library:
        message, chain = _first(analysis.library)
        return Verdict.UNKNOWN, message + _settle(analysis.library[0]), chain
    if analysis.kernels == 0 and analysis.library_calls:
        calls = ", ".join(f"`{name}`" for name in analysis.library_calls)
        return Verdict.POLICY, f"the guarded units launch no kernel of their own: their device work is library calls ({calls}), each documented for {target}", ()
    if analysis.kernels == 0:
        found, settle = analysis.no_kernel
        return Verdict.UNKNOWN, f"no kernel of the guarded units compiles for {target} as archlint reads them: {found}" + (f"; {settle}" if settle else ""), ()
    reason = f"nothing reachable from {len(units.sources)} guarded source(s) needs what {target} lacks"
    if analysis.assumed:
        first = analysis.assumed[0]
        more = f" (+{len(analysis.assumed) - 1} more)" if len(analysis.assumed) > 1 else ""
        return Verdict.POLICY, f"{reason}, with the {first.message.removeprefix('template ')}{more}", first.chain
    return Verdict.POLICY, reason, ()


def _first(hits: tuple[Hit, ...], what: str = "") -> tuple[str, tuple[Evidence, ...]]:
    """The first hit's message, with how many more there are, and its evidence."""
    more = f" (+{len(hits) - 1} more{what})" if len(hits) > 1 else ""
    return hits[0].message + more, hits[0].chain


def _settle(hit: Hit) -> str:
    return f"; {hit.settle}" if hit.settle else ""


def verdict_for(gate: Gate, units: GuardedUnits, judging: Judging, target: Target, defines: Defines,
                references: tuple[Target, ...]) -> TargetVerdict:
    """The verdict for one excluded target. With two candidate builds (suffix not readable), the
    first (arch-specific) build's verdict stands, but POLICY needs both builds to agree."""
    refusal = resource_refusal(gate, target, judging.kb)
    if refusal is not None:
        return TargetVerdict(target.name, Verdict.GENUINE, refusal[0], refusal[1], build=build_note(gate, target))
    verdicts = []
    for build in build_target(gate, target):
        view = judging.view(build, _with_arch(gate, defines, build))
        ref_views = tuple(judging.view(ref, _with_arch(gate, defines, ref)) for ref in references)
        head = (Evidence(gate_location(gate), f"gate `{gate.text}` excludes {build}", EvidenceKind.GATE),)
        analysis = analyze_units(view, units.sources, ref_views, head)
        verdict, reason, evidence = judge(analysis, units, gate.exact)
        empties = tuple(hit.chain[-1] for hit in analysis.empty)
        reached = None
        if verdict is Verdict.POLICY:
            pinned = pinned_specs(units, build)
            reason += pinned_policy_note(pinned)
            reached = _reached(analysis, units, head, tuple(unit.evidence[-1] for unit in pinned))
        verdicts.append(TargetVerdict(build.name, verdict, reason, _join(units, evidence), empties, reached,
                                      build_note(gate, target)))
    chosen = verdicts[0]
    if len(verdicts) > 1:
        other = verdicts[1]
        note = f" (assumes a {chosen.target} build; a {other.target} build would be {other.verdict.value}: {other.reason})"
        verdict = chosen.verdict
        if verdict is Verdict.POLICY and other.verdict is not Verdict.POLICY:
            verdict = Verdict.UNKNOWN
        reached = chosen.reached if verdict is Verdict.POLICY else None
        chosen = TargetVerdict(chosen.target, verdict, chosen.reason + note, chosen.evidence, chosen.empty_kernels, reached,
                               chosen.build)
    return chosen


def _reached(analysis: Analysis, units: GuardedUnits, head: tuple[Evidence, ...],
             pinned: tuple[Evidence, ...] = ()) -> Reached:
    """What the walk behind a POLICY verdict checked, and the path a finding shows: the gate, the
    Python calls to the first unit, each unit compiled, the template code it takes as read, the
    kernels and the constructs checked, and the flag lists that pin the units' builds too."""
    sources = analysis.compiled
    first = units.evidence.get(sources[0], ()) if sources else ()
    path = (*head, *(hop for hop in first if hop.kind is not EvidenceKind.GATE),
            *(Evidence(Location(source, 1), f"compiles {source}", EvidenceKind.COMPILES, source=source) for source in sources),
            *(hit.chain[-1] for hit in analysis.assumed), *analysis.kernel_hops, *(item.hop for item in analysis.checked),
            *pinned)
    return Reached(sources, analysis.headers, analysis.kernel_hops, analysis.checked, path)


def _with_arch(gate: Gate, defines: Defines, build: Target) -> Defines:
    """The gate's -D values plus the project's arch macros, set to this build's number."""
    if not gate.arch_macros:
        return defines
    return {**defines, **{name: build.cuda_arch for name in gate.arch_macros if name not in defines}}


def _join(units: GuardedUnits, evidence: tuple[Evidence, ...]) -> tuple[Evidence, ...]:
    """Prefix the gate → python call chain of the source the evidence starts from."""
    if not evidence:
        return evidence
    for hop in evidence:
        if hop.kind is EvidenceKind.COMPILES:
            prefix = units.evidence.get(hop.source, ())
            return (*prefix, *[h for h in evidence if h.kind is not EvidenceKind.GATE])
    return evidence


def reference_targets(gate: Gate) -> tuple[Target, ...]:
    """The builds the gate admits: a kernel empty on all of them too is not the gate's doing."""
    return tuple(build_target(gate, Target(cc, ""))[0] for cc in sorted(set(gate.admits)) if cc in known_ccs())
