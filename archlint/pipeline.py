"""The scan pipeline, stage by stage; engine.scan() is its public door."""

from __future__ import annotations

from dataclasses import dataclass

import os
from pathlib import Path

from .analysis import analyze_units, view_for
from .arch import Target, default_targets, parse_target
from .checks import all_checks
from .cpp.evaluate import UNKNOWN_DEFINE
from .checks.context import Context, GateResult
from .discover import discover
from .engine import GateReport, ScanOptions, ScanResult
from .facts import FileFacts, extract_all
from .kb import load_kb
from .link import build_index
from .model import Finding, Location
from .stagetime import stage
from .verdicts import (build_target, excluded_targets, gate_location, guarded_units, reference_targets,
                       verdict_for)


@dataclass(frozen=True)
class Linked:
    """Everything the stages before the checks produce: what `archlint graph` draws."""

    root: str
    facts: tuple[FileFacts, ...]
    discovery: object
    index: object  # link.CudaIndex
    pyindex: object  # pylink.PyIndex or None
    context: Context


def link(options: ScanOptions) -> Linked:
    with stage("discover"):
        discovery = discover(options.paths, options.exclude)
        root = discovery.root
        cache = _open_cache(options)
    with stage("facts"):
        facts = extract_all(discovery.files, options.jobs, options.max_file_bytes, cache)
    with stage("index"):
        kb = load_kb()
        index = build_index([f.cuda for f in facts if f.cuda is not None], _relative_dirs(options.include_dirs, root))
        targets = tuple(parse_target(t) for t in options.targets) or default_targets()
    with stage("pylink"):
        gates, pyindex = _python_gates(facts, root, discovery)
    with stage("verdicts"):
        ctx = Context(index, kb, targets)
        results = tuple(r for r in (_judge_gate(gate, pyindex, index, kb, targets, ctx) for gate in gates) if r is not None)
        ctx.gate_results = results
        if results:
            ctx.live = _live(results)
    return Linked(root, tuple(facts), discovery, index, pyindex, ctx)


def run(options: ScanOptions) -> ScanResult:
    linked = link(options)
    ctx, facts, discovery = linked.context, linked.facts, linked.discovery
    with stage("checks"):
        findings = _run_checks(ctx, options)
    diagnostics = tuple(sorted({d for f in facts for d in f.diagnostics} | set(discovery.diagnostics),
                               key=lambda d: (d.path, d.line, d.message)))
    suppressions = tuple(sorted((f.file.path, _suppressions_of(f)) for f in facts if _suppressions_of(f)))
    return ScanResult(
        root=linked.root,
        findings=tuple(sorted(findings, key=Finding.sort_key)),
        diagnostics=diagnostics,
        gates=tuple(_gate_report(r, ctx.targets) for r in ctx.gate_results),
        files_scanned=len(discovery.files),
        targets=tuple(t.name for t in ctx.targets),
        suppressions=suppressions,
    )


def _open_cache(options: ScanOptions):
    if not options.use_cache:
        return None
    try:
        from .cache import FactsCache
    except ImportError:
        return None
    return FactsCache.open(options.max_file_bytes, options.paths)


def _relative_dirs(dirs: tuple[str, ...], root: str) -> tuple[str, ...]:
    out = []
    for folder in dirs:
        try:
            out.append(Path(folder).resolve().relative_to(root).as_posix())
        except ValueError:
            continue
    return tuple(out)


def _suppressions_of(facts: FileFacts) -> tuple:
    if facts.cuda is not None:
        return facts.cuda.suppressions
    if facts.python is not None:
        return tuple(getattr(facts.python, "suppressions", ()))
    return ()


def _python_gates(facts: list[FileFacts], root: str, discovery) -> tuple[tuple, object]:
    python = [f.python for f in facts if f.python is not None]
    if not python:
        return (), None
    from .pylink import link_python

    pyindex = link_python(python, [root], {f.path for f in discovery.files})
    return tuple(sorted(pyindex.gates, key=lambda g: (g.path, g.line, g.col))), pyindex


def _defines(gate) -> dict[str, object]:
    """-D flags of the gate's JIT spec. A name given two values (flag lists built in branches)
    or a value that is not a number is defined with an unknown value: never guessed."""
    values: dict[str, set] = {}
    for flag in getattr(gate, "defines", ()):
        text = flag[2:] if flag.startswith("-D") else flag
        name, _, value = text.partition("=")
        try:
            parsed: object = int(value, 0) if value else 1
        except ValueError:
            parsed = UNKNOWN_DEFINE
        values.setdefault(name.strip(), set()).add(parsed)
    return {name: next(iter(v)) if len(v) == 1 else UNKNOWN_DEFINE for name, v in values.items()}


def _judge_gate(gate, pyindex, index, kb, targets: tuple[Target, ...], ctx: Context) -> GateResult | None:
    units = guarded_units(pyindex, gate)
    if not units.sources and not units.unresolved:
        return None  # a capability test with no kernel build behind it: nothing to judge
    defines = _defines(gate)
    references = reference_targets(gate)
    excluded = tuple(verdict_for(gate, units, index, kb, t, defines, references) for t in excluded_targets(gate, targets))
    admitted = []
    admitted_builds = sorted({build_target(gate, t)[0] for t in targets if t.cc in set(gate.admits)})
    for build in admitted_builds:
        admitted.append(analyze_units(view_for(index, kb, build, defines), units.sources, (), ()))
    return GateResult(gate, units.sources, excluded, tuple(admitted))


def _live(results) -> dict[tuple[str, str], frozenset[Target]]:
    """For each (path, function) compiled by some admitted build, the builds that compile it."""
    live: dict[tuple[str, str], set[Target]] = {}
    for result in results:
        for analysis in result.admitted:
            for key in analysis.reached:
                live.setdefault(key, set()).add(analysis.target)
    return {key: frozenset(targets) for key, targets in live.items()}


def _run_checks(ctx: Context, options: ScanOptions) -> list[Finding]:
    from .registry import resolve_all

    selected = set(resolve_all(options.select)) if options.select else None
    ignored = set(resolve_all(options.ignore)) if options.ignore else set()
    findings: list[Finding] = []
    for rule_id, check in all_checks().items():
        if (selected is not None and rule_id not in selected) or rule_id in ignored:
            continue
        findings.extend(check(ctx))
    if options.report_paths:
        wanted = set(options.report_paths)
        findings = [f for f in findings if f.location.path in wanted or any(e.location.path in wanted for e in f.evidence)]
    return findings


def _gate_report(result: GateResult, targets: tuple[Target, ...]) -> GateReport:
    gate = result.gate
    admits = tuple(t.name for t in targets if t.cc in set(gate.admits))
    return GateReport(gate.id, gate.text, gate_location(gate), admits, result.excluded, result.sources)
