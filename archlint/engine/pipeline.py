"""The scan pipeline, stage by stage; engine.scan() is its public door."""

from __future__ import annotations

from dataclasses import dataclass, replace

from pathlib import Path

from archlint.judge.analysis import Defines, Judging, analyze_units
from archlint.knowledge.arch import Target, default_targets, parse_target
from archlint.checks import FILE_RULES, all_checks
from archlint.lang.cpp.evaluate import NOT_PASSED, UNKNOWN_DEFINE
from archlint.checks.context import Context, GateResult
from archlint.discover import discover
from archlint.model.gates import Gate, GateReport
from archlint.model.scan import ScanOptions, ScanResult
from archlint.model.files import Discovery, FileFacts
from archlint.extract.files import extract_all
from archlint.link.templates import fill_holes, read_templates
from archlint.knowledge.kb import load_kb
from archlint.link.cuda import CudaIndex, build_index
from archlint.link.python import PyIndex
from archlint.model.findings import Finding, Suppression
from archlint.model.python import split_define
from archlint.engine.store import GateMemo, ScanState, ScanStore
from archlint.engine.timing import stage
from archlint.gates.detect import find_gates, variant_macros, with_absent_variant_macros
from archlint.link.python import link_python
from archlint.judge.verdicts import GuardedUnits, build_target, excluded_targets, gate_location, guarded_units, reference_targets, verdict_for


@dataclass(frozen=True)
class Linked:
    """Everything the stages before the checks produce: what `archlint graph` draws."""

    root: str
    facts: tuple[FileFacts, ...]
    discovery: Discovery
    index: CudaIndex
    pyindex: PyIndex | None
    context: Context
    memos: tuple[GateMemo, ...] = ()  # one per judged gate, in the order of context.gate_results


def link(options: ScanOptions) -> Linked:
    with stage("discover"):
        discovery = discover(options.paths, options.exclude)
        cache = _open_cache(options)
    return _link(options, discovery, cache)


def _link(options: ScanOptions, discovery, cache) -> Linked:
    root = discovery.root
    with stage("facts"):
        facts = extract_all(discovery.files, options.jobs, options.max_file_bytes, cache)
    with stage("pylink"):
        gates, pyindex = _python_gates(facts, root, discovery)
        facts = fill_holes(pyindex, facts)
    with stage("index"):
        kb = load_kb()
        index = build_index([f.cuda for f in facts if f.cuda is not None], relative_dirs(options.include_dirs, root),
                            generated_files(pyindex))
        targets = scan_targets(options)
    with stage("verdicts"):
        judging = Judging(index, kb)
        memos, results = [], []
        # a capability test with no kernel build behind it has nothing to judge
        gated = [(gate, units) for gate in gates
                 if (units := guarded_units(pyindex, gate)).sources or units.unresolved] if pyindex is not None else []
        for gate, units in with_absent_variant_macros(gated, variant_macros(pyindex, gates)):
            memos.append(GateMemo(gate, units, include_closure(index, units.sources)))
            results.append(judge_gate(gate, units, judging, targets))
        ctx = Context.judged(judging, targets, tuple(results))
    return Linked(root, tuple(facts), discovery, index, pyindex, ctx, tuple(memos))


def run(options: ScanOptions) -> ScanResult:
    """The scan, reusing a stored result for an unchanged tree and re-judging only what a changed
    CUDA file can reach when the rest is unchanged."""
    with stage("discover"):
        discovery = discover(options.paths, options.exclude)
        cache = _open_cache(options)
        store = ScanStore.open(cache, options, discovery) if cache is not None else None
    result = store.unchanged_result() if store is not None else None
    if result is None:
        state = None
        if store is not None:
            from archlint.engine.rescan import rescan

            result, state = rescan(options, discovery, cache, store) or (None, None)
        if result is None:
            result, state = _full_scan(options, discovery, cache)
        if store is not None:
            store.save(result, state)
    return _only_reported(result, options.report_paths)


def _full_scan(options: ScanOptions, discovery, cache) -> tuple[ScanResult, ScanState]:
    linked = _link(options, discovery, cache)
    ctx = linked.context
    with stage("checks"):
        gate_findings = run_checks(ctx, options, file_rules=False)
        file_findings = findings_by_file(run_checks(ctx, options, file_rules=True))
    state = ScanState(
        generated=generated_files(linked.pyindex),
        templates=read_templates(linked.facts),
        links=linked.index.links,
        memos=linked.memos,
        results=ctx.gate_results,
        file_findings=file_findings,
        file_diagnostics={f.file.path: f.diagnostics for f in linked.facts if f.diagnostics},
        suppressions={f.file.path: suppressions_of(f) for f in linked.facts if suppressions_of(f)},
        discovery_diagnostics=tuple(discovery.diagnostics),
    )
    return assemble_result(linked.root, len(discovery.files), ctx, gate_findings, state), state


def assemble_result(root: str, files_scanned: int, ctx: Context, gate_findings: list[Finding], state: ScanState) -> ScanResult:
    """The result from its parts; a full scan and a partial re-scan both end here, so they agree."""
    findings = list(gate_findings)
    for rule in FILE_RULES:
        for path in sorted(p for r, p in state.file_findings if r == rule):
            findings.extend(state.file_findings[(rule, path)])
    diagnostics = {d for group in state.file_diagnostics.values() for d in group} | set(state.discovery_diagnostics)
    return ScanResult(
        root=root,
        findings=tuple(sorted(findings, key=Finding.sort_key)),
        diagnostics=tuple(sorted(diagnostics, key=lambda d: (d.path, d.line, d.message))),
        gates=tuple(_gate_report(r, ctx.targets) for r in ctx.gate_results),
        files_scanned=files_scanned,
        targets=tuple(t.name for t in ctx.targets),
        suppressions=tuple(sorted(state.suppressions.items())),
    )


def findings_by_file(findings: list[Finding]) -> dict[tuple[str, str], tuple[Finding, ...]]:
    """(rule, path) -> that file's findings of the rule, in the order the check made them."""
    out: dict[tuple[str, str], list[Finding]] = {}
    for finding in findings:
        out.setdefault((finding.rule, finding.location.path), []).append(finding)
    return {key: tuple(values) for key, values in out.items()}


def _only_reported(result: ScanResult, report_paths: tuple[str, ...]) -> ScanResult:
    """Pre-commit style: the findings in the named files, or whose evidence runs through them."""
    if not report_paths:
        return result
    wanted = set(report_paths)
    findings = tuple(f for f in result.findings if f.location.path in wanted or any(e.location.path in wanted for e in f.evidence))
    return replace(result, findings=findings)


def scan_targets(options: ScanOptions) -> tuple[Target, ...]:
    return tuple(parse_target(t) for t in options.targets) or default_targets()


def _open_cache(options: ScanOptions):
    if not options.use_cache:
        return None
    try:
        from archlint.engine.cache import FactsCache
    except ImportError:
        return None
    return FactsCache.open(options.max_file_bytes, options.paths)


def relative_dirs(dirs: tuple[str, ...], root: str) -> tuple[str, ...]:
    out = []
    for folder in dirs:
        try:
            out.append(Path(folder).resolve().relative_to(root).as_posix())
        except ValueError:
            continue
    return tuple(out)


def suppressions_of(facts: FileFacts) -> tuple[Suppression, ...]:
    if facts.cuda is not None:
        return facts.cuda.suppressions
    if facts.python is not None:
        return facts.python.suppressions
    return ()


def _python_gates(facts: list[FileFacts], root: str, discovery: Discovery) -> tuple[tuple[Gate, ...], PyIndex | None]:
    python = [f.python for f in facts if f.python is not None]
    if not python:
        return (), None
    pyindex = link_python(python, [root], {f.path for f in discovery.files})
    return tuple(sorted(find_gates(pyindex), key=lambda g: (g.path, g.line, g.col))), pyindex


def generated_files(pyindex: PyIndex | None) -> dict[str, str]:
    return dict(pyindex.generated) if pyindex is not None else {}


def _defines(gate: Gate) -> Defines:
    """-D flags of the gate's JIT spec. A name given two values (flag lists built in branches)
    or a value that is not a number is defined with an unknown value: never guessed."""
    values: dict[str, set[object]] = {}
    for flag in gate.defines:
        name, value = split_define(flag)
        try:
            parsed: object = int(value, 0) if value else 1
        except ValueError:
            parsed = UNKNOWN_DEFINE
        values.setdefault(name, set()).add(parsed)
    defines = {name: next(iter(v)) if len(v) == 1 else UNKNOWN_DEFINE for name, v in values.items()}
    # Variant macros the specs of sibling gates pass and this one's (fully read) flags do not.
    defines.update({name: NOT_PASSED for name in gate.absent_defines if name not in defines})
    return defines


def judge_gate(gate: Gate, units: GuardedUnits, judging: Judging, targets: tuple[Target, ...]) -> GateResult:
    defines = _defines(gate)
    references = reference_targets(gate)
    excluded = tuple(verdict_for(gate, units, judging, t, defines, references) for t in excluded_targets(gate, targets))
    admitted = []
    admitted_builds = sorted({build_target(gate, t)[0] for t in targets if t.cc in set(gate.admits)})
    for build in admitted_builds:
        analysis = analyze_units(judging.view(build, defines), units.sources, (), ())
        # Of an admitted build only its blockers (AL105) and what it compiles (the live table) are
        # read; the rest would only weigh on the stored scan state.
        admitted.append(replace(analysis, possible=(), empty=(), unresolved=()))
    return GateResult(gate, units.sources, excluded, tuple(admitted))


def include_closure(index: CudaIndex, sources: tuple[str, ...]) -> frozenset[str]:
    """Every file the sources can include, for any target: what a gate's verdicts can read."""
    seen, stack = set(sources), list(sources)
    while stack:
        for resolved in index.resolved(stack.pop()):
            if resolved.target is not None and resolved.target not in seen:
                seen.add(resolved.target)
                stack.append(resolved.target)
    return frozenset(seen)


def run_checks(ctx: Context, options: ScanOptions, *, file_rules: bool) -> list[Finding]:
    from archlint.knowledge.rules import resolve_all

    selected = set(resolve_all(options.select)) if options.select else None
    ignored = set(resolve_all(options.ignore)) if options.ignore else set()
    findings: list[Finding] = []
    for rule_id, check in all_checks().items():
        if (selected is not None and rule_id not in selected) or rule_id in ignored or (rule_id in FILE_RULES) != file_rules:
            continue
        findings.extend(check(ctx))
    return findings


def _gate_report(result: GateResult, targets: tuple[Target, ...]) -> GateReport:
    gate = result.gate
    admits = tuple(t.name for t in targets if t.cc in set(gate.admits))
    return GateReport(gate.id, gate.text, gate_location(gate), admits, result.excluded, result.sources)
