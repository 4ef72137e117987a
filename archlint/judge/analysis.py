"""What a set of translation units means for one target: blockers, possible blockers, empty kernels.

Used by gate verdicts (the units a gate guards, for each target it excludes or admits) and by
the file-level AL2xx checks. Works on linked facts only; never reads a file.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from archlint.judge.asserts import assert_hits
from archlint.judge.hits import Hit, HitKind
from archlint.judge.hollow import empty_kernel, fallback_trap
from archlint.judge.incomplete import code_holes, unresolved_includes
from archlint.judge.libraries import LibraryHits, library_hits
from archlint.judge.macro_sizes import Expansions, expanded_request, unit_expansions
from archlint.judge.nokernel import why_no_kernel
from archlint.judge.pinned import runtime_builds
from archlint.judge.prebuilt import prebuilt_hits
from archlint.judge.scope import Site, unit_scope
from archlint.judge.smem import HOST_SMEM_KINDS, judge_smem
from archlint.judge.view import Judging, TargetView
from archlint.knowledge.arch import Target
from archlint.lang.cpp.expr import render
from archlint.model.cuda import Construct, CudaFacts, SmemRequest
from archlint.model.findings import Evidence, EvidenceKind, Location
from archlint.model.gates import CheckedConstruct
from archlint.model.records import fast_pickling



@dataclass(frozen=True, slots=True)
class Analysis:
    target: Target
    blockers: tuple[Hit, ...] = ()
    possible: tuple[Hit, ...] = ()
    empty: tuple[Hit, ...] = ()
    unresolved: tuple[Hit, ...] = ()
    units: int = 0
    # (path, qualname) compiled into the units, sorted: a stored scan keeps one per gate and build,
    # and a tuple loads without hashing each pair
    reached: tuple[tuple[str, str], ...] = ()
    kernels: int = 0  # reached kernels compiled for the target
    assumed: tuple[Hit, ...] = ()  # what a POLICY verdict takes as read: template code filled in from the Python
    # What the walk checked, for a POLICY verdict's evidence: files followed through #include (units
    # excluded), the kernels compiled for the target, the arch-sensitive constructs the target has.
    headers: tuple[str, ...] = ()
    kernel_hops: tuple[Evidence, ...] = ()
    checked: tuple[CheckedConstruct, ...] = ()
    compiled: tuple[str, ...] = ()  # the units walked: the sources among the linked files
    # Prebuilt kernels (judge/prebuilt.py): host checks that keep the target from them, and units
    # that run them with nothing to say which GPUs they serve.
    arch_checks: tuple[Hit, ...] = ()
    prebuilt: tuple[Hit, ...] = ()
    # Vendor library calls (judge/libraries.py): those whose needs on the target are not known, and
    # how many calls that do device work the units compile (a blocker among them is in `blockers`).
    library: tuple[Hit, ...] = ()
    library_calls: tuple[str, ...] = ()
    # Where no kernel compiles and no library call does the work: what the walk found instead, and what
    # would settle it (judge/nokernel.py).
    no_kernel: tuple[str, str] = ("", "")


def _own_sure_names(facts: CudaFacts) -> frozenset[str]:
    """What the unit's own explicit instantiations spell, and what its non-template definitions name
    wherever they are compiled: they are compiled whether called or not, so what they name
    (`workspace_for<Tactic1Sm128Config>`'s argument) is instantiated."""
    declarations = facts.declarations
    return declarations.instantiated.union(*(item.sure_uses for item in declarations.items if not item.templated))


@dataclass(frozen=True)
class _UnitHits:
    """What one translation unit means for one target, before the gate's own evidence is prepended."""

    blockers: tuple[Hit, ...]
    possible: tuple[Hit, ...]
    empty: tuple[Hit, ...]
    unresolved: tuple[Hit, ...]
    reached: frozenset[tuple[str, str]]
    kernels: int  # reached kernels compiled for the target
    assumed: tuple[Hit, ...] = ()
    headers: tuple[str, ...] = ()
    kernel_hops: tuple[Evidence, ...] = ()
    checked: dict[tuple[Location, str], CheckedConstruct] = field(default_factory=dict)  # by (place, name); the last of each
    arch_checks: tuple[Hit, ...] = ()
    prebuilt: tuple[Hit, ...] = ()
    library: LibraryHits = LibraryHits()


def analyze_units(view: TargetView, sources: tuple[str, ...], references: tuple[TargetView, ...], head: tuple[Evidence, ...]) -> Analysis:
    compiled = tuple(source for source in sources if source in view.index.files)
    parts = [unit_hits(view, source, references) for source in compiled]

    def joined(of: Callable[[_UnitHits], tuple[Hit, ...]]) -> tuple[Hit, ...]:
        # Only the first hit of a kind becomes evidence, so only it gets the gate's hops.
        lists = [of(part) for part in parts if of(part)]
        hits = lists[0] if len(lists) == 1 else _dedupe([hit for hits in lists for hit in hits])
        return (replace(hits[0], chain=head + hits[0].chain), *hits[1:]) if hits else ()

    reached = tuple(sorted(frozenset().union(*(part.reached for part in parts))))
    headers = sorted({path for part in parts for path in part.headers} - set(sources))
    kernel_hops = sorted({hop for part in parts for hop in part.kernel_hops}, key=lambda hop: (hop.location, hop.name))
    checked: dict[tuple[Location, str], CheckedConstruct] = {}
    for part in parts:
        checked.update(part.checked)
        checked.update({(item.hop.location, item.hop.name): item for item in part.library.checked})
    kernels = sum(part.kernels for part in parts)
    library_calls = tuple(sorted({name for part in parts for name in part.library.calls}))
    no_kernel = why_no_kernel(view, sources, frozenset(reached)) if not kernels and not library_calls and parts else ("", "")
    return Analysis(view.target, joined(lambda p: p.blockers), joined(lambda p: p.possible), joined(lambda p: p.empty),
                    joined(lambda p: p.unresolved), len(sources), reached, kernels,
                    joined(lambda p: p.assumed), tuple(headers), tuple(kernel_hops),
                    tuple(checked[key] for key in sorted(checked, key=_place)), compiled,
                    joined(lambda p: p.arch_checks), joined(lambda p: p.prebuilt),
                    joined(lambda p: p.library.possible), library_calls, no_kernel)


def _place(key: tuple[Location, str]) -> tuple[str, int, int, int, int, str]:
    """A checked construct's sort key: the order of (Location, name), without comparing dataclasses."""
    location, name = key
    return location.path, location.line, location.col, location.end_line, location.end_col, name


def unit_hits(view: TargetView, source: str, references: tuple[TargetView, ...]) -> _UnitHits:
    """Memoised per build, source and reference builds: gates sharing units share the work."""
    key = (_unit_hits, source, tuple(ref.target for ref in references))
    return view.memo(key, lambda: _unit_hits(view, source, references))


def _unit_hits(view: TargetView, source: str, references: tuple[TargetView, ...]) -> _UnitHits:
    blockers: list[Hit] = []
    possible: list[Hit] = []
    empty: list[Hit] = []
    unresolved: list[Hit] = []
    assumed: list[Hit] = []
    checked: list[CheckedConstruct] = []
    kernel_hops: list[Evidence] = []
    parents = view.closure(source)
    files = set(parents)
    reached, surely = view.reachable_both(source, files)
    scope = view.judging.shared(unit_scope, (source, frozenset(files)))
    unreached = scope.unreached
    called = view.surely_called(source, surely)
    sure_spans = unreached.named(called | _own_sure_names(view.index.files[source]))
    chains = view.judging.shared(_include_chains, tuple(parents.items()))
    expansions = view.judging.shared(_unit_expansions, frozenset(files))

    def compiled_in(path: str):
        """Whether the unit can compile a site: its function is reached, or, outside tracked
        functions, it lies in no template or specialisation that nothing the unit compiles names."""
        return lambda site: ((path, site.function) in reached if site.function
                             else not unreached.covers(path, site.line, site.col))

    arch_checks, prebuilt = prebuilt_hits(view, parents, (reached, surely, called), chains.__getitem__)
    library = library_hits(view, files, compiled_in, surely, source, chains.__getitem__)
    blockers += library.blockers
    kernels = 0
    for path in sorted(files):
        facts = view.index.files[path]
        chain = chains[path]
        compiled = compiled_in(path)
        unresolved_includes(view, facts, chain, unresolved)
        code_holes(facts, chain, unresolved, assumed)
        runtime_builds(view, facts, (compiled, surely), chain, blockers, possible)
        for site in scope.sites[path]:
            if not site.construct.function or (path, site.construct.function) in reached:
                _judge_construct(view, facts, site, (reached, surely, called, sure_spans), source, chain, blockers, possible, checked)
        for request in facts.smem:
            sized = expanded_request(expansions, request)
            if sized is not None:
                _judge_smem(view, facts, sized, reached, chain, (blockers, possible, unresolved), references)
        if path in scope.asserts:
            for location, message in assert_hits(view, path, scope.asserts[path], references, compiled):
                hop = Evidence(location, message, EvidenceKind.ASSERT)
                possible.append(Hit(HitKind.ASSERT, location, message, chain + (hop,), False))
        for function in facts.functions:
            if (path, function.qualname) not in reached:
                continue
            if function.kind == "global":
                if view.truth(path, function.region) != 0:
                    kernels += 1
                    kernel_hops.append(Evidence(Location(path, function.line, function.col), f"kernel `{function.name}`",
                                                EvidenceKind.KERNEL, name=function.name))
                hit = empty_kernel(view, facts, function, references, chain)
                if hit is not None:
                    empty.append(hit)
            elif function.body:
                hit = fallback_trap(view, facts, function, references, chain, (path, function.qualname) in surely)
                if hit is not None:
                    (empty if hit.certain else possible).append(hit)
    if any(view.kb.by_id(item.requirement).kind == "arch-tag" for item in checked):
        # The unit also builds for an arch the target has: it may pick that one at run time.
        possible += [replace(hit, certain=False) for hit in blockers if hit.kind is HitKind.ARCH_TAG]
        blockers = [hit for hit in blockers if hit.kind is not HitKind.ARCH_TAG]
    return _UnitHits(_dedupe(blockers), _dedupe(possible), _dedupe(empty), _dedupe(unresolved),
                     frozenset(reached) | {(path, "") for path in files}, kernels, _dedupe(assumed),
                     tuple(sorted(files - {source})), tuple(kernel_hops),
                     {(item.hop.location, item.hop.name): item for item in checked}, _dedupe(arch_checks), _dedupe(prebuilt),
                     library)


def hollow_kernels(analysis: Analysis) -> tuple[Hit, ...]:
    """The empty and trap-only kernels of a build, when every kernel it compiles is one (the module
    built for that target would only trap or do nothing); () otherwise."""
    kernels = tuple(hit for hit in analysis.empty if hit.kind in (HitKind.EMPTY_KERNEL, HitKind.TRAP_KERNEL))
    return kernels if analysis.kernels and len(kernels) >= analysis.kernels else ()


def _include_chains(judging: Judging, parents: tuple[tuple[str, tuple[str, int] | None], ...]) -> dict[str, tuple[Evidence, ...]]:
    """The hops from the unit to each file it compiles. `parents`: TargetView.closure's items, which
    list a file after the one that includes it, so each chain extends its includer's."""
    chains: dict[str, tuple[Evidence, ...]] = {}
    for path, including in parents:
        if including is None:
            chains[path] = (Evidence(Location(path, 1), f"compiles {path}", EvidenceKind.COMPILES, source=path),)
        else:
            parent, line = including
            chains[path] = chains[parent] + (Evidence(Location(parent, line), f"includes {path}", EvidenceKind.INCLUDE, source=path),)
    return chains


def emits_instruction(construct: Construct) -> bool:
    """False for a CuTe atom's or CUTLASS arch tag's type name, and for anything in an `if constexpr`
    branch: each needs its instruction only where a template is instantiated a certain way, which a
    name-based call graph cannot tell (UNKNOWN at most, never AL201)."""
    return construct.kind not in ("tag", "arch-tag") and not construct.in_constexpr_branch


def selects_arch_code(construct: Construct) -> bool:
    """A CUTLASS arch tag outside `if constexpr` branches, or in a chain whose every working
    alternative holds one: code that surely compiles with it instantiates the collectives CUTLASS
    builds for that arch, whatever their atoms are."""
    return construct.kind == "arch-tag" and (not construct.in_constexpr_branch or construct.every_alternative)


def _judge_construct(view, facts, site: Site, reach, source, chain, blockers, possible, checked) -> None:
    """A construct at a site the unit compiles. `reach`: the functions compiled for the target, those
    compiled whatever undecided conditions say, the names (macros among them) the unit surely calls,
    and the definitions it surely instantiates (`judge/reach.Named`); an
    instruction reached only through an undecided call is a possible blocker. One the target has
    goes to `checked`, with its guard."""
    reached, surely, called, sure_spans = reach
    construct, requirement = site.construct, site.requirement
    if site.namesakes and any(function in reached for function in site.namesakes):
        return  # the unit's own function of that name (Site.namesakes)
    if requirement.supports(view.target):
        if view.truth(facts.path, construct.region) != 0:
            checked.append(checked_site(view, facts.path, site))
        return
    state = view.truth(facts.path, construct.region)
    if state == 0:
        return
    location = Location(facts.path, construct.line, construct.col)
    macro = site.macro
    definition = "" if macro else sure_spans.at(facts.path, construct.line, construct.col)
    if construct.function:
        where = f" in `{construct.function.split('::')[-1]}`"
    elif definition:
        where = f" in `{definition}` (which the unit instantiates)"
    elif macro:
        where = f" in macro `{macro}`" + (" (which the unit invokes)" if macro in called else "")
    elif facts.path == source:
        where = " at file scope of the compiled source"
    else:
        where = " (file scope, e.g. a macro body)"
    if construct.every_alternative:
        where += " (one of an `if constexpr` chain whose every alternative needs the same)"
    elif construct.in_constexpr_branch:
        where += " (in an `if constexpr` branch: compiled only for the template arguments that take it)"
    message = f"`{construct.name}`{where} {site.described}; {view.target} lacks it [{requirement.id}]"
    # Instantiated whatever happens: in a definition the unit surely instantiates, or outside
    # functions in its own file or a macro it surely invokes.
    instantiated = (bool(definition) and (construct.unconditional or construct.every_alternative)) or (
        not construct.function and (facts.path == source or macro in called))
    if construct.kind == "tag":  # a CuTe atom: its instruction comes with its instantiation
        certain = state == 1 and instantiated and (not construct.in_constexpr_branch or construct.every_alternative)
    else:
        sure_site = (facts.path, construct.function) in surely if construct.function else instantiated
        certain = state == 1 and sure_site and (emits_instruction(construct) or selects_arch_code(construct))
    hop = Evidence(location, message, EvidenceKind.CONSTRUCT, name=construct.name)
    settle = view.settle(facts.path, construct.region) if state is None else ""
    kind = HitKind.ARCH_TAG if construct.kind == "arch-tag" else HitKind.INSTRUCTION
    hit = Hit(kind, location, message, chain + (hop,), certain, settle)
    (blockers if certain else possible).append(hit)


def checked_site(view: TargetView, path: str, site: Site) -> CheckedConstruct:
    """A site the target has, with its arch guard (memoised per build: every unit including the file reads it)."""
    return view.memo((_checked, path, site.number), lambda: _checked(view, path, site))


def _checked(view: TargetView, path: str, site: Site) -> CheckedConstruct:
    """A construct the target has: under which arch guard it compiles, and the KB row saying so."""
    construct, requirement = site.construct, site.requirement
    where = f" in `{construct.function.split('::')[-1]}`" if construct.function else ""
    guard = view.arch_guard(path, construct.region)
    target = view.target
    if guard is None:
        text, line, holds, under = "", 0, "", "with no arch guard"
    else:
        text, line = render(guard.cond), guard.line
        holds = "true" if view.device.truth(guard.cond) == 1 else "undecided"
        under = f"under `{text}` (line {line}), {holds} for {target}"
    message = f"`{construct.name}`{where} {under}; {site.described}: {target} has it [{requirement.id}]"
    hop = Evidence(Location(path, construct.line, construct.col), message, EvidenceKind.CHECKED, name=construct.name)
    return CheckedConstruct(hop, text, line, holds, requirement.id, site.described)


def _unit_expansions(judging, files: frozenset[str]) -> Expansions:
    return unit_expansions(judging.index.files[path] for path in sorted(files))


def _judge_smem(view, facts, request: SmemRequest, reached, chain, hits, references) -> None:
    if request.function and (facts.path, request.function) not in reached:
        return
    state = view.truth(facts.path, request.region, host=request.kind in HOST_SMEM_KINDS)
    if state != 0:
        judge_smem(view, facts.path, request, state, chain, hits, references)


def _dedupe(hits: list[Hit]) -> tuple[Hit, ...]:
    unique: dict[tuple, Hit] = {}
    for hit in hits:
        unique.setdefault((hit.kind, hit.location, hit.message), hit)
    return tuple(sorted(unique.values(), key=lambda h: (h.location.path, h.location.line, h.location.col, h.message)))


fast_pickling(globals())
