"""The stored scan state in parts: an entry for each large field of the state and one for the
others, and an index naming them beside the files the state saw. A re-scan changes a few fields
(the links of an edited file, the gates it judged again); the others are the values it loaded, and
their entries are kept as they were written instead of being pickled and written again (the links
alone are megabytes).

The index is written last, atomically, and then the parts it no longer names are removed: a reader
sees either state whole (a reader still holding the old index finds a part gone, and gives way to
a full scan, as for a damaged entry).
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path

from archlint.engine.cache import read_entry, store_value
from archlint.engine.deltas import Delta, delta, undelta

Digests = tuple[tuple[str, str, str], ...]  # (path, language, sha256) of every file scanned, sorted


@dataclass(frozen=True)
class Stamp:
    """A state's index."""

    digests: Digests
    parts: tuple[tuple[str, str], ...]  # (part, the file name of its entry)
    bases: tuple[tuple[str, str], ...] = ()  # (part, its base's entry) for each part stored as a delta


@dataclass(frozen=True)
class Loaded:
    """A state as read: its parts' values with the entries they came from."""

    digests: Digests
    values: dict[str, object]  # part -> its value: a field's, or SMALL's dict of the other fields
    names: dict[str, str]
    bases: dict[str, str]  # part -> its base's entry, for each part stored as a delta
    # part -> (entry, value, size) of what a new value of it can be a delta of, for each part read
    # so far (a part read on demand adds itself when read)
    read_as: dict[str, tuple[str, object, int]]


# the fields that are megabytes on a large tree, each in an entry of its own; the others share one
ON_THEIR_OWN = ("links", "memos", "results", "file_findings", "templates", "pylink", "pynames", "op_linking")
SMALL = "small"
# parts read only where a re-scan asks for them (a Python re-link: engine.relink; op calls linked
# again: engine.rescan), kept as written
# by the others (a CUDA re-scan read 14 MB more on FlashInfer 0.7.2.post1 for nothing)
ON_DEMAND = ("pylink", "pynames", "op_linking")
# parts a re-scan keeps most of, as the objects it loaded: stored as deltas of an earlier entry
AS_DELTAS = ("memos", "results", "pylink")


class Deferred:
    """A part of a loaded state not read yet. Pickled, it is its value."""

    def __init__(self, parts: StateParts, index: Stamp, part: str, read_as: dict[str, tuple[str, object, int]]) -> None:
        self._parts, self._index, self._part, self._read_as = parts, index, part, read_as
        self._held: tuple[object] | None = None

    def value(self) -> object:
        """The part's value; None where it cannot be read."""
        if self._held is None:
            self._held = self._parts.part(self._index, self._part, self._read_as) or (None,)
        return self._held[0]

    def __reduce__(self) -> tuple:
        return _itself, (self.value(),)

    def holds(self, value: object) -> bool:
        """Whether `value` is the one this part was read as (never read: it cannot be)."""
        return self._held is not None and self._held[0] is value


def _itself(value: object) -> object:
    return value


def read_part(value: object) -> object:
    """A state field's value, a part read on demand read now."""
    return value.value() if isinstance(value, Deferred) else value


class StateParts:
    """Where one slot's state is kept: the index at `index_path`, each part beside it."""

    def __init__(self, index_path: Path, key: bytes) -> None:
        self.index_path = index_path
        self.key = key
        self._stem = index_path.name.removesuffix(".pkl")

    def load(self, index: Stamp | None = None, read: Mapping[str, tuple[object]] | None = None) -> Loaded | None:
        """The state; `index` and the parts in `read` where this scan has read them already."""
        index, read = index or self.stamp(), read or {}
        if index is None:
            return None
        values: dict[str, object] = {}
        read_as: dict[str, tuple[str, object, int]] = {}
        for part, _ in index.parts:
            if part in ON_DEMAND and part not in read:
                values[part] = Deferred(self, index, part, read_as)
                continue
            # in a 1-tuple: a part may be None, which read_entry gives for a bad entry
            held = read.get(part) or self.part(index, part, read_as)
            if held is None:
                return None
            values[part] = held[0]
        return Loaded(index.digests, values, dict(index.parts), dict(index.bases), read_as)

    def stamp(self) -> Stamp | None:
        """The index alone: the digests of the files the state saw, and where its parts are."""
        return read_entry(self.index_path, self.key, Stamp, keep=True)

    def part(self, index: Stamp, part: str, read_as: dict[str, tuple[str, object, int]] | None = None) -> tuple[object] | None:
        """One part's value, in a 1-tuple; None where it cannot be read. `read_as` takes what a new
        value of the part can be a delta of."""
        name = dict(index.parts).get(part)
        held = self._entry(name, part) if name is not None else None
        if held is None or not isinstance(held[0], Delta):
            if held is not None and read_as is not None and name is not None:
                read_as[part] = (name, held[0], self._size(name))
            return held
        base_name = held[0].base
        base = self._entry(base_name, part)
        if base is None or isinstance(base[0], Delta):
            return None
        if read_as is not None:
            read_as[part] = (base_name, base[0], self._size(base_name))
        return (undelta(held[0].payload, base[0]),)

    def _entry(self, name: str, part: str) -> tuple[object] | None:
        held = read_entry(self.index_path.with_name(name), self._part_key(part), tuple, keep=True, mapped=True)
        return held if held is not None and len(held) == 1 else None

    def _size(self, name: str) -> int:
        try:
            return self.index_path.with_name(name).stat().st_size
        except OSError:
            return 0

    def restamp(self, index: Stamp, digests: Digests) -> bool:
        """The state `index` names, its parts as they are, as the state of the files `digests` gives:
        for a scan whose changed files cannot change it (engine.samefacts). Whether it was written."""
        return store_value(self.index_path, self.key, Stamp(digests, index.parts, index.bases)) is not None

    def save(self, digests: Digests, state, previous: Loaded | None) -> None:
        """Write `state` (a dataclass) and its index; a part whose value is the one `previous` loaded
        keeps its entry."""
        everything = {f.name: getattr(state, f.name) for f in fields(state)}
        values = {name: everything.pop(name) for name in ON_THEIR_OWN}
        values[SMALL] = everything
        parts, bases = [], []
        for part, value in values.items():
            kept = previous.names.get(part) if previous is not None and _same(value, previous.values.get(part)) else None
            written = (kept, previous.bases.get(part)) if kept is not None and previous is not None else self._write(part, value, previous)
            if written is None:
                return
            parts.append((part, written[0]))
            bases += [(part, written[1])] if written[1] is not None else []
        if store_value(self.index_path, self.key, Stamp(digests, tuple(parts), tuple(bases))) is None:
            return
        named = {name for _, name in (*parts, *bases)}
        for path in self.index_path.parent.glob(f"{self._stem}-*.pkl"):
            if path.name not in named:
                path.unlink(missing_ok=True)

    def _write(self, part: str, value: object, previous: Loaded | None) -> tuple[str, str | None] | None:
        """A new entry for the part's value, a delta of what it was loaded from where that pays:
        its name and its base's (None: written whole); None where it could not be written."""
        name = f"{self._stem}-{part}-{secrets.token_hex(8)}.pkl"
        base = previous.read_as.get(part) if previous is not None and part in AS_DELTAS else None
        payload = delta(value, base[1], base[2]) if base is not None else None
        stored = (value,) if payload is None or base is None else (Delta(base[0], payload),)
        if store_value(self.index_path.with_name(name), self._part_key(part), stored) is None:
            return None
        return name, (base[0] if payload is not None and base is not None else None)

    def _part_key(self, part: str) -> bytes:
        return hashlib.sha256(self.key + part.encode()).digest()


def fields_of(loaded: Loaded) -> dict[str, object]:
    """The state's fields, from its parts."""
    values = dict(loaded.values)
    small = values.pop(SMALL, {})
    return {**values, **(small if isinstance(small, dict) else {})}


def _same(value: object, loaded: object) -> bool:
    """The value is the one loaded (a part read on demand: the one it was read as). The links are
    compared by identity (a re-scan that changes none keeps the object): their equality would read
    every file's part."""
    from archlint.engine.linkstore import StoredLinks  # deferred: a scan that stores nothing never loads the links

    if value is loaded or (isinstance(loaded, Deferred) and loaded.holds(value)):
        return True
    return not isinstance(value, StoredLinks) and type(value) is type(loaded) and value == loaded

