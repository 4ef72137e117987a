"""What each answer of the Python link read of the modules' packed records (their calls and
assignments), so that an edit changing only some of those records re-links only the answers that
read them (engine.relink).

An answer is computed inside `ReadLog.answer()`; every record read meanwhile, by the answer or by
an answer it asks in turn, is noted as one number: the module's position among the scan's Python
modules, the kind of record and the record's position in the module. The index's own tables (name
resolution, callers and callees, which files spell a name) read only the plain parts of the facts,
never a packed record, so what they remember between answers hides no read; the evaluators that
read records are made afresh for each answer.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager

from archlint.model.python import PythonFacts, watch_reads

_KIND_BITS = 1  # 0: a call, 1: an assignment
_POSITION_BITS = 24  # records of one kind in one module: far more than any module holds

CALL, ASSIGN = 0, 1


def read_key(module: int, kind: int, position: int) -> int:
    """The number a read is noted as."""
    return (((module << _KIND_BITS) | kind) << _POSITION_BITS) | position


def key_module(key: int) -> int:
    return key >> (_KIND_BITS + _POSITION_BITS)


def key_position(key: int) -> int:
    return key & ((1 << _POSITION_BITS) - 1)


Reads = array  # array('Q') of sorted read keys: an answer's reads, as stored


class ReadLog:
    """The reads of the answers being computed, innermost last; an answer asked from within
    another counts for both."""

    def __init__(self) -> None:
        self._frames: list[set[int]] = []
        self._owners: dict[int, int] = {}  # id of a module's PyCalls or PyAssigns -> its key prefix

    def watch(self, facts: PythonFacts, module: int) -> None:
        """Note reads of this module's records as reads of module number `module` (the facts stay
        alive in the index while the log is in use, so their ids stay theirs)."""
        self._owners[id(facts.calls)] = read_key(module, CALL, 0)
        self._owners[id(facts.assigns)] = read_key(module, ASSIGN, 0)

    @contextmanager
    def recording(self) -> Iterator[ReadLog]:
        """Packed reads are told to this log while inside."""
        watch_reads(self._read)
        try:
            yield self
        finally:
            watch_reads(None)

    @contextmanager
    def answer(self) -> Iterator[set[int]]:
        """The set the reads of the answer computed inside are noted in (complete once left)."""
        frame: set[int] = set()
        self._frames.append(frame)
        try:
            yield frame
        finally:
            self._frames.pop()
            if self._frames:
                self._frames[-1] |= frame

    def again(self, reads: set[int]) -> None:
        """An answer remembered from before, asked again: its reads count for the one asking now."""
        if self._frames:
            self._frames[-1] |= reads

    def _read(self, packed: object, positions: list[int]) -> None:
        if not self._frames:
            return
        prefix = self._owners.get(id(packed))
        if prefix is not None:
            self._frames[-1].update(prefix | position for position in positions)


def stored(reads: Iterable[int]) -> Reads:
    return array("Q", sorted(reads))


def touches(reads: Sequence[int], changed: frozenset[int]) -> bool:
    """Whether an answer with these reads read any of the changed records."""
    return not changed.isdisjoint(reads)
