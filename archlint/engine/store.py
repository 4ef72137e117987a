"""Whole-scan results kept between runs, beside the facts cache.

Per scope (archlint build, knowledge base, scanned roots and the options that change results) two
entries are kept: the last result, written under a key that also covers the content hash of every
file it saw, and the state a partial re-scan starts from (`ScanState`) with those hashes. A scan
of an unchanged tree reads the first and nothing else, and a scan of a changed tree reads only its
header (the key) to know it cannot use it; `rescan` uses the second when only a few CUDA files
changed. Entries are written atomically
and checked like facts entries; a scan that saw a file modified within the racy window stores
nothing, since that file's hash may not match the bytes its facts came from.
"""

from __future__ import annotations

import hashlib
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from archlint.engine.cache import read_entry, read_header_key, write_entry
from archlint.model.files import SourceFile
from archlint.model.findings import Diagnostic, Finding, Suppression
from archlint.model.gates import Gate, GuardedUnits
from archlint.model.scan import ScanOptions, ScanResult

if TYPE_CHECKING:  # a stored result loads without the judging and linking modules: unpickling a
    # state imports what it holds
    from archlint.checks.context import GateResult
    from archlint.engine.linkstore import StoredLinks

FOLDER = "scans"  # inside the facts cache folder: pruned and cleared with it


@dataclass(frozen=True)
class GateMemo:
    """A judged gate and what its verdicts can depend on, so a re-scan can judge it alone."""

    gate: Gate
    units: GuardedUnits
    deps: frozenset[str]  # every CUDA file its units can include, for any target


@dataclass(frozen=True)
class ScanState:
    links: StoredLinks  # every CUDA file's, each loaded when a re-scan asks for it
    memos: tuple[GateMemo, ...]
    results: tuple[GateResult, ...]  # parallel to memos
    file_findings: dict[tuple[str, str], tuple[Finding, ...]]  # (rule, path) -> the file rules' findings
    file_diagnostics: dict[str, tuple[Diagnostic, ...]]
    suppressions: dict[str, tuple[Suppression, ...]]
    discovery_diagnostics: tuple[Diagnostic, ...]
    generated: dict[str, str]  # files the JIT renders from templates: name -> template path
    templates: dict  # path -> CudaFacts of each template as holes.fill_holes left it
    # CUDA files read for their directives only (their links name no functions): a re-scan that
    # needs one in full does a full scan
    shallow: frozenset[str] = frozenset()


@dataclass(frozen=True)
class _Stored:
    digests: tuple[tuple[str, str, str], ...]  # (path, language, sha256) of every file scanned, sorted
    payload: ScanState


class ScanStore:
    def __init__(self, cache, key: bytes, digests: tuple[tuple[str, str, str], ...], racy: bool):
        self.cache = cache
        self.key = key
        self.digests = digests
        self.racy = racy
        folder = cache.folder / FOLDER
        self._result_path = folder / f"{key.hex()}-result.pkl"
        self._state_path = folder / f"{key.hex()}-state.pkl"
        # the result's entry key: the scope and every file's content, so a changed tree misses on
        # the entry's header alone
        self._result_key = hashlib.sha256(key + repr(digests).encode("utf-8", "surrogateescape")).digest()

    @classmethod
    def open(cls, cache, options: ScanOptions, discovery) -> ScanStore:
        seen = [cache.fingerprint(file) for file in discovery.files]
        racy = any(one is None or one[1] for one in seen)
        digests = sorted((file.path, file.language, one[0] if one else "unreadable") for file, one in zip(discovery.files, seen))
        return cls(cache, _scope_key(cache, options, discovery), tuple(digests), racy)

    def is_new(self) -> bool:
        """No scan of this scope was stored yet: the first (cold) scan of the tree."""
        return not self._state_path.exists() and not self._result_path.exists()

    def unchanged_result(self) -> ScanResult | None:
        if read_header_key(self._result_path) != self._result_key:
            return None  # another tree's result (kept: a re-scan that stores nothing leaves it valid)
        return read_entry(self._result_path, self._result_key, ScanResult, keep=True)

    def previous_state(self) -> tuple[dict[str, tuple[str, str]], ScanState] | None:
        """The last state and the files it saw: path -> (language, sha256). Its CUDA files' links stay
        in the file, mapped, until a re-scan asks for them (linkstore.PickledLinks)."""
        stored = read_entry(self._state_path, self.key, _Stored, keep=True, mapped=True)
        if stored is None or not isinstance(stored.payload, ScanState):
            return None
        return {path: (language, digest) for path, language, digest in stored.digests}, stored.payload

    def changed_files(self, previous: dict[str, tuple[str, str]], files: tuple[SourceFile, ...]) -> list[SourceFile] | None:
        """Files whose content differs from the previous state's, or None when the file set differs."""
        if set(previous) != {path for path, _, _ in self.digests}:
            return None
        now = {path: (language, digest) for path, language, digest in self.digests}
        return [file for file in files if previous[file.path] != now[file.path]]

    def save(self, result: ScanResult, state: ScanState | None) -> None:
        if self.racy:
            return
        _store(self._result_path, self._result_key, result)
        if state is not None:
            _store(self._state_path, self.key, _Stored(self.digests, state))


def _store(path, key: bytes, value: object) -> None:
    """The value's pickle buffers (the state's links) are written out of band, after the payload, to
    be mapped from the file when it is read (cache.read_entry's `mapped`)."""
    buffers: list[pickle.PickleBuffer] = []
    try:
        payload = pickle.dumps(value, protocol=5, buffer_callback=buffers.append)
    except (pickle.PicklingError, TypeError, AttributeError, RecursionError):
        return
    write_entry(path, key, payload, [buffer.raw() for buffer in buffers])


def _scope_key(cache, options: ScanOptions, discovery) -> bytes:
    scope = (
        cache.salt, discovery.root, tuple(sorted(str(Path(p).resolve()) for p in options.paths)), options.targets, options.include_dirs,
        options.defines, options.exclude, options.select, options.ignore, options.max_file_bytes, options.toolkit,
    )
    return hashlib.sha256(repr(scope).encode("utf-8", "surrogateescape")).digest()
