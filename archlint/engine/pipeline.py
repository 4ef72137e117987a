"""The scan pipeline: a stored result for an unchanged tree or for one whose changed files kept their
facts (engine.samefacts), a partial re-scan when only CUDA files changed (engine.rescan) or only
Python files (engine.pyrescan), else a full scan (engine.linking, then the checks); engine.scan()
is its public door."""

from __future__ import annotations

import os
from dataclasses import replace

from archlint.discover import discover
from archlint.engine.cache import open_cache
from archlint.engine.collector import collector_paused
from archlint.engine.roots import analysed
from archlint.engine.store import ScanState, ScanStore, StoredReport
from archlint.engine.timing import SCAN_STAGES, hint, plan, stage
from archlint.postprocess.paths import gate_paths, rebase
from archlint.model.scan import ScanOptions, ScanResult

# A scan whose stored result stands (nothing changed) loads none of the re-scans, the judging or
# the checks: each of those is imported where it is first needed.


def run(options: ScanOptions, eager: bool = False) -> ScanResult:
    """The scan, reusing a stored result for an unchanged tree and re-judging only what a changed
    CUDA file can reach when the rest is unchanged. `eager` (or ARCHLINT_EAGER=1) reads every file
    in full, as a reference for the on-demand reading: both give the same result."""
    return scanned(options, eager)[0]


def scanned(options: ScanOptions, eager: bool = False) -> tuple[ScanResult, StoredReport | None]:
    """The scan's result, and where a report rendered from it is kept while the result is the
    stored one (None where nothing is stored: --no-cache, or a file changed within the racy window)."""
    eager = eager or bool(os.environ.get("ARCHLINT_EAGER"))
    with collector_paused(freeze=True):
        return _run(options, eager)


def _run(options: ScanOptions, eager: bool) -> tuple[ScanResult, StoredReport | None]:
    plan(SCAN_STAGES)
    with stage("discover"):
        found = discover(options.paths, options.exclude)
        discovery, options = analysed(found, options)
        cache = open_cache(options)
        store = ScanStore.open(cache, options, discovery) if cache is not None else None
    if store is not None and store.is_new():
        hint("first scan of this tree: the facts it reads are cached, so the next scans take a fraction of the time")
    result = store.unchanged_result() if store is not None else None
    if result is None and store is not None:
        result = _same_facts(options, discovery, cache, store)
    if result is None:
        done = _from_store(options, discovery, cache, store) if store is not None else None
        result, state = done or _full_scan(options, discovery, cache, eager)
        if store is not None:
            store.save(result, state)
    if cache is not None:
        cache.flush()
    # the way out of the engine, for the stored report's key: the findings named files and rules
    # keep, then the paths rebased onto the scan root (the front end rebases them again onto its
    # report root, which holds the scan root: its key covers that root, and both ways end there)
    way_out = repr((options.report_paths, options.select, options.ignore)).encode()
    report = store.report(result, discovery.root, way_out) if store is not None else None
    return rebase(_selected(_only_reported(result, options.report_paths), options), found.root), report


def _selected(result: ScanResult, options: ScanOptions) -> ScanResult:
    if not options.select and not options.ignore:
        return result
    from archlint.engine.steps import selected  # deferred: the rules' checks load with it

    return selected(result, options)


def _from_store(options: ScanOptions, discovery, cache, store: ScanStore) -> tuple[ScanResult, ScanState | None] | None:
    """The scan from a stored state: of a scan for more targets whose result is of this very tree
    (narrowed; only the result is stored, the wider state stays the one to start from), else of
    this scan's own targets or the newest scan for more (re-scanned in part). None: a full scan."""
    from archlint.engine.linkstore import DamagedState  # deferred: see the imports above
    from archlint.engine.rescan import rescan  # deferred: as above

    wider = store.wider()
    current = [slot for slot in wider[:1] if store.is_current(slot)]
    for slot in dict.fromkeys([*current, store.slot, *wider[:1]]):
        previous = store.previous_state(slot)
        if previous is None:
            continue
        try:
            done = rescan(options, discovery, cache, store, previous) or _python_rescan(options, discovery, cache, store, previous)
        except DamagedState:  # a stored part that no longer matches its checksum
            done = None
        if done is not None:
            return done[0], None if slot in current else done[1]
    return None


def _same_facts(options: ScanOptions, discovery, cache, store: ScanStore) -> ScanResult | None:
    from archlint.engine.samefacts import same_facts_result  # deferred: see the imports above

    return same_facts_result(options, discovery, cache, store)


def _python_rescan(options: ScanOptions, discovery, cache, store: ScanStore, previous):
    from archlint.engine.pyrescan import python_rescan  # deferred: a re-scan of changed CUDA files never loads the Python side

    return python_rescan(options, discovery, cache, store, previous)


def _full_scan(options: ScanOptions, discovery, cache, eager: bool) -> tuple[ScanResult, ScanState]:
    from archlint.engine.linking import link_files  # deferred: a re-scan of changed CUDA files never loads the Python side
    from archlint.engine.linkstore import stored_links  # deferred: see the imports above
    from archlint.engine.steps import assemble_result, findings_by_file, run_checks, suppressions_of  # deferred: as above
    from archlint.link.templates import read_templates  # deferred: as above

    plan(SCAN_STAGES)  # again, after a re-scan that gave way
    linked = link_files(options, discovery, cache, eager)
    ctx = linked.context
    with stage("checks"):
        gate_findings = run_checks(ctx, file_rules=False)
        file_findings = findings_by_file(run_checks(ctx, file_rules=True))
    state = ScanState(
        generated=linked.generated,
        templates=read_templates(linked.facts) | _written_units(linked),
        links=stored_links(linked.index),
        memos=linked.memos,
        results=ctx.gate_results,
        file_findings=file_findings,
        file_diagnostics={f.file.path: f.diagnostics for f in linked.facts if f.diagnostics},
        suppressions={f.file.path: suppressions_of(f) for f in linked.facts if suppressions_of(f)},
        discovery_diagnostics=tuple(discovery.diagnostics),
        shallow=linked.shallow,
        targets=tuple(t.name for t in ctx.targets),
        free=ctx.free,
        tile_lists=ctx.tile_lists,
        binaries=linked.binaries,
        free_sources=linked.free_sources,
        host_linked=linked.host_linked,
        host_names=linked.host_names,
        host_first=linked.host_first,
        host_words=linked.host_words,
        pylink=linked.pylink,
        pynames=linked.pynames,
        op_linking=linked.op_linking,
    )
    return assemble_result(linked.root, len(discovery.files), ctx, gate_findings, state), state


def _only_reported(result: ScanResult, report_paths: tuple[str, ...]) -> ScanResult:
    """Pre-commit style: the findings in the named files, or whose evidence runs through them."""
    if not report_paths:
        return result
    wanted = set(report_paths)
    findings = tuple(f for f in result.findings if f.location.path in wanted or any(e.location.path in wanted for e in f.evidence))
    # the gates the report shows (postprocess.apply): those whose verdicts rest on a named file
    # (rebasing every gate of a large tree for a hook's few took half a second)
    return replace(result, findings=findings, gates=tuple(g for g in result.gates if not wanted.isdisjoint(gate_paths(g))))


def _written_units(linked) -> dict:
    """The units a build writes from a generator's templates (no file of the scan holds them): a
    partial re-scan takes their facts from the stored state, as a template's."""
    known = {f.path for f in linked.discovery.files}
    return {f.file.path: f.cuda for f in linked.facts if f.file.path not in known and f.cuda is not None}
