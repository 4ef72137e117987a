"""The steps a full scan and a partial re-scan share: judging a gate, running the checks, putting the
result together. Both end in assemble_result, so they agree."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from archlint.checks import FILE_RULES, all_checks
from archlint.checks.context import Context, GateResult
from archlint.engine.cache import open_cache  # noqa: F401 - engine.linking takes it from here
from archlint.engine.store import ScanState, target_names
from archlint.engine.timing import SCAN_STAGES, stage  # noqa: F401 - SCAN_STAGES: engine.linking takes it from here
from archlint.judge.analysis import Analysis, analyze_units, hollow_kernels
from archlint.judge.extensions import extension_hits
from archlint.judge.verdicts import (
    build_target,
    excluded_targets,
    gate_location,
    reference_targets,
    verdict_for,
)
from archlint.judge.view import Defines, Judging
from archlint.knowledge.arch import Target, default_targets, parse_target
from archlint.knowledge.rules import resolve_all
from archlint.lang.cpp.evaluate import NOT_PASSED, PASSABLE, UNKNOWN_DEFINE
from archlint.model.files import FileFacts
from archlint.model.findings import Finding, Suppression
from archlint.model.gates import Gate, GateReport, GuardedUnits
from archlint.model.python import VersionedFlag, split_define
from archlint.model.records import shared
from archlint.model.scan import ScanOptions, ScanResult

if TYPE_CHECKING:  # a re-scan of CUDA files never loads the Python side
    from archlint.link.python import PyIndex


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
        binaries=state.binaries,
    )


def with_tactic_sizes(options: ScanOptions, root: str, ctx: Context) -> Context:
    """`scan --compile-probe`: the checks see nvcc's size of each tactic a served target's launcher
    can be probed for (answers cached by the compiled bytes, so a re-scan compiles only what changed).
    Without nvcc, the static bound alone (the front end says so)."""
    if not options.compile_probe or not ctx.tile_lists:
        return ctx
    from archlint.probe.tactics import ProbeSettings  # deferred: a scan without the probe never loads it
    from archlint.probe.units import tactic_sizes  # deferred: as above

    settings = ProbeSettings(root, options.include_dirs, jobs=options.jobs or os.cpu_count() or 1)
    with stage("probe", sum(len(t.fact.choices) for t in ctx.tile_lists), "tactics"):
        return replace(ctx, tactic_sizes=tactic_sizes(ctx.tile_lists, ctx.targets, ctx.index, settings))


def findings_by_file(findings: list[Finding]) -> dict[tuple[str, str], tuple[Finding, ...]]:
    """(rule, path) -> that file's findings of the rule, in the order the check made them."""
    out: dict[tuple[str, str], list[Finding]] = {}
    for finding in findings:
        out.setdefault((finding.rule, finding.location.path), []).append(finding)
    return {key: tuple(values) for key, values in out.items()}


def scan_targets(options: ScanOptions) -> tuple[Target, ...]:
    """The targets to judge, each once and in arch order whatever order they were given in."""
    return tuple(parse_target(name) for name in target_names(options.targets))


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
    if facts.cmake is not None:
        return facts.cmake.suppressions
    return ()


def generated_files(pyindex: PyIndex | None) -> dict[str, str]:
    return dict(pyindex.generated) if pyindex is not None else {}


def user_defines(options: ScanOptions) -> Defines:
    """The --define flags: `NAME` is 1, `NAME=VALUE` a number (checked by the command line)."""
    values = {}
    for flag in options.defines:
        name, value = split_define(flag)
        values[name] = int(value, 0) if value else 1
    return values


def _defines(gate: Gate, units: GuardedUnits, builds: tuple[Target, ...] = ()) -> Defines:
    """-D flags of the gate's JIT spec (for a capability test, of the one spec its calls reach) in a
    build for `builds`: those it always passes, and those a toolkit-version test passes in every
    toolkit that builds for them. A name given two values (flag lists built in branches) or a value
    that is not a number is defined with an unknown value: never guessed."""
    values: dict[str, set[object]] = {}
    own = bool(gate.defines or gate.versioned_defines)
    versioned = gate.versioned_defines if own else units.spec_versioned
    for flag in (gate.defines if own else units.spec_defines) + _decided(versioned, builds):
        name, value = split_define(flag)
        try:
            parsed: object = int(value, 0) if value else 1
        except ValueError:
            parsed = UNKNOWN_DEFINE
        values.setdefault(name, set()).add(parsed)
    defines = {name: next(iter(v)) if len(v) == 1 else UNKNOWN_DEFINE for name, v in values.items()}
    # Variant macros the specs of sibling gates pass and this one's (fully read) flags do not.
    defines.update({name: NOT_PASSED for name in gate.absent_defines if name not in defines})
    if gate.passable_defines is not None:
        defines[PASSABLE] = frozenset(gate.passable_defines)
    return defines


def _decided(versioned: tuple[VersionedFlag, ...], builds: tuple[Target, ...]) -> tuple[str, ...]:
    """The flags a toolkit-version test surely passes in a build for every one of `builds`: its test
    holds in the oldest toolkit that builds for them (`Target.first_cuda`). Any other stays a flag
    passed on some paths."""
    toolkits = [build.first_cuda() for build in builds]
    if not toolkits or None in toolkits:
        return ()
    oldest = min(toolkit for toolkit in toolkits if toolkit is not None)
    return tuple(flag.flag for flag in versioned if flag.passed_with(oldest))


def judge_gate(gate: Gate, units: GuardedUnits, judging: Judging, targets: tuple[Target, ...],
               overrides: Defines | None = None, parts: dict | None = None) -> GateResult:
    """`overrides`: the user's --define flags, over the spec's own. `parts`: the table the results of
    one scan share their equal parts through (model.records.shared): the gates' evidence chains
    repeat one another, and the stored scan state a re-scan loads is half the size for it."""
    def defines(builds: tuple[Target, ...]) -> Defines:
        return {**_defines(gate, units, builds), **(overrides or {})}

    references = reference_targets(gate)
    excluded = tuple(verdict_for(gate, units, judging, t, defines(build_target(gate, t)), references)
                     for t in excluded_targets(gate, targets))
    admitted = []
    served = set(gate.admits) if units.admitted_ccs is None else set(gate.admits) & units.admitted_ccs
    admitted_builds = sorted({build_target(gate, t)[0] for t in targets if t.cc in served})
    for build in admitted_builds:
        analysis = analyze_units(judging.view(build, defines((build,))), units.sources, (), ())
        # Of an admitted build only its blockers, kernel count and hollow kernels (AL105) and what it
        # compiles (the live table) are read; the rest (what a POLICY verdict's evidence would cite,
        # most of an analysis) would only weigh on the stored scan state a re-scan loads.
        # a prebuilt module the gate's code calls with nothing built for an admitted target blocks it too
        missing, _ = extension_hits(units.extensions, build)
        admitted.append(Analysis(analysis.target, blockers=analysis.blockers + missing, empty=hollow_kernels(analysis),
                                 units=analysis.units, reached=analysis.reached, kernels=analysis.kernels))
    return shared(GateResult(gate, units.sources, excluded, tuple(admitted), units.layers), {} if parts is None else parts)


def run_checks(ctx: Context, *, file_rules: bool) -> list[Finding]:
    """Every gate rule's findings, or every file rule's. Every rule runs whatever --select and
    --ignore say: the stored scan holds them all, and `selected` narrows the result."""
    findings: list[Finding] = []
    for rule_id, check in all_checks().items():
        if (rule_id in FILE_RULES) == file_rules:
            findings.extend(check(ctx))
    return findings


def selected(result: ScanResult, options: ScanOptions) -> ScanResult:
    """The result with only the findings of the rules --select and --ignore leave running."""
    if not options.select and not options.ignore:
        return result
    chosen = set(resolve_all(options.select)) if options.select else set(all_checks())
    dropped = (set(all_checks()) - chosen) | set(resolve_all(options.ignore))
    return replace(result, findings=tuple(f for f in result.findings if f.rule not in dropped))


def narrowed(result: GateResult, wider: tuple[Target, ...], targets: tuple[Target, ...]) -> GateResult:
    """A gate's result judged for the `wider` targets, as a judgement for `targets` (some of them)
    alone gives it: the verdicts of the excluded targets among them (each judged on its own, one
    per excluded target in order, named for its build), and the analyses of the builds they admit."""
    gate, kept = result.gate, set(targets)
    verdicts = tuple(v for t, v in zip(excluded_targets(gate, wider), result.excluded) if t in kept)
    builds = {build_target(gate, t)[0] for t in targets if t.cc in set(gate.admits)}
    return GateResult(gate, result.sources, verdicts, tuple(a for a in result.admitted if a.target in builds), result.layers)


def _gate_report(result: GateResult, targets: tuple[Target, ...]) -> GateReport:
    gate = result.gate
    return GateReport(gate.id, gate.text, gate_location(gate), admitted_targets(gate, targets), result.excluded,
                      result.sources, gate.local_function, gate.arch_test)


def admitted_targets(gate: Gate, targets: tuple[Target, ...]) -> tuple[str, ...]:
    """What the gate lets through, in arch order: the evaluated targets it admits and the default
    targets of the other compute capabilities it admits, so `--target` narrowing the scan does not
    hide them."""
    evaluated = [build_target(gate, t)[0] for t in targets if t.cc in set(gate.admits)]
    seen = {t.cc for t in evaluated}
    others = [t for t in default_targets() if t.cc in set(gate.admits) and t.cc not in seen]
    return tuple(t.name for t in sorted({*evaluated, *others}))
