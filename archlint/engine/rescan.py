"""A partial re-scan: after a few CUDA files changed, re-judge only what they can reach.

Starting from the stored state of the last scan of the same scope, the changed files' facts are
extracted and the index is rebuilt from every file's stored links plus theirs; the other files'
links are unpickled, and their facts loaded from the facts cache, only when judging or a check asks
for them (engine.linkstore). A gate is judged again
when a changed file is among the files its units can include (its verdicts read nothing else but
the scan-wide macro table); the file rules run again on the changed files and on the files whose
compiling builds changed. The gates linked scan-wide (host checks, op calls) are kept, or
derived again from the index where a changed file can change them (engine.hostlinks). A changed
Python file whose facts are those it had (a comment added at its end) changes nothing. Whenever a
change could reach further than that — a file added or removed, a Python file's facts changed, a
changed #define, or gates appearing or disappearing — this returns None and the caller runs a
full scan.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from archlint.checks.context import Context, GateResult, live_table
from archlint.engine.cxx_tiles import relinked_cxx_tiles
from archlint.engine.linkstore import StoredLinks, lazy_index, with_links
from archlint.engine.steps import (
    assemble_result,
    findings_by_file,
    judge_gate,
    narrowed,
    relative_dirs,
    run_checks,
    scan_targets,
    suppressions_of,
    user_defines,
    with_tactic_sizes,
)
from archlint.engine.freefiles import free_files
from archlint.engine.hostlinks import FULL, UNTOUCHED, derived_memos, host_change
from archlint.engine.samefacts import same_python_facts
from archlint.engine.store import ScanState
from archlint.engine.timing import part_progress, plan, stage, stage_progress
from archlint.extract.files import DIRECTIVES, extract_all, extract_file
from archlint.judge.view import Judging
from archlint.knowledge.arch import Target, parse_target
from archlint.knowledge.kb import load_kb
from archlint.link.cuda import file_links, include_closure, resolver_for
from archlint.model.files import FileFacts


class LazyFacts(Mapping):
    """path -> CudaFacts for every CUDA file, loaded from the facts cache when first asked for: the
    directive-level facts of a file the scan read for its directives only (`shallow`), else its
    full facts."""

    def __init__(self, files: dict, fresh: dict, cache, max_bytes: int, shallow: frozenset[str] = frozenset()):
        self._files = files  # path -> SourceFile
        self._loaded = dict(fresh)
        self._cache = cache
        self._max_bytes = max_bytes
        self._shallow = shallow

    def __getitem__(self, path: str):
        if path not in self._loaded:
            file = self._files[path]  # KeyError for a path that is not a CUDA file
            if path in self._shallow:
                facts = self._cache.get(replace(file, language=DIRECTIVES)) or extract_file(file, self._max_bytes, directives=True)
            else:
                facts = self._cache.get(file) or extract_file(file, self._max_bytes)
            self._loaded[path] = facts.cuda
        return self._loaded[path]

    def __contains__(self, path: object) -> bool:
        return path in self._files or path in self._loaded  # a unit a build writes is only loaded

    def __iter__(self):
        return iter({**dict.fromkeys(self._files), **dict.fromkeys(self._loaded)})

    def __len__(self) -> int:
        return len(self._files.keys() | self._loaded.keys())


class LazyFunctions(Mapping):
    """name -> ((path, Function), ...) as link.build_index makes it, loading only the files named."""

    def __init__(self, facts: LazyFacts, links: StoredLinks):
        self._facts = facts
        self._paths: dict[str, list[str]] = {}
        for path in links.paths:
            for name in dict.fromkeys(links.function_names[path]):
                self._paths.setdefault(name, []).append(path)
        self._built: dict[str, tuple] = {}

    def __getitem__(self, name: str):
        if name not in self._built:
            paths = self._paths[name]
            self._built[name] = tuple((path, f) for path in paths for f in self._facts[path].functions if f.name == name)
        return self._built[name]

    def __contains__(self, name: object) -> bool:
        return name in self._paths

    def __iter__(self):
        return iter(self._paths)

    def __len__(self) -> int:
        return len(self._paths)


RESCAN_STAGES = ("discover", "facts", "index", "verdicts", "checks")  # numbered on the progress line


def rescan(options, discovery, cache, store, previous):
    """(result, state) of the scan from `previous` (a stored state and the files it saw, of this
    scan's targets or more: store.ScanStore.wider), or None when a full scan is needed."""
    digests, state = previous
    changed = store.changed_files(digests, discovery.files)
    if changed is None or tuple(discovery.diagnostics) != state.discovery_diagnostics:
        return None
    python = [file for file in changed if file.language == "python"]
    if python and not same_python_facts(python, digests, cache, options):
        return None
    changed = [file for file in changed if file.language != "python"]
    if any(file.language in ("template", "binary", "cmake") for file in changed):
        return None
    plan(RESCAN_STAGES)
    with stage("facts", len(changed)):
        fresh = extract_all(changed, options.jobs, options.max_file_bytes, cache, progress=part_progress())
    change = host_change(fresh, state, digests, cache)
    if change == FULL:
        return None
    with stage("index"):
        links = _updated_links(state.links, state.generated, fresh, options, discovery)
        if links is None:
            return None
        known = set(links.paths)
        loaded = {**state.templates, **{f.file.path: f.cuda for f in fresh}}
        changed_paths = {f.file.path for f in fresh}
        shallow = state.shallow - changed_paths
        facts = LazyFacts({f.path: f for f in discovery.files if f.path in known}, loaded, cache, options.max_file_bytes, shallow)
        index = lazy_index(links, facts, LazyFunctions(facts, links))
        derived = (state.memos, state.host_names) if change == UNTOUCHED else derived_memos(state, index)
        if derived is None:
            return None
        stored_memos, host_names = derived
    with stage("verdicts"):
        judging, targets = Judging(index, load_kb()), scan_targets(options)
        before, narrowing = _narrowed(state, targets)
        overrides = user_defines(options)
        memos, results, rejudged, parts = [], [], [], {}
        for memo, stored, old in zip(stored_memos, state.memos, before):
            if memo is not stored or memo.deps & changed_paths:
                memo = replace(memo, deps=include_closure(index, memo.units.sources))
                if memo.deps & shallow:
                    return None  # the change reaches a file read for its directives only
                new = judge_gate(memo.gate, memo.units, judging, targets, overrides, parts)
                rejudged.append((old, new))
                old = new
            memos.append(memo)
            results.append(old)
            stage_progress(len(results), len(state.memos))
    free = free_of(discovery, index, state.free_sources) if rejudged else state.free
    with stage("checks"):
        paths = tuple(sorted(changed_paths | narrowing | (free ^ state.free) | live_changed(before, tuple(results), rejudged)))
        # the C++ tiles of the gates judged again are read again: an edited launcher or template changes them
        again = {new.gate.id for _, new in rejudged}
        tile_lists = relinked_cxx_tiles(discovery.root, judging.index, state.tile_lists,
                                        [(m.gate, m.units, m.deps) for m in memos], again)
        ctx = with_tactic_sizes(options, discovery.root, Context.judged(judging, targets, tuple(results), paths, free,
                                                                       tile_lists))
        gate_findings = run_checks(ctx, file_rules=False)
        rechecked = findings_by_file(run_checks(ctx, file_rules=True))
    kept = {key: value for key, value in state.file_findings.items() if key[1] not in set(paths)}
    new_state = replace(
        state,
        links=links,
        memos=tuple(memos),
        results=tuple(results),
        file_findings={**kept, **rechecked},
        file_diagnostics=replaced(state.file_diagnostics, {f.file.path: f.diagnostics for f in fresh}),
        suppressions=replaced(state.suppressions, {f.file.path: suppressions_of(f) for f in fresh}),
        shallow=shallow,
        targets=tuple(t.name for t in targets),
        free=free,
        tile_lists=tile_lists,
        host_names=host_names,
    )
    return assemble_result(discovery.root, len(discovery.files), ctx, gate_findings, new_state), new_state


def _narrowed(state: ScanState, targets: tuple[Target, ...]) -> tuple[tuple[GateResult, ...], set[str]]:
    """The stored gate results as a scan for `targets` gives them, and the files whose file-rule
    findings may differ. The state may be of more targets than these (and never of others): then
    each result keeps the verdicts and admitted builds of these targets, and the file rules run
    again on the files they had findings in. Those are the only files that can change: with fewer
    targets, fewer builds compile each function, and every file rule reports a subset of what it
    reported with more (AL202's "empty on some but not all" holds for the fewer only where it held)."""
    wider = tuple(parse_target(name) for name in state.targets)
    if wider == targets:
        return state.results, set()
    return tuple(narrowed(r, wider, targets) for r in state.results), {path for _, path in state.file_findings}


def free_of(discovery, index, sources: tuple[str, ...] | None) -> frozenset[str]:
    """The CUDA files no gate's units can include, as a full scan tells them: from the units of the
    Python gates and the build lists (`sources`; None: there are none, and no file is free)."""
    if sources is None:
        return frozenset()
    return free_files((f.path for f in discovery.files if f.language == "cuda"), include_closure(index, sources))


def _updated_links(stored: StoredLinks, generated: dict[str, str], fresh: list[FileFacts], options, discovery) -> StoredLinks | None:
    """The stored links with the changed files' replaced, or None if a scan-wide table changed."""
    resolver = resolver_for(stored.paths, relative_dirs(options.include_dirs, discovery.root), generated)
    changed = {}
    for facts in fresh:
        if facts.cuda is None or facts.file.path not in stored.pickled:
            return None
        new = file_links(resolver, facts.cuda)
        old = stored.links(facts.file.path)
        if new.bindings != old.bindings or new.macro_calls != old.macro_calls or new.trap_macros != old.trap_macros:
            return None
        changed[facts.file.path] = new
    return with_links(stored, changed)


def live_changed(before: tuple[GateResult, ...], after: tuple[GateResult, ...],
                  rejudged: list[tuple[GateResult, GateResult]]) -> set[str]:
    """Files for which some function's compiling builds differ between the live tables of the
    results before and after. Only the re-judged gates' results differ, so only the functions
    their admitted builds compile, before or after, can: the tables are compared on those."""
    keys = {key for pair in rejudged for result in pair for analysis in result.admitted for key in analysis.reached}
    if not keys:
        return set()
    old, new = live_table(before, keys), live_table(after, keys)
    return {path for path, function in keys if old.get((path, function)) != new.get((path, function))}


def replaced(table: dict, updates: dict) -> dict:
    out = {path: value for path, value in table.items() if path not in updates}
    out.update({path: value for path, value in updates.items() if value})
    return out
