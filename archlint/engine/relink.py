"""Re-linking an edit of some calls and assignments: only the link's answers that read them.

The link reads a module's facts in two ways: their plain parts (its functions, classes, imports,
each call's callee and each assignment's targets, what its branches test...) and its packed
records, the calls and assignments themselves, read a function at a time (model.python). Every
answer of the stored link (engine.pyanswers) kept what it read of the packed records. When every
changed Python file keeps its plain parts and the byte prefilter's choice, and differs only in some
of its calls and assignments (a literal of a gate's keyword, a flag list, an argument), an answer
that read none of those records reads the same facts as before and gives what it gave: only the
others are computed again, on an index that reads the modules they ask for from the facts cache
and answers which files spell a name from the stored name tables. Those tables may be older than
the changed files' bytes (a comment added since, a literal changed): which files spell a name only
picks the files whose facts a search reads, reading one more gives the same answer
(tests/test_demand.py), and every name a file's plain parts hold (its calls' callees, its
imports, its definitions) was in its bytes when the tables were made, those parts being the same.

Anything else makes `relinked_side` give None and the caller links the whole tree: a changed file
whose plain parts or prefilter choice changed, or whose earlier full facts are not cached; a record the answers
for the whole tree read (the capability conditions' reach, the project's builds, its arch macros,
passed macros, the templates' holes); a module's sources that come out otherwise; an answer that
reads a module the stored link had not read by then (a full link's walks over the modules read so
far would see it).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import PurePosixPath

from archlint.engine.linking import PythonSide, _cmake_side, _reported_only, gated_of, judged_gates
from archlint.engine.pyanswers import (GateAnswer, PyRecord, SourcesAnswer, WalkAnswer, sources_answer, units_answer,
                                       walk_answer, walked_gates, with_tiles)
from archlint.engine.pysource import NameTables, PythonFiles, read_status
from archlint.engine.stateparts import read_part
from archlint.engine.timing import stage
from archlint.extract.files import Workers, extract_all
from archlint.extract.python.markers import markers
from archlint.gates.ops import OpCallFinder
from archlint.gates.tactics import ordered_tile_lists
from archlint.gates.variants import variants_of
from archlint.knowledge.idioms import load_idioms
from archlint.link.binary import ExtensionIndex
from archlint.link.paths import merged_sources, suffix_finder
from archlint.link.python import PyIndex
from archlint.link.reads import ASSIGN, CALL, read_key, touches
from archlint.model.files import Discovery, FileFacts, SourceFile
from archlint.model.python import PythonFacts
from archlint.model.scan import ScanOptions


def relinked_side(options: ScanOptions, discovery: Discovery, cache, state, changed: list[SourceFile],
                  digests: dict[str, tuple[str, str]], workers: Workers) -> PythonSide | None:
    """The Python side of the edited tree from the stored state's (`state.pylink`), with only the
    answers that read a changed record computed again; None where a full link is needed."""
    record = read_part(state.pylink)
    names = read_part(state.pynames)
    if not isinstance(record, PyRecord) or not isinstance(names, NameTables):
        return None
    python_files = [f for f in discovery.files if f.language == "python"]
    if cache is None or tuple(f.path for f in python_files) != names.paths:
        return None
    with stage("pylink", len(changed)):
        edited = _edited_records(record, names, changed, digests, cache, options)
        if edited is None or touches(record.shared_reads, edited[0]):
            return None
        keys, reported = edited
        python = PythonFiles.from_tables(python_files, names, options.max_file_bytes,
                                         lambda todo, outline: extract_all(todo, 1, options.max_file_bytes, cache, outline,
                                                                           workers=workers))
        if PurePosixPath(discovery.root).name != PurePosixPath(record.root).name:
            return None  # (the modules' names are the stored ones: the files are, and the root's name)
        index = PyIndex(python.modules, [discovery.root], {f.path for f in discovery.files}, python, named=record.named)
        index.know_callers(record.callers)  # they read plain facts alone, which the edit left
        with index.reads.recording():
            answers = _answers_again(index, record, keys, state, discovery)
        if answers is None:
            return None
        sources, walks, gate_answers = answers
    gates = tuple(answer.gate for answer in gate_answers)
    gated, ops = gated_of(gate_answers)
    built, wholes, _ = _cmake_side(discovery, options, cache, workers)
    gated += built
    judged, named = judged_gates(gated, variants_of(record.passers, gates), record.passed)
    tile_lists = ordered_tile_lists(tile for answer in gate_answers for tile in answer.tiles)
    callers = index.plain_callers()
    # kept as loaded where equal: the stored record is written as a delta of the one it was loaded from
    new_record = replace(record, sources=sources, walks=walks, answers=gate_answers,
                         callers=record.callers if callers == record.callers else callers)
    kept = {id(answer) for answer in record.answers}
    again = frozenset(answer.gate.id for answer in gate_answers if id(answer) not in kept)
    return PythonSide(reported, judged, named, tile_lists, dict(state.generated), None, state.binaries, ops, tuple(wholes),
                      new_record, names, relinked=True, fresh=again)


def _edited_records(record: PyRecord, names: NameTables, changed: list[SourceFile], digests: dict[str, tuple[str, str]],
                    cache, options: ScanOptions) -> tuple[frozenset[int], list[FileFacts]] | None:
    """The read keys of the records the edit changed, and the changed files' facts as the rest of a
    scan reads them (what they report); None where the edit changed more than records."""
    prefilter = markers(load_idioms())
    number = {path: at for at, (_, path) in enumerate(record.named)}
    keys: set[int] = set()
    reported: list[FileFacts] = []
    for file, new in zip(changed, extract_all(changed, 1, options.max_file_bytes, cache)):
        if read_status(file, options.max_file_bytes, prefilter) != names.status(file.path):
            return None
        old = cache.stored(file, digests[file.path][1])
        if (old is None or old.python is None or new.python is None or file.path not in number
                or number[file.path] not in record.loaded.passed):
            return None  # (a file the stored link did not read is outlined: its facts are another kind)
        moved = _changed_records(old.python, new.python)
        if moved is None:
            return None
        module = number[file.path]
        keys.update(read_key(module, kind, at) for kind, positions in zip((CALL, ASSIGN), moved) for at in positions)
        reported.append(_reported_only(new))
    return frozenset(keys), reported


def _changed_records(old: PythonFacts, new: PythonFacts) -> tuple[list[int], list[int]] | None:
    """The positions of the calls and of the assignments that differ, where nothing else does."""
    if _plain(old) != _plain(replace(new, sha256=old.sha256)):
        return None
    calls = [at for at, (a, b) in enumerate(zip(old.calls, new.calls)) if a != b]
    assigns = [at for at, (a, b) in enumerate(zip(old.assigns, new.assigns)) if a != b]
    return calls, assigns


def _plain(facts: PythonFacts) -> PythonFacts:
    return replace(facts, calls=replace(facts.calls, packed=b""), assigns=replace(facts.assigns, packed=b""))


def _answers_again(index: PyIndex, record: PyRecord, keys: frozenset[int], state,
                   discovery: Discovery) -> tuple[tuple[SourcesAnswer, ...], tuple[WalkAnswer, ...], tuple[GateAnswer, ...]] | None:
    """Each answer of the record, computed again where it read a changed record; None where one
    comes out in a way the stored answers for the whole tree could not follow."""
    loaded = record.loaded
    by_suffix = suffix_finder(index)
    sources = []
    for answer in record.sources:
        if touches(answer.reads, keys):
            again = sources_answer(index, answer.module, index.modules[answer.module], by_suffix)
            if again.sources != answer.sources:
                return None
            answer = again
        sources.append(answer)
    index.set_sources(*merged_sources(answer.sources for answer in sources))
    if not _read_by_then(index, loaded.gates):
        return None
    walks = tuple(walk_answer(index, record.context, walk.module, index.modules[walk.module])
                  if touches(walk.reads, keys) else walk for walk in record.walks)
    if not _read_by_then(index, loaded.macros):
        return None
    gates = walked_gates(walks, record.macros, record.context.builds)
    stored = {answer.gate: answer for answer in record.answers if not touches(answer.reads, keys)}
    extensions = ExtensionIndex.of(state.binaries, {f.path for f in discovery.files}, [discovery.root])
    finder = OpCallFinder(index)
    answers = [stored.get(gate) or units_answer(index, gate, extensions, finder) for gate in gates]
    if not _read_by_then(index, loaded.lists):
        return None
    lists = dict(record.lists)
    answers = [answer if answer.gate in stored else with_tiles(index, answer, lists) for answer in answers]
    if not _read_by_then(index, loaded.passed):
        return None
    return tuple(sources), walks, tuple(answers)


def _read_by_then(index: PyIndex, then: frozenset[int]) -> bool:
    """Whether every module read now had been read by that point of the stored link."""
    return all(index.module_number(name) in then for name, _ in index.loaded())
