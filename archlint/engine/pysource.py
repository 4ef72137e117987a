"""The scan's Python files, read once: their bytes answer which files spell a name, and their full
facts are extracted (in the scan's workers, through the facts cache) only for the modules the
index asks for. What the gates never needed is outlined at the end: its diagnostics and
suppressions, without a walk."""

from __future__ import annotations

import bisect
import re
from collections.abc import Collection, Mapping, Sequence
from typing import Callable

from archlint.extract.files import read_bytes
from archlint.extract.python.markers import Markers
from archlint.model.files import FileFacts, SourceFile
from archlint.model.python import PythonFacts

Extract = Callable[[list[SourceFile], bool], list[FileFacts]]


class PythonFiles:
    """Implements link.python.ModuleReader over the scan's Python files."""

    def __init__(self, files: Sequence[SourceFile], max_bytes: int, extract: Extract) -> None:
        self._files = {file.path: file for file in files}
        self._extract = extract
        self.full: dict[str, FileFacts] = {}  # path -> full facts, for every file read in full
        # One buffer, grown in place: each file's bytes are dropped as soon as they are copied in
        # (a list of them, then joined, left as much memory again behind in the allocator).
        self._all = bytearray()
        self.modules: list[str] = []  # the files that can be modules: readable, not binary
        self._starts: list[int] = []
        for file in files:
            data, _ = read_bytes(file, max_bytes)
            if data is None or b"\x00" in data[:8192]:
                continue
            self.modules.append(file.path)
            if self._starts:
                self._all += b"\x00"
            self._starts.append(len(self._all))
            self._all += _as_read(data)
        self._positions = {path: index for index, path in enumerate(self.modules)}
        self._names: dict[bytes, list[int]] | None = None  # built on the first question
        self._released = False

    # ---------------------------------------------------------------- link.python.ModuleReader

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
        return frozenset(self.modules[index] for index in found)

    def text(self, path: str) -> bytes | None:
        index = self._positions.get(path)
        if index is None or self._released:
            return None
        end = self._starts[index + 1] - 1 if index + 1 < len(self._starts) else len(self._all)
        return bytes(memoryview(self._all)[self._starts[index]:end])  # one copy, not two

    # ---------------------------------------------------------------- the prefilter and the rest

    def marked(self, markers: Markers) -> list[str]:
        """The files whose bytes hold a gate, a flag list, a capability call or a source name."""
        return [path for path in self.modules if markers.hold(self.text(path) or b"")]

    def outlined(self) -> list[FileFacts]:
        """Facts for the files not read in full: diagnostics and suppressions only (or full facts
        where a syntax error or a suppression comment needs them)."""
        rest = [file for path, file in self._files.items() if path not in self.full]
        return self._extract(rest, True)

    def release(self) -> None:
        """Drop the bytes: linking is done."""
        self._all = bytearray()
        self._names = None
        self._released = True

    def _files_spelling(self, word: str) -> frozenset[int]:
        """`name`: the files spelling it as a whole name; `.name`: those spelling it as a member."""
        needle = word.encode("utf-8")
        member = needle.startswith(b".")
        name = needle[1:] if member else needle
        if _NAME.fullmatch(name) is None:  # a name with other letters: searched for in the bytes
            return self._files_holding(needle)
        if self._names is None:
            self._names = _name_index(self._all, self._starts)
        found = self._names.get(name, ())
        return frozenset(index for index in found if self._spells_member(index, needle)) if member else frozenset(found)

    def _spells_member(self, index: int, needle: bytes) -> bool:
        end = self._starts[index + 1] - 1 if index + 1 < len(self._starts) else len(self._all)
        at = self._all.find(needle, self._starts[index], end)
        while at != -1:
            if _spelled_at(self._all, at, needle):
                return True
            at = self._all.find(needle, at + 1, end)
        return False

    def _files_holding(self, needle: bytes) -> frozenset[int]:
        hits, at = set(), 0
        while (at := self._all.find(needle, at)) != -1:
            if not _spelled_at(self._all, at, needle):
                at += 1
                continue
            index = bisect.bisect_right(self._starts, at) - 1
            hits.add(index)
            at = self._starts[index + 1] if index + 1 < len(self._starts) else len(self._all)
        return frozenset(hits)


_NAME = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")


def _name_index(text: bytearray, starts: list[int]) -> dict[bytes, list[int]]:
    """Each ASCII name -> the files (by position) that spell it: one pass over all the bytes."""
    names: dict[bytes, list[int]] = {}
    ends = [*starts[1:], len(text) + 1]
    for index, (start, end) in enumerate(zip(starts, ends)):
        for name in set(_NAME.findall(text, start, end - 1)):
            names.setdefault(name, []).append(index)
    return names


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
