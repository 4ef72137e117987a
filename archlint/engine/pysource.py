"""The scan's Python files, read once: the names each spells answer which files spell a name, and
their full facts are extracted (in the scan's workers, through the facts cache) only for the
modules the index asks for. What the gates never needed is outlined at the end: its diagnostics
and suppressions, without a walk."""

from __future__ import annotations

import re
from array import array
from bisect import bisect_left
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Callable

from archlint.extract.files import Workers, read_bytes
from archlint.extract.python.markers import Markers
from archlint.model.files import FileFacts, SourceFile
from archlint.model.python import PythonFacts

Extract = Callable[[list[SourceFile], bool], list[FileFacts]]


# Python files from which they are read in the scan's workers, a part each: fewer are read sooner
# than two workers start
READ_APART_FROM = 1000


class PythonFiles:
    """Implements link.modules.ModuleReader over the scan's Python files."""

    def __init__(self, files: Sequence[SourceFile], max_bytes: int, extract: Extract,
                 prefilter: Markers | None = None, phrases: Collection[str] = (), workers: Workers | None = None) -> None:
        self._files = {file.path: file for file in files}
        self._paths = [file.path for file in files]  # a file's position in the tables -> its path
        self._max_bytes = max_bytes
        self._extract = extract
        self.full: dict[str, FileFacts] = {}  # path -> full facts, for every file read in full
        self.modules: list[str] = []  # the files that can be modules: readable, not binary
        self.marked: list[str] = []  # the modules whose bytes `prefilter` holds
        # Each file is read once, and only these are kept of its bytes (the page cache keeps the
        # rest): each ASCII name it spells, as a name and as a member, and whether it has other
        # letters, where a name with them is looked for in the bytes again; and the files holding
        # each of `phrases` (any other text that is not a name is looked for in every file again).
        self._names: dict[bytes, array[int]] = {}  # arrays of file positions: a list held an int object each
        self._members: dict[bytes, array[int]] = {}
        self._readable: list[int] = []
        self._wide: list[int] = []
        self._phrases: dict[bytes, list[int]] = {phrase.encode("utf-8"): [] for phrase in phrases}
        for part in _read_parts(list(files), max_bytes, prefilter, tuple(self._phrases), workers):
            self._take(part)
        self._released = False

    def _take(self, part: _Read) -> None:
        """A part's tables joined to these (parts come in file order: each array stays ascending)."""
        self.modules += [self._paths[index] for index in part.readable]
        self.marked += [self._paths[index] for index in part.marked]
        self._readable += part.readable
        self._wide += part.wide
        for table, packed in ((self._names, part.names), (self._members, part.members)):
            for name, holders in _unpacked(packed):
                known = table.get(name)
                if known is None:
                    table[name] = holders
                else:
                    known.extend(holders)
        for phrase_holders, more in zip(self._phrases.values(), part.phrases):
            phrase_holders += more

    def tables(self) -> NameTables:
        """The name tables, to be stored (engine.relink reads the tree again without its bytes)."""
        assert not self._released
        return NameTables(tuple(self._paths), tuple(self.modules), tuple(self.marked), _sorted(self._names),
                          _sorted(self._members), tuple((phrase, tuple(holders)) for phrase, holders in self._phrases.items()),
                          tuple(self._readable), tuple(self._wide))

    @classmethod
    def from_tables(cls, files: Sequence[SourceFile], tables: NameTables, max_bytes: int, extract: Extract) -> PythonFiles:
        """The files as `tables` saw them (their paths in that order), without reading any bytes."""
        self = cls.__new__(cls)
        self._files = {file.path: file for file in files}
        self._paths = list(tables.paths)
        self._max_bytes = max_bytes
        self._extract = extract
        self.full = {}
        self.modules, self.marked = list(tables.modules), list(tables.marked)
        self._names, self._members = _PackedTable(tables.names), _PackedTable(tables.members)  # type: ignore[assignment]
        self._readable, self._wide = list(tables.readable), list(tables.wide)
        self._phrases = {phrase: list(holders) for phrase, holders in tables.phrases}
        self._released = False
        return self

    # ---------------------------------------------------------------- link.modules.ModuleReader

    def read(self, paths: Sequence[str]) -> Mapping[str, PythonFacts | None]:
        todo = [self._files[path] for path in paths if path not in self.full]
        for facts in self._extract(todo, False):
            self.full[facts.file.path] = facts
        return {path: self.full[path].python for path in paths}

    def spelling(self, words: Collection[str]) -> frozenset[str] | None:
        """The files that spell any of the names as a whole name (non-ASCII letters count as part
        of a name only through the bytes: a name is never found inside a longer ASCII one)."""
        if self._released:
            return None
        found: set[int] = set()
        for word in words:
            found.update(self._files_spelling(word))
        return frozenset(self._paths[index] for index in found)

    # ---------------------------------------------------------------- the rest

    def outlined(self) -> list[FileFacts]:
        """Facts for the files not read in full: diagnostics and suppressions only (or full facts
        where a syntax error or a suppression comment needs them)."""
        rest = [file for path, file in self._files.items() if path not in self.full]
        return self._extract(rest, True)

    def release(self) -> None:
        """Drop the name tables: linking is done."""
        self._names, self._members, self._readable, self._wide, self._phrases = {}, {}, [], [], {}
        self._released = True

    def _files_spelling(self, word: str) -> Sequence[int]:
        """`name`: the files spelling it as a whole name; `.name`: those spelling it as a member."""
        needle = word.encode("utf-8")
        member = needle.startswith(b".")
        name = needle[1:] if member else needle
        if _NAME.fullmatch(name) is not None:
            return (self._members if member else self._names).get(name, ())
        if needle in self._phrases:
            return self._phrases[needle]
        # Not a name, or one with other letters (then only a file with them can spell it)
        candidates = self._readable if needle.isascii() else self._wide
        return [index for index in candidates if _holds(self._bytes(index), needle)]

    def _bytes(self, index: int) -> bytes:
        data, _ = read_bytes(self._files[self._paths[index]], self._max_bytes)
        return _as_read(data or b"")


@dataclass(frozen=True)
class NameTables:
    """PythonFiles' tables of a tree: which file spells which names, by position in `paths`."""

    paths: tuple[str, ...]
    modules: tuple[str, ...]
    marked: tuple[str, ...]
    names: _Sorted
    members: _Sorted
    phrases: tuple[tuple[bytes, tuple[int, ...]], ...]
    readable: tuple[int, ...]
    wide: tuple[int, ...]

    def status(self, path: str) -> tuple[bool, bool]:
        """Whether the file is a module, and whether the byte prefilter picks it."""
        return path in self.modules, path in self.marked


class _PackedTable:
    """A stored name table looked up as it is, by bisection over its sorted names (unpacking every
    name's holders into a dict took a tenth of a second on a large tree, for the few names a
    re-link asks for)."""

    def __init__(self, table: _Sorted) -> None:
        self._joined, self._starts, self._ends, self._flat = table

    def get(self, name: bytes, default: Sequence[int] = ()) -> Sequence[int]:
        at = bisect_left(range(len(self._starts)), name, key=self._name)
        if at == len(self._starts) or self._name(at) != name:
            return default
        return self._flat[self._ends[at - 1] if at else 0:self._ends[at]]

    def _name(self, at: int) -> bytes:
        end = self._starts[at + 1] - 1 if at + 1 < len(self._starts) else len(self._joined)
        return self._joined[self._starts[at]:end]


def read_status(file: SourceFile, max_bytes: int, prefilter: Markers | None) -> tuple[bool, bool]:
    """What NameTables.status says of a file, read from its bytes now."""
    data, _ = read_bytes(file, max_bytes)
    if data is None or b"\x00" in data[:8192]:
        return False, False
    return True, prefilter is not None and prefilter.hold(_as_read(data))


# a name -> file positions table sent between processes as three flat values, which pickle as
# bytes: the names joined by NUL (never in a name), how many files hold each, and those files
_Packed = tuple[bytes, "array[int]", "array[int]"]


@dataclass(frozen=True)
class _Read:
    """What reading a run of the files keeps (PythonFiles' tables, by file position)."""

    readable: list[int]  # the files that can be modules
    marked: list[int]
    names: _Packed
    members: _Packed
    wide: list[int]
    phrases: tuple[list[int], ...]  # the holders of each phrase, in the order given


def _read_parts(files: list[SourceFile], max_bytes: int, prefilter: Markers | None, phrases: tuple[bytes, ...],
                workers: Workers | None) -> Iterable[_Read]:
    """The files read in runs, in file order: in the workers, eight runs each (so that they finish
    together), for a tree of many."""
    if workers is None or workers.jobs < 2 or len(files) < READ_APART_FROM:
        return [_read(files, 0, max_bytes, prefilter, phrases)]
    size = -(-len(files) // (workers.jobs * 8))
    starts = list(range(0, len(files), size))
    count = len(starts)
    return workers.map(_read, [files[start:start + size] for start in starts], starts, [max_bytes] * count,
                       [prefilter] * count, [phrases] * count)


def _read(files: list[SourceFile], first: int, max_bytes: int, prefilter: Markers | None,
          phrases: tuple[bytes, ...]) -> _Read:
    """A run of the files, the first at position `first`."""
    readable: list[int] = []
    marked: list[int] = []
    names: dict[bytes, array[int]] = {}
    members: dict[bytes, array[int]] = {}
    wide: list[int] = []
    holding: tuple[list[int], ...] = tuple([] for _ in phrases)
    for index, file in enumerate(files, first):
        data, _ = read_bytes(file, max_bytes)
        if data is None or b"\x00" in data[:8192]:
            continue
        data = _as_read(data)
        readable.append(index)
        if prefilter is not None and prefilter.hold(data):
            marked.append(index)
        for name in set(_NAME.findall(data)):
            names.setdefault(name, array("I")).append(index)
        for name in set(_MEMBER.findall(data)):
            members.setdefault(name, array("I")).append(index)
        if not data.isascii():
            wide.append(index)
        for phrase, holders in zip(phrases, holding):
            if _holds(data, phrase):
                holders.append(index)
    return _Read(readable, marked, _packed(names), _packed(members), wide, holding)


def _packed(table: dict[bytes, array[int]]) -> _Packed:
    flat = array("I")
    for holders in table.values():
        flat.extend(holders)
    return b"\0".join(table), array("I", map(len, table.values())), flat


# a name table as stored with the state: the names sorted and joined by NUL, where each name starts,
# where each name's holders end in the last, and the holders (file positions) of every name in turn
_Sorted = tuple[bytes, "array[int]", "array[int]", "array[int]"]


def _sorted(table: dict[bytes, array[int]]) -> _Sorted:
    names = sorted(table)
    starts, ends, flat = array("I"), array("I"), array("I")
    at = 0
    for name in names:
        starts.append(at)
        at += len(name) + 1
        flat.extend(table[name])
        ends.append(len(flat))
    return b"\0".join(names), starts, ends, flat


def _unpacked(packed: _Packed) -> Iterator[tuple[bytes, array[int]]]:
    joined, counts, flat = packed
    if not counts:
        return
    at = 0
    for name, count in zip(joined.split(b"\0"), counts):
        yield name, flat[at:at + count]
        at += count


def _holds(text: bytes, needle: bytes) -> bool:
    """The text spells the needle as a whole name (or phrase) somewhere."""
    at = text.find(needle)
    while at != -1 and not _spelled_at(text, at, needle):
        at = text.find(needle, at + 1)
    return at != -1


_NAME = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")
_MEMBER = re.compile(rb"\.([A-Za-z_][A-Za-z0-9_]*)")


_WORD = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


def _spelled_at(text: bytes | bytearray, at: int, needle: bytes) -> bool:
    """The needle found at `at` is a whole name, not part of a longer one (a member needle, `.name`,
    follows whatever it is a member of)."""
    start, end = at + (needle[:1] == b"."), at + len(needle)
    return (start == 0 or text[start - 1] not in _WORD) and (end >= len(text) or text[end] not in _WORD)


def _as_read(data: bytes) -> bytes:
    """The bytes as the facts see them: a file that is not UTF-8 is read as latin-1."""
    try:
        data.decode("utf-8")
        return data
    except UnicodeDecodeError:
        return data.decode("latin-1").encode("utf-8")
