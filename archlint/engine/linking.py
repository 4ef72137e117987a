"""Every stage of a full scan before the checks: the Python facts, linking and gates, the CUDA files
the gates' units can include, the index and the verdicts."""

from __future__ import annotations

import signal
from collections.abc import Callable
from contextlib import AbstractContextManager, ExitStack, nullcontext
from dataclasses import dataclass, field, replace

from archlint.checks.context import Context
from archlint.discover import discover
from archlint.engine.cxx_tiles import linked_cxx_tiles
from archlint.engine.collector import collector_paused
from archlint.engine.freefiles import free_files, worth_reading
from archlint.engine.pyanswers import PyRecord, Recorder, find_gates, link_gates, link_sources
from archlint.engine.pysource import NameTables, PythonFiles
from archlint.engine.steps import (
    SCAN_STAGES,
    generated_files,
    judge_gate,
    open_cache,
    relative_dirs,
    scan_targets,
    user_defines,
    with_tactic_sizes,
)
from archlint.engine.store import GateMemo, OpLinking
from archlint.engine.timing import (TimingState, part_progress, plan, resume_timing, skip, stage, stage_progress,
                                   timing_state)
from archlint.extract.binary import extract_binary
from archlint.extract.files import Workers, extract_all, extract_generated, extract_into
from archlint.extract.python.markers import markers
from archlint.gates.build_lists import cmake_gates, generated_units
from archlint.link.generators import named_scripts
from archlint.gates.host import host_gates
from archlint.gates.ops import op_linked, through_ops
from archlint.gates.variants import with_absent_variant_macros
from archlint.judge.view import Judging
from archlint.knowledge.arch import parse_toolkit
from archlint.knowledge.host import load_host
from archlint.knowledge.idioms import load_idioms
from archlint.knowledge.kb import load_kb
from archlint.lang.cpp.lexical import whole_words
from archlint.link.binary import ExtensionIndex
from archlint.link.cuda import CudaIndex, build_index, include_closure
from archlint.link.python import PACKAGE_IMPORTS, PyIndex
from archlint.link.templates import fill_holes
from archlint.model.binary import BinaryFacts
from archlint.model.cuda import CudaFacts
from archlint.model.files import Discovery, FileFacts, SourceFile
from archlint.model.gates import Gate, GuardedUnits
from archlint.model.tactics import LinkedTileList
from archlint.model.python import PythonFacts
from archlint.model.scan import ScanOptions


@dataclass(frozen=True)
class Linked:
    """Everything the stages before the checks produce: what `archlint graph` draws."""

    root: str
    facts: tuple[FileFacts, ...]
    discovery: Discovery
    index: CudaIndex
    pyindex: PyIndex | None  # None once a scan has linked its gates (archlint graph keeps it)
    context: Context
    generated: dict[str, str]  # files the JIT renders from templates: name -> template path
    memos: tuple[GateMemo, ...] = ()  # one per judged gate, in the order of context.gate_results
    # CUDA files read for their directives only: no gate's units can include them
    shallow: frozenset[str] = frozenset()
    binaries: tuple[BinaryFacts, ...] = ()  # the prebuilt extension modules' images
    free_sources: tuple[str, ...] | None = None  # what `free` is told from (store.ScanState)
    host_linked: bool = False  # some gate's op calls name an op the scan registers (gates.ops links them)
    host_names: frozenset[str] = frozenset()  # the names the host checks' reach looked up (gates.host)
    host_first: frozenset[str] = frozenset()  # the host files read in full first (_host_files)
    host_words: tuple[str, ...] = ()  # the words that chose them
    pylink: PyRecord | None = None  # what each answer of the Python link read (engine.relink)
    pynames: NameTables | None = None  # which Python file spells which names, with it
    op_linking: OpLinking | None = None  # what the op calls were linked from, where host_linked


def link(options: ScanOptions, eager: bool = True) -> Linked:
    """Every stage before the checks. `archlint graph` draws every file, so it reads all of them in
    full by default."""
    plan(SCAN_STAGES[:-1])  # no checks: what `archlint graph` draws comes before them
    with stage("discover"):
        discovery = discover(options.paths, options.exclude)
        cache = open_cache(options)
    try:
        with collector_paused(freeze=True):
            return link_files(options, discovery, cache, eager, keep_python=True)
    finally:
        if cache is not None:
            cache.flush()


def link_files(options: ScanOptions, discovery: Discovery, cache, eager: bool, keep_python: bool = False) -> Linked:
    """`keep_python`: the Python index and every Python file's facts stay in the result (else only
    what a Python file reports is kept once the gates are linked)."""
    with Workers(options.jobs) as workers:
        return _link_with(options, discovery, cache, eager, workers, keep_python)


@dataclass(frozen=True)
class PythonSide:
    """What the Python stages give the rest of a scan: every Python file's and template's facts
    (what a Python file reports, unless kept whole), the gates with their units, ready to judge,
    the CUTLASS tile lists, and the sources the JIT renders from templates."""

    facts: list[FileFacts]
    judged: list[tuple[Gate, GuardedUnits]]
    sources: tuple[str, ...]  # every source the gates' units name
    tile_lists: tuple[LinkedTileList, ...]
    generated: dict[str, str]
    pyindex: PyIndex | None
    binaries: tuple[BinaryFacts, ...] = ()  # the prebuilt extension modules' images
    # gate id -> the custom-op calls its code makes (gates.ops) and the op namespaces Python defines
    ops: dict[str, tuple] = field(default_factory=dict)
    # the build's own lists (model.gates.WHOLE_BUILD_KIND): never judged, the last link of an op's chain
    wholes: tuple[tuple[Gate, GuardedUnits], ...] = ()
    record: PyRecord | None = None  # what each answer of the link read (engine.relink), where a state is stored
    names: NameTables | None = None  # which Python file spells which names, with the record
    # engine.relink's: `facts` holds the changed Python files' alone, the rest stand as stored
    relinked: bool = False
    fresh: frozenset[str] | None = None  # engine.relink's: the ids of the gates whose answers it computed again


def python_side(options: ScanOptions, discovery: Discovery, cache, eager: bool, workers: Workers,
                keep_python: bool = False, cuda_next: bool = False) -> PythonSide:
    """Every file's bytes, full facts for those the byte prefilter picks and those whose conditions
    can read the capability, then whatever linking asks for; the rest are outlined (diagnostics and
    suppressions). `cuda_next`: a full scan's, whose includes stage outlines the CUDA files next.
    Where a scan state is stored, what each answer of the link read is recorded with it (engine.relink)."""
    root = discovery.root
    recording = cache is not None and not eager
    with ExitStack() as scope:
        with stage("facts") as touched:
            facts = _extract([f for f in discovery.files if f.language == "template"], options, cache, workers)
            # headers only, a few reads per translation unit: not worth a cache entry
            facts += [extract_binary(f) for f in discovery.files if f.language == "binary"]
            binaries = tuple(f.binary for f in facts if f.binary is not None)
            python = PythonFiles([f for f in discovery.files if f.language == "python"], options.max_file_bytes,
                                 lambda todo, outline: _extract(todo, options, cache, workers, directives=outline),
                                 None if eager else markers(load_idioms()), PACKAGE_IMPORTS, workers)
            pyindex = _python_index(python, root, discovery, eager)
            recorder = Recorder(pyindex) if pyindex is not None else None
            if pyindex is not None and recording:
                scope.enter_context(pyindex.reads.recording())
            sources = link_sources(pyindex, recorder, conditions=not eager) if pyindex is not None and recorder else ()
            touched.files = len(facts) + len(python.full)
        workers.close()  # they hold what the largest kernels of the prefilter took
        ahead = cuda_next and not eager and not keep_python
        with _outlined_meanwhile(discovery, options, cache, workers) if ahead else nullcontext(), stage("pylink") as touched:
            before = len(python.full)
            gated: list[tuple[Gate, GuardedUnits]] = []
            ops: dict[str, tuple] = {}
            linked, names = None, None
            if pyindex is not None and recorder is not None:
                found = find_gates(pyindex, parse_toolkit(options.toolkit) if options.toolkit else None, recorder)
                with recorder.whole_tree():
                    facts = fill_holes(pyindex, facts)
                # a capability test with no kernel build behind it has nothing to judge
                extensions = ExtensionIndex.of(binaries, {f.path for f in discovery.files}, [root])
                linked = link_gates(pyindex, found, extensions, recorder, sources, recording)
                names = python.tables() if recording else None
                gated, ops = gated_of(linked.answers)
            built, wholes, more = _cmake_side(discovery, options, cache, workers)
            gated += built
            facts = facts + more
            touched.files = len(python.full) - before
    generated = generated_files(pyindex)
    with stage("outline", len(python.modules) - len(python.full)):
        python.release()
        read = list(python.full.values()) + python.outlined()
        if not keep_python:  # what the rest of a scan reads of a Python file: what it reports
            python.full.clear()
            pyindex, read = None, [_reported_only(f) for f in read]
        facts = facts + read
    workers.close()
    variants, passed = (linked.variants, linked.passed) if linked else (frozenset[str](), frozenset[str]())
    judged, sources_named = judged_gates(gated, variants, passed)
    return PythonSide(facts, judged, sources_named, linked.tile_lists if linked else (), generated, pyindex, binaries, ops,
                      tuple(wholes), linked.record if linked else None, names)


def judged_gates(gated: list[tuple[Gate, GuardedUnits]], variants: frozenset[str],
                 passed: frozenset[str]) -> tuple[list[tuple[Gate, GuardedUnits]], tuple[str, ...]]:
    """The gates to judge, each told the variant macros its build lacks, and every source their
    units name."""
    return with_absent_variant_macros(gated, variants, passed), tuple(sorted({s for _, units in gated for s in units.sources}))


def gated_of(answers) -> tuple[list[tuple[Gate, GuardedUnits]], dict[str, tuple]]:
    """The gates that guard something to judge, with their units, and each one's op calls."""
    gated, ops = [], {}
    for answer in answers:
        if answer.gated:
            gated.append((answer.gate, answer.units))
            ops[answer.gate.id] = (answer.reached, answer.namespaces)
    return gated, ops


def _cmake_side(discovery: Discovery, options: ScanOptions, cache, workers: Workers) -> tuple[list, list, list[FileFacts]]:
    """The build lists' gates, the build's own lists, and the CMake files' facts with the units their
    generator scripts write."""
    cmake = _extract([f for f in discovery.files if f.language == "cmake"], options, cache, workers)
    cmake_files = {f.file.path: f.cmake for f in cmake if f.cmake is not None}
    scripts = (named_scripts(cmake_files, (f.path for f in discovery.files if f.language == "python"))
               if cmake_files else ())
    built, wholes = cmake_gates(cmake_files, tuple(f.path for f in discovery.files),
                                parse_toolkit(options.toolkit) if options.toolkit else None,
                                scan_targets(options), scripts)
    return list(built), list(wholes), cmake + _generated(generated_units(built, scripts), discovery, options)


# CUDA files per batch outlined during the link: few, so a batch of the link's own finds the worker free soon
AHEAD_BATCH = 16
AHEAD_FROM = 200  # Python files: a link of fewer is over before a worker would have started


def _outlined_meanwhile(discovery: Discovery, options: ScanOptions, cache,
                        workers: Workers) -> AbstractContextManager[None]:
    """While the Python link holds one core for many seconds, a worker outlines the CUDA files into
    the cache, where the includes stage finds them; what it has not reached by the link's end is
    outlined there, as before (a full scan's, whose includes stage comes next). Only for a long link
    (a tree of AHEAD_FROM Python files or more) with a core to spare. (Where the gates turn out to
    guard no source, every CUDA file is read in full instead, and these outlines go unused.)"""
    cuda = [f for f in discovery.files if f.language == "cuda"]
    python = sum(f.language == "python" for f in discovery.files)
    if cache is None or workers.jobs < 2 or python < AHEAD_FROM or len(cuda) < 2 * AHEAD_BATCH:
        return nullcontext()
    detached = cache.detached()
    return workers.meanwhile(extract_into, [(cuda[start:start + AHEAD_BATCH], options.max_file_bytes, True, detached)
                                            for start in range(0, len(cuda), AHEAD_BATCH)])


# Python files: a tree of fewer links them in the main process, where they hold less than a
# process's start would cost (about 0.2 s)
APART_FROM = 200


def python_side_apart(options: ScanOptions, discovery: Discovery, cache, eager: bool, workers: Workers,
                      keep_python: bool = False, cuda_next: bool = False) -> PythonSide:
    """python_side, in a process of its own for a tree of many Python files. Linking a large
    package's Python code holds over 800 MiB at its peak (FlashInfer 0.7.2.post1) and gives the rest
    of the scan little of it; freed in the main process, most of it would stay there (the allocator
    keeps arenas a surviving object still uses) while the CUDA side and the verdicts run. A
    process that ends gives it all back."""
    if keep_python or sum(f.language == "python" for f in discovery.files) < APART_FROM:
        return python_side(options, discovery, cache, eager, workers, keep_python, cuda_next)
    with Workers(1) as apart:
        side, used, timing = apart.call(_python_side_alone, options, discovery, cache, eager, cuda_next, timing_state())
    resume_timing(timing)
    if cache is not None:
        cache.adopt(used)
    return side


def _python_side_alone(options: ScanOptions, discovery: Discovery, cache, eager: bool, cuda_next: bool,
                       timing: TimingState) -> tuple[PythonSide, object, TimingState]:
    resume_timing(timing)
    # the main process ends this one (Ctrl-C, an error) by SIGTERM: its own workers end with it
    signal.signal(signal.SIGTERM, _stopped)
    with Workers(options.jobs) as workers:
        side = python_side(options, discovery, cache, eager, workers, cuda_next=cuda_next)
    return side, cache, timing_state()


def _stopped(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _link_with(options: ScanOptions, discovery: Discovery, cache, eager: bool, workers: Workers,
               keep_python: bool) -> Linked:
    """Python first (python_side), then CUDA on demand: every file's directives (the macro table
    and the include graph), and full facts only for the files the gates' units can include. A scan
    whose gates guard no source, or an eager one, reads every CUDA file in full."""
    root = discovery.root
    side = python_side_apart(options, discovery, cache, eager, workers, keep_python, cuda_next=True)
    facts, gated, sources, tile_lists, generated, pyindex = (side.facts, side.judged, side.sources, side.tile_lists,
                                                            side.generated, side.pyindex)
    cuda_files = [f for f in discovery.files if f.language == "cuda"]
    include_dirs = relative_dirs(options.include_dirs, root)
    targets, kb = scan_targets(options), load_kb()
    shallow: frozenset[str] = frozenset()
    chosen: frozenset[str] = frozenset()
    words: tuple[str, ...] = ()
    if gated and not eager:
        with stage("includes", len(cuda_files)):
            outline = _extract(cuda_files, options, cache, workers, directives=True)
            outlined = build_index(_cuda_of(facts + outline), include_dirs, generated)
            needed = include_closure(outlined, sources)
            # the files no gate builds where the file rules can report something, read in full too
            needed |= worth_reading(Judging(outlined, kb), targets, free_files((f.path for f in cuda_files), needed))
            marked = [f.file for f in outline if f.cuda is not None and f.cuda.host_marked]
            early: dict[str, FileFacts] = {}
            if marked:  # host checks and op registrations: their files first, then the units they reach
                early, chosen, words = _host_files(marked, cuda_files, outlined,
                                                   lambda todo: _extract(todo, options, cache, workers))
                first = frozenset(early)
                host_units = _host_reach(build_index(_cuda_of(facts + [early.get(f.file.path, f) for f in outline]),
                                                     include_dirs, generated), gated, side.ops)
                needed |= first | include_closure(outlined, host_units)
            deep = [f for f in cuda_files if f.path in needed and f.path not in early]
        shallow = frozenset(f.path for f in cuda_files if f.path not in needed)
        with stage("unit facts", len(deep)):
            full = {**early, **{f.file.path: f for f in _extract(deep, options, cache, workers)}}
        facts = facts + [full.get(f.file.path, f) for f in outline]
    else:
        skip("includes")
        with stage("unit facts", len(cuda_files)):
            facts = facts + _extract(cuda_files, options, cache, workers)
    facts = _in_discovery_order(facts, discovery)
    workers.close()  # every file is read: the judging that follows needs the memory more
    with stage("index"):
        index = build_index(_cuda_of(facts), include_dirs, generated)
        free = free_files((f.path for f in cuda_files), include_closure(index, sources)) if gated else frozenset()
    with stage("verdicts", len(gated), "gates"):
        judging = Judging(index, kb)
        memos, results = [], []
        parts: dict = {}  # shared by the results' equal parts
        overrides = user_defines(options)
        host = host_gates(index)
        judged = through_ops(gated, side.ops, index, host.pairs, side.wholes) + host.pairs
        for gate, units in judged:
            memos.append(GateMemo(gate, units, include_closure(index, units.sources)))
            results.append(judge_gate(gate, units, judging, targets, overrides, parts))
            stage_progress(len(results), len(judged))
        tile_lists += linked_cxx_tiles(root, index, [(m.gate, m.units, m.deps) for m in memos])
        ctx = Context.judged(judging, targets, tuple(results), free=free, tile_lists=tile_lists)
    ctx = with_tactic_sizes(options, root, ctx)
    linking = OpLinking(tuple(gated), side.ops, side.wholes) if op_linked(index, side.ops) else None
    return Linked(root, tuple(facts), discovery, index, pyindex, ctx, generated, tuple(memos), shallow, side.binaries,
                  sources if gated else None, linking is not None, host.asked, chosen, words, side.record, side.names,
                  linking)


def _host_files(marked: list[SourceFile], cuda_files: list[SourceFile], outlined: CudaIndex,
                read: Callable[[list[SourceFile]], list[FileFacts]]) -> tuple[dict[str, FileFacts], frozenset[str], tuple[str, ...]]:
    """The files a host gate or an op registration can come from, read in full with their include
    closures: of the files spelling a check, helper or registration word (`host_marked`), those
    that also spell where the capability is read from (a device-properties field or attribute), a
    registration, or the name of a capability helper found so far. A check in any other file names
    nothing that reads the capability (gates.host drops it), so its file is read in full only where
    a gate's units include it. Also the files chosen and the words that chose them (a re-scan
    gives way where a changed file would be chosen otherwise: engine.rescan)."""
    knowledge = load_host()
    words = {n for n, _ in knowledge.fields} | {n for n, _ in knowledge.attributes} | {n for n, _ in knowledge.registrations}
    texts = {file.path: _bytes(file) for file in marked}
    found: dict[str, FileFacts] = {}
    chosen: set[str] = set()
    while True:
        spelled = whole_words(words)
        todo = sorted(path for path, text in texts.items() if path not in chosen and spelled.search(text))
        if not todo:
            return found, frozenset(chosen), tuple(sorted(words))
        chosen.update(todo)
        wanted = include_closure(outlined, todo) - found.keys()
        for facts in read([file for file in cuda_files if file.path in wanted]):
            found[facts.file.path] = facts
        helpers = {h.name for f in found.values() if f.cuda is not None and f.cuda.host is not None for h in f.cuda.host.helpers}
        words |= helpers



def _bytes(file: SourceFile) -> bytes:
    try:
        with open(file.absolute, "rb") as handle:
            return handle.read()
    except OSError:
        return b""  # reported where the file is read for its facts


def _host_reach(index: CudaIndex, gated: list[tuple[Gate, GuardedUnits]], ops: dict) -> tuple[str, ...]:
    """The units the host checks' arms and the Python gates' op calls reach, read from an index
    whose other files are outlined (their definitions are read; gates.host.Reach needs no more)."""
    host = host_gates(index)
    units = {source for _, guarded in host.pairs for source in guarded.sources}
    units.update(source for _, guarded in through_ops(gated, ops, index, host.pairs) for source in guarded.sources)
    return tuple(sorted(units))


def _extract(files: list[SourceFile], options: ScanOptions, cache, workers: Workers, directives: bool = False) -> list[FileFacts]:
    return extract_all(files, options.jobs, options.max_file_bytes, cache, directives, progress=part_progress(), workers=workers)


def _reported_only(facts: FileFacts) -> FileFacts:
    python = facts.python
    if python is None:
        return facts
    return replace(facts, python=PythonFacts(python.path, python.sha256, python.encoding, suppressions=python.suppressions,
                                             diagnostics=python.diagnostics, partial_parse=python.partial_parse))


def _cuda_of(facts: list[FileFacts]) -> list[CudaFacts]:
    return [f.cuda for f in facts if f.cuda is not None]


def _in_discovery_order(facts: list[FileFacts], discovery: Discovery) -> list[FileFacts]:
    """The facts in discovery order, then the units a build writes from a generator's templates."""
    by_path = {f.file.path: f for f in facts}
    known = {f.path for f in discovery.files}
    return [by_path[f.path] for f in discovery.files] + [f for f in facts if f.file.path not in known]


def _generated(units: dict[str, str], discovery: Discovery, options: ScanOptions) -> list[FileFacts]:
    """The units a CMake build writes with a generator script (glob pattern -> script), read from
    the script's templates (never run)."""
    files = {f.path: f for f in discovery.files}
    return [extract_generated(pattern, files[script], options.max_file_bytes)
            for pattern, script in sorted(units.items()) if script in files]


def _python_index(python: PythonFiles, root: str, discovery: Discovery, eager: bool) -> PyIndex | None:
    """The Python index with what linking starts from read: every module (eager), or those the byte
    prefilter picks (those whose conditions can read the compute capability come next: pyanswers.link_sources)."""
    if not python.modules:
        return None
    pyindex = PyIndex(python.modules, [root], {f.path for f in discovery.files}, python)
    if eager:
        pyindex.load_all()
    else:
        pyindex.load_paths(python.marked)
    return pyindex
