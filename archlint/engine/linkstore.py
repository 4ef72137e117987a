"""The CUDA index as the stored scan state keeps it: each file's links pickled on their own, so a
partial re-scan unpickles only the files its judging and checks ask about.

A re-scan of one changed file judges the few gates whose units can include it, yet the index
spans every CUDA file: loading every file's links (millions of objects) cost more than the whole
rest of the re-scan. Here the scan-wide tables that are small (which files define each macro,
function-like macros' calls and traps, each file's function names) load with the state, and a
file's includes and a macro's definitions are unpickled when first asked for, into the same values
`link.cuda.assemble` gives.
"""

from __future__ import annotations

import pickle
import zlib
from array import array
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from itertools import accumulate

from archlint.lang.cpp.evaluate import Binding
from archlint.link.cuda import CudaIndex, FileLinks, ResolvedInclude


class DamagedState(ValueError):
    """A stored file's links do not match their checksum: the state cannot be used."""


class PickledLinks(Mapping[str, bytes]):
    """path -> that file's links, pickled. The parts lie in one buffer, which the stored state keeps
    out of band and maps from its file (engine.store): a re-scan reads only the parts it asks for,
    and each part's CRC-32 is checked as it is read. Replaced parts are kept beside the buffer until
    the links are pickled again."""

    def __init__(self, paths: tuple[str, ...], ends: array, crcs: array, blob, changed: Mapping[str, bytes] | None = None):
        self._paths = paths
        self._ends = ends  # where each part ends in the buffer
        self._crcs = crcs
        self._blob = blob
        self._changed = dict(changed or {})
        self._at = {path: i for i, path in enumerate(paths)}

    @classmethod
    def of(cls, parts: Mapping[str, bytes]) -> PickledLinks:
        paths = tuple(parts)
        values = [parts[path] for path in paths]
        return cls(paths, array("Q", accumulate(map(len, values))), array("I", map(zlib.crc32, values)), b"".join(values))

    def replaced(self, changed: Mapping[str, bytes]) -> PickledLinks:
        """These links with some files' parts replaced (files already among them)."""
        return PickledLinks(self._paths, self._ends, self._crcs, self._blob, {**self._changed, **changed})

    def __getitem__(self, path: str) -> bytes:
        if path in self._changed:
            return self._changed[path]
        index = self._at[path]
        part = self._blob[self._ends[index - 1] if index else 0 : self._ends[index]]
        if zlib.crc32(part) != self._crcs[index]:
            raise DamagedState(f"the stored links of {path} are damaged")
        return part

    def __contains__(self, path: object) -> bool:
        return path in self._at

    def __iter__(self) -> Iterator[str]:
        return iter(self._paths)

    def __len__(self) -> int:
        return len(self._paths)

    def __reduce_ex__(self, protocol):
        if self._changed:
            return PickledLinks.of({path: bytes(self[path]) for path in self._paths}).__reduce_ex__(protocol)
        return PickledLinks, (self._paths, self._ends, self._crcs, pickle.PickleBuffer(self._blob))


@dataclass(frozen=True)
class StoredLinks:
    paths: tuple[str, ...]  # every CUDA file, in path order
    pickled: PickledLinks  # path -> its FileLinks, pickled
    defined_in: Mapping[str, tuple[str, ...]]  # macro -> the files that bind it, in path order
    macro_calls: Mapping[str, tuple[str, ...]]  # as CudaIndex.macro_calls
    trap_macros: Mapping[str, bool]  # as CudaIndex.trap_macros
    function_names: Mapping[str, tuple[str, ...]]  # path -> FileLinks.function_names

    def links(self, path: str) -> FileLinks:
        value = pickle.loads(self.pickled[path])
        assert isinstance(value, FileLinks)
        return value


def stored_links(index: CudaIndex) -> StoredLinks:
    """What the state keeps of an index assembled from its links (link.cuda.assemble)."""
    return _stored(index.links, index.macro_calls, index.trap_macros)


def with_links(stored: StoredLinks, changed: Mapping[str, FileLinks]) -> StoredLinks:
    """The stored links with some files' replaced by links binding the same macros the same way
    (the caller checks: the scan-wide tables stay as they are)."""
    parts = {path: _pickled(links) for path, links in changed.items()}
    if all(stored.pickled[path] == part for path, part in parts.items()):
        return stored  # the same links (a comment added): the stored state keeps its part as written
    pickled = stored.pickled.replaced(parts)
    names = {**stored.function_names, **{path: links.function_names for path, links in changed.items()}}
    return StoredLinks(stored.paths, pickled, stored.defined_in, stored.macro_calls, stored.trap_macros, names)


def lazy_index(stored: StoredLinks, files: Mapping, functions_by_name: Mapping) -> CudaIndex:
    """The index `assemble` would build from every file's links, unpickling them as asked for."""
    loaded = _Loaded(stored)
    return CudaIndex(files, includes=_Includes(loaded), bindings=_Bindings(loaded),
                     functions_by_name=functions_by_name, macro_calls=dict(stored.macro_calls),
                     trap_macros=dict(stored.trap_macros))


def _stored(links: tuple[FileLinks, ...], macro_calls: Mapping[str, tuple[str, ...]],
            trap_macros: Mapping[str, bool]) -> StoredLinks:
    defined_in: dict[str, list[str]] = {}
    for links_of_file in links:
        for name in dict.fromkeys(name for name, _ in links_of_file.bindings):
            defined_in.setdefault(name, []).append(links_of_file.path)
    return StoredLinks(
        paths=tuple(links_of_file.path for links_of_file in links),
        pickled=PickledLinks.of({links_of_file.path: _pickled(links_of_file) for links_of_file in links}),
        defined_in={name: tuple(paths) for name, paths in defined_in.items()},
        macro_calls=dict(macro_calls),
        trap_macros=dict(trap_macros),
        function_names={links_of_file.path: links_of_file.function_names for links_of_file in links},
    )


def _pickled(links: FileLinks) -> bytes:
    return pickle.dumps(links, protocol=5)


class _Loaded:
    """Each file's links, unpickled once when first asked for."""

    def __init__(self, stored: StoredLinks):
        self.stored = stored
        self._links: dict[str, FileLinks] = {}

    def __call__(self, path: str) -> FileLinks:
        if path not in self._links:
            self._links[path] = self.stored.links(path)
        return self._links[path]


class _Includes(Mapping):
    """path -> its resolved includes, as CudaIndex.includes."""

    def __init__(self, loaded: _Loaded):
        self._loaded = loaded

    def __getitem__(self, path: str) -> tuple[ResolvedInclude, ...]:
        if path not in self._loaded.stored.pickled:
            raise KeyError(path)
        return self._loaded(path).includes

    def __contains__(self, path: object) -> bool:
        return path in self._loaded.stored.pickled

    def __iter__(self) -> Iterator[str]:
        return iter(self._loaded.stored.paths)

    def __len__(self) -> int:
        return len(self._loaded.stored.paths)


class _Bindings(Mapping):
    """macro -> its bindings in path order, then each file's order, as CudaIndex.bindings."""

    def __init__(self, loaded: _Loaded):
        self._loaded = loaded
        self._built: dict[str, tuple[Binding, ...]] = {}

    def __getitem__(self, name: str) -> tuple[Binding, ...]:
        if name not in self._built:
            paths = self._loaded.stored.defined_in[name]  # KeyError for a name no file binds
            self._built[name] = tuple(binding for path in paths for bound, binding in self._loaded(path).bindings if bound == name)
        return self._built[name]

    def __contains__(self, name: object) -> bool:
        return name in self._loaded.stored.defined_in

    def __iter__(self) -> Iterator[str]:
        return iter(self._loaded.stored.defined_in)

    def __len__(self) -> int:
        return len(self._loaded.stored.defined_in)
