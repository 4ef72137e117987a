"""The Python link as answers, each computed apart with what it read of the modules' packed records
(link.reads): each module's sources, each module's gates, each gate's units, op calls and tile
lists. What the link reads for the whole tree at once (the capability conditions' reach, how the
project builds each capability, its arch macros, the macros its builds pass, the templates'
holes) is one set of reads. Kept with the scan state (`PyRecord`), they let engine.relink re-link
an edit that changed only some calls and assignments: only the answers that read one of them are
computed again.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from archlint.gates.conditions import load_condition_modules
from archlint.gates.detect import GateContext, arch_macros, finished_gates, gate_context, module_gates
from archlint.gates.ops import OpCallFinder, python_op_namespaces
from archlint.gates.tactics import TileLists, gate_tile_lists, ordered_tile_lists, tile_list_facts
from archlint.gates.units import guarded_units
from archlint.gates.variants import MacroPassers, macro_passers, passed_macros, variants_of
from archlint.link.binary import ExtensionIndex
from archlint.link.paths import ModuleSources, merged_sources, module_sources, suffix_finder
from archlint.link.python import PyIndex
from archlint.link.reads import Reads, stored
from archlint.model.gates import Gate, GuardedUnits
from archlint.model.tactics import LinkedTileList


@dataclass(frozen=True)
class SourcesAnswer:
    module: str
    sources: ModuleSources
    reads: Reads


@dataclass(frozen=True)
class WalkAnswer:
    """A module's gates, as its walk finds them (before finished_gates)."""

    module: str
    gates: tuple[Gate, ...]
    reads: Reads


@dataclass(frozen=True)
class GateAnswer:
    gate: Gate
    units: GuardedUnits
    reached: tuple  # gates.ops.Reached
    namespaces: frozenset[str]
    tiles: tuple[LinkedTileList, ...]
    reads: Reads

    @property
    def gated(self) -> bool:
        """Whether the gate guards something to judge."""
        units = self.units
        return bool(units.sources or units.unresolved or units.extensions or self.reached)


@dataclass(frozen=True)
class LoadedAt:
    """The modules read (their numbers in the index) when each walk over the modules read so far
    began: the gates', the arch macros', the tile lists' and macro passers', the passed macros'."""

    gates: frozenset[int]
    macros: frozenset[int]
    lists: frozenset[int]
    passed: frozenset[int]


@dataclass(frozen=True)
class PyRecord:
    root: str  # the folder analysed from, whose name a top-level package's modules take
    named: tuple[tuple[str, str], ...]  # each module with its path, in the index's order (a read's module number)
    loaded: LoadedAt
    shared_reads: Reads  # what the answers for the whole tree read
    sources: tuple[SourcesAnswer, ...]  # in the order the modules were resolved
    walks: tuple[WalkAnswer, ...]  # the modules walked whose walk read a record or found a gate
    context: GateContext
    macros: tuple[str, ...]
    answers: tuple[GateAnswer, ...]  # in gate order
    lists: tuple[tuple[str, tuple], ...]  # TileLists' items
    passers: MacroPassers
    passed: frozenset[str]
    # each function's callers, where finding them read plain facts alone (PyIndex.plain_callers)
    callers: tuple[tuple[str, tuple[str, ...]], ...] = ()


class Recorder:
    """Where the answers of one link are gathered."""

    def __init__(self, index: PyIndex) -> None:
        self.index = index
        self.shared: set[int] = set()
        self.at_gates: frozenset[int] = frozenset()
        self.at_macros: frozenset[int] = frozenset()

    @contextmanager
    def whole_tree(self) -> Iterator[None]:
        """An answer for the whole tree: its reads join the shared ones."""
        with self.index.reads.answer() as reads:
            yield
        self.shared |= reads

    def loaded(self) -> frozenset[int]:
        return frozenset(self.index.module_number(name) for name, _ in self.index.loaded())


@dataclass(frozen=True)
class LinkedGates:
    """What linking the gates gives the rest of the Python side."""

    answers: tuple[GateAnswer, ...]
    variants: frozenset[str]
    passed: frozenset[str]
    tile_lists: tuple[LinkedTileList, ...]
    record: PyRecord | None


def link_sources(index: PyIndex, recorder: Recorder, conditions: bool = True) -> tuple[SourcesAnswer, ...]:
    """The capability conditions' reach read (`conditions`), then each module's sources resolved
    (link.python.link)."""
    if conditions:
        with recorder.whole_tree():
            load_condition_modules(index)
    by_suffix = suffix_finder(index)
    answers = tuple(sources_answer(index, module, facts, by_suffix) for module, facts in index.loaded())
    index.set_sources(*merged_sources(answer.sources for answer in answers))
    return answers


def sources_answer(index: PyIndex, module: str, facts, by_suffix) -> SourcesAnswer:
    with index.reads.answer() as reads:
        sources = module_sources(index, module, facts, by_suffix)
    return SourcesAnswer(module, sources, stored(reads))


def walk_answer(index: PyIndex, context: GateContext, module: str, facts) -> WalkAnswer:
    with index.reads.answer() as reads:
        gates = module_gates(index, context, module, facts)
    return WalkAnswer(module, tuple(gates), stored(reads))


def units_answer(index: PyIndex, gate: Gate, extensions: ExtensionIndex, finder: OpCallFinder) -> GateAnswer:
    """A gate's units and op calls (its tile lists come once every gate's are read: `with_tiles`)."""
    with index.reads.answer() as reads:
        units, reached = guarded_units(index, gate, extensions), finder.reached(gate)
        namespaces = python_op_namespaces(index, reached) if reached else frozenset()
    return GateAnswer(gate, units, reached, namespaces, (), stored(reads))


def with_tiles(index: PyIndex, answer: GateAnswer, lists: TileLists) -> GateAnswer:
    with index.reads.answer() as reads:
        tiles = gate_tile_lists(index, answer.gate, lists)
    return GateAnswer(answer.gate, answer.units, answer.reached, answer.namespaces, tiles,
                      stored({*answer.reads, *reads}))


@dataclass(frozen=True)
class FoundGates:
    context: GateContext
    walks: tuple[WalkAnswer, ...]
    macros: tuple[str, ...]
    gates: tuple[Gate, ...]  # in place order


def find_gates(index: PyIndex, toolkit: tuple[int, ...] | None, recorder: Recorder) -> FoundGates:
    """Every module read so far walked for its gates (gates.detect.find_gates, as answers)."""
    with recorder.whole_tree():
        context = gate_context(index, toolkit)
    recorder.at_gates = recorder.loaded()
    walks = tuple(walk_answer(index, context, module, facts) for module, facts in sorted(index.loaded()))
    recorder.at_macros = recorder.loaded()
    with recorder.whole_tree():
        macros = arch_macros(index)
    return FoundGates(context, walks, macros, walked_gates(walks, macros, context.builds))


def link_gates(index: PyIndex, found: FoundGates, extensions: ExtensionIndex, recorder: Recorder,
               sources: tuple[SourcesAnswer, ...], record: bool) -> LinkedGates:
    """Each gate's units, op calls and tile lists, as answers; with `record`, the record of the link."""
    gates = found.gates
    finder = OpCallFinder(index)
    answers = [units_answer(index, gate, extensions, finder) for gate in gates]
    at_lists = recorder.loaded()
    lists, passers = tile_list_facts(index), macro_passers(index)
    answers = [with_tiles(index, answer, lists) for answer in answers]
    at_passed = recorder.loaded()
    with recorder.whole_tree():
        passed = passed_macros(index)
    tile_lists = ordered_tile_lists(tile for answer in answers for tile in answer.tiles)
    kept = None
    if record:
        kept = PyRecord(index.roots[0] if index.roots else "", index.named(), LoadedAt(recorder.at_gates, recorder.at_macros, at_lists, at_passed),
                          stored(recorder.shared), sources, tuple(walk for walk in found.walks if walk.gates or walk.reads),
                          found.context, found.macros, tuple(answers), tuple(lists.items()), passers, passed,
                          index.plain_callers())
    return LinkedGates(tuple(answers), variants_of(passers, gates), passed, tile_lists, kept)


def walked_gates(walks: Iterable[WalkAnswer], macros: tuple[str, ...], builds: tuple) -> tuple[Gate, ...]:
    """The modules' gates, finished (gates.detect.finished_gates), in place order."""
    gates = finished_gates([gate for walk in walks for gate in walk.gates], macros, builds)
    return tuple(sorted(gates, key=lambda g: (g.path, g.line, g.col)))
