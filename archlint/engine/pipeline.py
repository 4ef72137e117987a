"""The scan pipeline, stage by stage; engine.scan() is its public door."""

from __future__ import annotations

from dataclasses import dataclass, replace

from archlint.checks.context import Context
from archlint.discover import discover
from archlint.engine.cache import FactsCache
from archlint.engine.rescan import rescan
from archlint.engine.steps import (
    assemble_result,
    findings_by_file,
    generated_files,
    include_closure,
    judge_gate,
    relative_dirs,
    run_checks,
    scan_targets,
    suppressions_of,
    user_defines,
)
from archlint.engine.store import GateMemo, ScanState, ScanStore
from archlint.engine.timing import stage
from archlint.extract.files import extract_all
from archlint.gates.detect import find_gates
from archlint.gates.variants import variant_macros, with_absent_variant_macros
from archlint.judge.analysis import Judging
from archlint.judge.verdicts import guarded_units
from archlint.knowledge.kb import load_kb
from archlint.link.cuda import CudaIndex, build_index
from archlint.link.python import PyIndex, link_python
from archlint.link.templates import fill_holes, read_templates
from archlint.model.files import Discovery, FileFacts
from archlint.model.gates import Gate
from archlint.model.scan import ScanOptions, ScanResult


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
        variants = variant_macros(pyindex, gates) if pyindex is not None else frozenset()
        for gate, units in with_absent_variant_macros(gated, variants):
            memos.append(GateMemo(gate, units, include_closure(index, units.sources)))
            results.append(judge_gate(gate, units, judging, targets, user_defines(options)))
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


def _only_reported(result: ScanResult, report_paths: tuple[str, ...]) -> ScanResult:
    """Pre-commit style: the findings in the named files, or whose evidence runs through them."""
    if not report_paths:
        return result
    wanted = set(report_paths)
    findings = tuple(f for f in result.findings if f.location.path in wanted or any(e.location.path in wanted for e in f.evidence))
    return replace(result, findings=findings)


def _open_cache(options: ScanOptions) -> FactsCache | None:
    if not options.use_cache:
        return None
    return FactsCache.open(options.max_file_bytes, options.paths)


def _python_gates(facts: list[FileFacts], root: str, discovery: Discovery) -> tuple[tuple[Gate, ...], PyIndex | None]:
    python = [f.python for f in facts if f.python is not None]
    if not python:
        return (), None
    pyindex = link_python(python, [root], {f.path for f in discovery.files})
    return tuple(sorted(find_gates(pyindex), key=lambda g: (g.path, g.line, g.col))), pyindex


