"""Verdicts for Python gates: for each target a gate excludes, POLICY, GENUINE, EMPTY or UNKNOWN.

A false POLICY (telling someone to widen a gate that then fails to build or silently computes
nothing) is the costliest mistake, so POLICY needs positive evidence: guarded sources found,
every include inside the scanned trees resolved, no blocker, no possible blocker.
"""

from __future__ import annotations

from collections import deque

from archlint.gates.detect import flag_lists_of
from archlint.judge.analysis import Analysis, Defines, Hit, Judging, analyze_units
from archlint.knowledge.arch import Target, known_ccs
from archlint.knowledge.languages import HEADER_SUFFIXES
from archlint.link.paths import written_name
from archlint.link.python import PyIndex
from archlint.model.findings import Evidence, EvidenceKind, Location, Verdict
from archlint.model.gates import Gate, GuardedUnits, Reached, TargetVerdict
from archlint.model.python import FlagList, ResolvedSource

_MAX_CALL_DEPTH = 8
# A function called by this many source-naming functions is build machinery shared by all of them.
_MACHINERY_CALLERS = 5


def gate_location(gate: Gate) -> Location:
    return Location(gate.path, gate.line, gate.col, gate.end_line, gate.end_col)


def guarded_units(pyindex: PyIndex, gate: Gate) -> GuardedUnits:
    """The CUDA sources a gate guards: the gate's own JIT spec, or what its guarded functions build."""
    sources: dict[str, tuple[Evidence, ...]] = {}
    unresolved: list[str] = []
    head: tuple[Evidence, ...] = (Evidence(gate_location(gate), f"gate `{gate.text}`", EvidenceKind.GATE),)
    for ref in gate.resolved_sources:
        _add_source(ref, head, gate.path, sources, unresolved)
    functions = list(gate.guards)
    seen = set(functions)
    queue = deque((name, head, 0, _is_machinery(pyindex, name)) for name in functions)
    module_paths = {module: path for path, module in pyindex.module_of_path.items()}
    specs: list[list[FlagList]] = []
    python_kernels: tuple[Evidence, ...] = ()
    while queue:
        name, chain, depth, machinery = queue.popleft()
        function = pyindex.functions.get(name)
        if function is not None and depth <= 1 and not python_kernels:
            python_kernels = _python_kernels(pyindex, name, function, chain, _module_path(module_paths, name))
        lists = flag_lists_of(pyindex, "", name) if function is not None and not machinery else []
        if lists:
            specs.append(lists)
        hop, path = chain, _module_path(module_paths, name)
        if function is not None and name != gate.function:
            hop = chain + (Evidence(Location(path, function.span.line), f"calls `{name}`", EvidenceKind.CALL, name=name),)
        for ref in pyindex.sources(name):
            if machinery and not ref.path:
                continue  # a file the shared build code names for every spec, not one this gate builds
            _add_source(ref, hop, path, sources, unresolved)
        if depth >= _MAX_CALL_DEPTH:
            continue
        for callee in pyindex.callees(name):
            if callee not in seen:
                seen.add(callee)
                queue.append((callee, hop, depth + 1, machinery or _is_machinery(pyindex, callee)))
    # Flags of one spec describe its units; of several, none of them alone describes all the units.
    spec = specs[0] if len(specs) == 1 else []
    return GuardedUnits(tuple(sorted(sources)), tuple(sorted(set(unresolved))), sources,
                        tuple(define for flags in spec for define in flags.defines),
                        tuple(flag for flags in spec for flag in flags.versioned_defines), python_kernels)


_DSL_MODULES = ("cutlass.cute",)  # CuTe DSL: kernels written in Python, compiled at run time


def _python_kernels(pyindex: PyIndex, name: str, function, chain: tuple[Evidence, ...], path: str) -> tuple[Evidence, ...]:
    """The hops to a function the gate's code runs (itself, or one it calls) whose module imports
    CuTe DSL: it compiles device code from Python, which archlint does not read."""
    module = pyindex.module_of_path.get(path, "")
    facts = pyindex.modules.get(module) if module else None
    if facts is None:
        return ()
    for imp in facts.imports:
        names = (imp.module, *(f"{imp.module}.{n}" for n in imp.names))
        if imp.level == 0 and any(n == m or n.startswith(m + ".") for n in names for m in _DSL_MODULES):
            message = (f"runs `{name.rsplit('.', 1)[-1]}`, whose module imports `{_DSL_MODULES[0]}` (line {imp.line}): "
                       "CuTe DSL kernels written in Python, which archlint does not read")
            return chain + (Evidence(Location(path, function.span.line), message, EvidenceKind.CALL, name=name),)
    return ()


def _is_machinery(pyindex: PyIndex, qualname: str) -> bool:
    """Shared JIT build code (SGLang's `load_jit`, FlashInfer's `gen_jit_spec`): a function that many
    functions naming their own sources call. What it and its callees name without resolving
    (a generated `compatible_wrapper.h` for another platform's compiler) belongs to no one gate."""
    spec_callers = sum(1 for caller in pyindex.callers(qualname) if pyindex.sources(caller))
    return spec_callers >= _MACHINERY_CALLERS


def _module_path(module_paths: dict[str, str], qualname: str) -> str:
    """The file defining a python function, from the longest module prefix of its qualname."""
    parts = qualname.split(".")
    for end in range(len(parts) - 1, 0, -1):
        module = ".".join(parts[:end])
        if module in module_paths:
            return module_paths[module]
    return ""


def _add_source(resolved: ResolvedSource, chain: tuple[Evidence, ...], where: str,
                sources: dict[str, tuple[Evidence, ...]], unresolved: list[str]) -> None:
    if resolved.path:
        what = f"`{resolved.ref.text}`, {resolved.reason}" if resolved.how == "generated" else resolved.path
        location = Location(where, resolved.ref.line, resolved.ref.col)
        hop = Evidence(location, f"builds {what}", EvidenceKind.BUILDS, source=resolved.path)
        sources.setdefault(resolved.path, chain + (hop,))
    elif not written_name(resolved.ref).endswith(HEADER_SUFFIXES):
        # A header a Python build names but the scan cannot find (an artifact it downloads, a marker
        # of an include folder) is no unit the build compiles: what it holds matters only where an
        # `#include` takes it in, and that include is judged on the CUDA side.
        unresolved.append(resolved.ref.text)


def excluded_targets(gate: Gate, targets: tuple[Target, ...]) -> tuple[Target, ...]:
    admits = set(gate.admits)
    return tuple(t for t in targets if t.cc not in admits)


def build_target(gate: Gate, target: Target) -> tuple[Target, ...]:
    """The target(s) the gate's build would compile for, the project's own suffix first.

    Where the project's flag code could not be read for this target, the suffix its admitted
    targets get is assumed (arch-specific libraries build every target the same way), and the
    plain build is judged too; `verdict_for` says which one the verdict assumes.
    """
    if target.suffix or target.cc < 90:
        return (target,)
    suffix = _project_suffix(gate, target.cc)
    if suffix in ("a", "f") and _suffix_allowed(target.cc, suffix):
        return (Target(target.cc, suffix),)
    if suffix == "":
        return (target,)
    return (Target(target.cc, "a"), target)


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
    if analysis.prebuilt:
        first = analysis.prebuilt[0]
        return Verdict.UNKNOWN, f"{first.message}{_settle(first)}", first.chain
    if units.python_kernels:
        return Verdict.UNKNOWN, f"the gate's code {units.python_kernels[-1].message}", units.python_kernels
    if analysis.kernels == 0:
        return Verdict.UNKNOWN, f"no kernel of the guarded units compiles for {target} as archlint reads them (a -D flag it cannot read may select them)", ()
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
    verdicts = []
    for build in build_target(gate, target):
        view = judging.view(build, _with_arch(gate, defines, build))
        ref_views = tuple(judging.view(ref, _with_arch(gate, defines, ref)) for ref in references)
        head = (Evidence(gate_location(gate), f"gate `{gate.text}` excludes {build}", EvidenceKind.GATE),)
        analysis = analyze_units(view, units.sources, ref_views, head)
        verdict, reason, evidence = judge(analysis, units, gate.exact)
        empties = tuple(hit.chain[-1] for hit in analysis.empty)
        reached = _reached(analysis, units, head) if verdict is Verdict.POLICY else None
        verdicts.append(TargetVerdict(build.name, verdict, reason, _join(units, evidence), empties, reached))
    chosen = verdicts[0]
    if len(verdicts) > 1:
        other = verdicts[1]
        note = f" (assumes a {chosen.target} build; a {other.target} build would be {other.verdict.value}: {other.reason})"
        verdict = chosen.verdict
        if verdict is Verdict.POLICY and other.verdict is not Verdict.POLICY:
            verdict = Verdict.UNKNOWN
        reached = chosen.reached if verdict is Verdict.POLICY else None
        chosen = TargetVerdict(chosen.target, verdict, chosen.reason + note, chosen.evidence, chosen.empty_kernels, reached)
    return chosen


def _reached(analysis: Analysis, units: GuardedUnits, head: tuple[Evidence, ...]) -> Reached:
    """What the walk behind a POLICY verdict checked, and the path a finding shows: the gate, the
    Python calls to the first unit, each unit compiled, the template code it takes as read, the
    kernels and the constructs checked."""
    sources = analysis.compiled
    first = units.evidence.get(sources[0], ()) if sources else ()
    path = (*head, *(hop for hop in first if hop.kind is not EvidenceKind.GATE),
            *(Evidence(Location(source, 1), f"compiles {source}", EvidenceKind.COMPILES, source=source) for source in sources),
            *(hit.chain[-1] for hit in analysis.assumed), *analysis.kernel_hops, *(item.hop for item in analysis.checked))
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
