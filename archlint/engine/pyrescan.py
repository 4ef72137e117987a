"""A re-scan after Python files changed and nothing else: the Python side again, the CUDA side kept.

The Python stages run as in a full scan (their facts come from the facts cache but for the
changed files), so the gates, their units and the variant macros are what a full scan finds. The
CUDA side is the stored state's: the index is built from the stored links and loads a file's
facts only when a verdict asks (engine.rescan); the units the gates' custom-op calls reach are
linked through it, as a full scan links them. A gate found again with the same units (its
spec, flags and sources: everything its verdicts read besides the CUDA files) keeps its stored
result; any other is judged. The file rules run again on the files whose compiling builds or
whose place among the files no gate builds changed. The host checks' gates (gates.host) read the
CUDA side alone and keep their stored results. Whatever the CUDA side depends on beyond the
stored state — the sources rendered from templates, the templates' filled holes, a gate's units
reaching a file read for its directives only, a scan that gains or loses all its Python gates —
makes this return None, and the caller runs a full scan.
"""

from __future__ import annotations

from dataclasses import replace

from archlint.checks.context import Context, GateResult, live_table
from archlint.engine.cxx_tiles import relinked_cxx_tiles
from archlint.engine.cache import FactsCache
from archlint.engine.linkstore import lazy_index
from archlint.engine.rescan import LazyFacts, LazyFunctions, free_of
from archlint.engine.steps import (assemble_result, findings_by_file, judge_gate, run_checks, scan_targets,
                                   suppressions_of, user_defines, with_tactic_sizes)
from archlint.link.cuda import include_closure
from archlint.engine.pyanswers import PyRecord
from archlint.engine.stateparts import read_part
from archlint.engine.store import GateMemo, OpLinking, ScanState, ScanStore
from archlint.engine.timing import plan, stage, stage_progress
from archlint.extract.files import Workers
from archlint.gates.ops import called_ops, op_linked, through_ops
from archlint.judge.view import Judging
from archlint.knowledge.kb import load_kb
from archlint.link.templates import read_templates
from archlint.model.files import Discovery
from archlint.model.gates import HOST_KIND, GuardedUnits
from archlint.model.scan import ScanOptions, ScanResult

PYRESCAN_STAGES = ("discover", "facts", "pylink", "outline", "verdicts", "checks")  # numbered on the progress line


def python_rescan(options: ScanOptions, discovery: Discovery, cache: FactsCache, store: ScanStore,
                  previous: tuple[dict[str, tuple[str, str]], ScanState]) -> tuple[ScanResult, ScanState] | None:
    """(result, state) of the scan from `previous` (a stored state of this scan's very targets and
    the files it saw) when only Python files changed, or None when a full scan is needed."""
    from archlint.engine.linking import python_side_apart  # deferred: as engine.pipeline's full scan
    from archlint.engine.relink import relinked_side  # deferred: as above

    digests, state = previous
    changed = store.changed_files(digests, discovery.files)
    if (not changed or any(file.language != "python" for file in changed)
            or tuple(discovery.diagnostics) != state.discovery_diagnostics):
        return None
    targets = scan_targets(options)
    if tuple(t.name for t in targets) != state.targets:
        return None  # a state of more targets: its results would need narrowing and more
    plan(PYRESCAN_STAGES)
    with Workers(options.jobs) as workers:
        side = relinked_side(options, discovery, cache, state, changed, digests, workers)
        if side is None:
            side = python_side_apart(options, discovery, cache, False, workers)
    if (side.generated != state.generated or (not side.relinked and read_templates(side.facts) != state.templates)
            or side.tile_lists != tuple(t for t in state.tile_lists if not t.fact.kind)
            or bool(side.judged) != (state.free_sources is not None)):
        return None
    # the host checks' gates read the CUDA side alone (gates.host), which a Python edit leaves as stored
    host = [(m, r) for m, r in zip(state.memos, state.results) if m.gate.kind == HOST_KIND]
    links = state.links
    known = set(links.paths)
    facts = LazyFacts({f.path: f for f in discovery.files if f.path in known}, state.templates, cache,
                      options.max_file_bytes, state.shallow)
    index = lazy_index(links, facts, LazyFunctions(facts, links))
    judging = Judging(index, load_kb())
    # the units custom-op calls reach, linked through the stored CUDA side as a full scan links them
    gated = through_ops(list(side.judged), side.ops, index, [(m.gate, m.units) for m, _ in host], side.wholes,
                        _linked_before(side, state))
    stored: dict[tuple[str, int, int], list[tuple[GateMemo, GateResult]]] = {}
    for memo, result in zip(state.memos, state.results):
        if memo.gate.kind != HOST_KIND:
            stored.setdefault(_place(memo), []).append((memo, result))
    with stage("verdicts", len(gated), "gates"):
        overrides, parts = user_defines(options), dict[object, object]()
        memos: list[GateMemo] = []
        results: list[GateResult] = []
        kept: set[int] = set()  # ids of the stored results kept
        judged: list[GateResult] = []
        for gate, units in gated:
            found = next(((m, r) for m, r in stored.get((gate.path, gate.line, gate.col), ())
                          if m.gate == gate and m.units == units and id(r) not in kept), None)
            if found is not None:
                memo, result = found
                kept.add(id(result))
            else:
                memo = GateMemo(gate, units, include_closure(index, units.sources))
                if memo.deps & state.shallow:
                    return None  # the units reach a file read for its directives only
                result = judge_gate(gate, units, judging, targets, overrides, parts)
                judged.append(result)
            memos.append(memo)
            results.append(result)
            stage_progress(len(results), len(gated))
        for memo, result in host:
            memos.append(memo)
            results.append(result)
            kept.add(id(result))
    gone = [result for result in state.results if id(result) not in kept]
    sources = side.sources if side.judged else None
    # the CUDA files and their links are the stored ones: the same sources leave the same files free
    free = state.free if sources == state.free_sources else free_of(discovery, index, sources)
    if host and free != state.free:
        # the Python gates' units now include other files: a full scan reads other files in full,
        # and the host checks' reach follows the definitions of those it reads
        return None
    with stage("checks"):
        keys = {key for result in (*judged, *gone) for analysis in result.admitted for key in analysis.reached}
        before, after = live_table(state.results, keys), live_table(results, keys)
        moved = {path for path, function in keys if before.get((path, function)) != after.get((path, function))}
        paths = tuple(sorted((free ^ state.free) | moved))
        # the C++ tiles of the gates kept stand as stored; those of the gates judged again are linked anew
        present = {m.gate.id for m in memos}
        stored_tiles = tuple(t for t in state.tile_lists if not t.fact.kind or t.gate in present)
        tile_lists = relinked_cxx_tiles(discovery.root, index, stored_tiles, [(m.gate, m.units, m.deps) for m in memos],
                                        {result.gate.id for result in judged})
        ctx = with_tactic_sizes(options, discovery.root, Context.judged(judging, targets, tuple(results), paths, free,
                                                                       tile_lists))
        gate_findings = run_checks(ctx, file_rules=False)
        rechecked = findings_by_file(run_checks(ctx, file_rules=True))
    # python_side reads them (engine.relink the changed Python files alone)
    python = ({f.file.path for f in side.facts} if side.relinked
              else {f.path for f in discovery.files if f.language in ("python", "template", "binary", "cmake")})
    host_linked = state.host_linked if _same_op_calls(side, state) else op_linked(index, side.ops)
    new_state = replace(
        state,
        links=links,
        memos=tuple(memos),
        results=tuple(results),
        file_findings={**{k: v for k, v in state.file_findings.items() if k[1] not in set(paths)}, **rechecked},
        file_diagnostics={**_cuda_only(state.file_diagnostics, python), **{f.file.path: f.diagnostics for f in side.facts if f.diagnostics}},
        suppressions={**_cuda_only(state.suppressions, python), **{f.file.path: suppressions_of(f) for f in side.facts if suppressions_of(f)}},
        free=free,
        tile_lists=tile_lists,
        binaries=side.binaries,
        free_sources=sources,
        host_linked=host_linked,
        op_linking=_op_linking(side, host_linked, state),
        pylink=side.record,
        pynames=side.names,
    )
    return assemble_result(discovery.root, len(discovery.files), ctx, gate_findings, new_state), new_state


def _linked_before(side, state: ScanState) -> dict[str, GuardedUnits | None] | None:
    """What linking their op calls gave the gates whose answers engine.relink kept (their units and
    op calls are the stored link's): the stored memo's units, or None where it dropped the gate."""
    if side.fresh is None:
        return None
    before = {memo.gate.id: memo.units for memo in state.memos if memo.gate.kind != HOST_KIND}
    return {gate.id: before.get(gate.id) for gate, _ in side.judged
            if gate.id not in side.fresh and side.ops.get(gate.id, ((), None))[0]}


def _op_linking(side, host_linked: bool, state: ScanState) -> OpLinking | None:
    """What the op calls were linked from, where they are linked; else None, as stored where they
    were not before either (the part is kept as written, not read)."""
    if host_linked:
        return OpLinking(tuple(side.judged), side.ops, side.wholes)
    return state.op_linking if not state.host_linked else None


def _same_op_calls(side, state: ScanState) -> bool:
    """Whether the gates' op calls name the ops the stored link's did (the CUDA side registering
    them being the stored one, whether one is registered stands)."""
    record = read_part(state.pylink)
    if not side.relinked or not isinstance(record, PyRecord):
        return False
    before = {answer.gate.id: (answer.reached, answer.namespaces) for answer in record.answers if answer.gated}
    return called_ops(before) == called_ops(side.ops)


def _place(memo: GateMemo) -> tuple[str, int, int]:
    return memo.gate.path, memo.gate.line, memo.gate.col


def _cuda_only(table: dict, python: set[str]) -> dict:
    return {path: value for path, value in table.items() if path not in python}
