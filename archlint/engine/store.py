"""Whole-scan results kept between runs, beside the facts cache.

Per scope (archlint build, knowledge base, scanned roots and the options that change the analysis)
and target set, two things are kept: the last result, written under a key that also covers the
content hash of every file it saw, and the state a partial re-scan starts from (`ScanState`) with
those hashes, in parts (engine.stateparts). A scan of an unchanged tree reads the first and nothing
else, and a scan of a changed tree reads only its header (the key) to know it cannot use it;
`rescan` uses the second when only a few CUDA files changed. The rules a scan reports (--select, --ignore) are not part of the scope: a
stored scan holds every rule's findings and the engine narrows them. Nor are the targets, apart
from naming the entries: a scan for some of a stored scan's targets starts from that scan's state
and narrows it (`rescan`), where a scan of the same scope for those targets alone is not stored.
Entries are written atomically
and checked like facts entries; a scan that saw a file modified within the racy window stores
nothing, since that file's hash may not match the bytes its facts came from.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from archlint.engine.cache import read_entry, read_header, read_header_key, rekeyed_entry, store_value
from archlint.engine.quoted import quoted_lines
from archlint.engine.stateparts import SMALL, Loaded, StateParts, Stamp, fields_of
from archlint.knowledge.arch import default_targets, parse_target
from archlint.model.binary import BinaryFacts
from archlint.model.files import SourceFile
from archlint.model.findings import Diagnostic, Finding, Suppression
from archlint.model.gates import Gate, GuardedUnits
from archlint.model.scan import ScanOptions, ScanResult
from archlint.model.tactics import LinkedTileList

if TYPE_CHECKING:  # a stored result loads without the judging and linking modules: unpickling a
    # state imports what it holds
    from archlint.checks.context import GateResult
    from archlint.engine.linkstore import StoredLinks
    from archlint.engine.pyanswers import PyRecord
    from archlint.engine.pysource import NameTables

FOLDER = "scans"  # inside the facts cache folder: pruned and cleared with it


@dataclass(frozen=True)
class GateMemo:
    """A judged gate and what its verdicts can depend on, so a re-scan can judge it alone."""

    gate: Gate
    units: GuardedUnits
    deps: frozenset[str]  # every CUDA file its units can include, for any target


@dataclass(frozen=True)
class OpLinking:
    """What the gates' op calls were linked from (gates.ops.through_ops), kept where some op call
    names an op the scan registers: a CUDA re-scan links them again through the changed files."""

    judged: tuple[tuple[Gate, GuardedUnits], ...]  # the gates to judge, before their op calls were linked
    ops: dict[str, tuple]  # gate id -> its op calls and the op namespaces Python defines
    wholes: tuple[tuple[Gate, GuardedUnits], ...]  # the build's own lists


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
    targets: tuple[str, ...] = ()  # the targets judged, in arch order (ScanResult.targets)
    free: frozenset[str] = frozenset()  # CUDA files no gate's units can include (Context.free)
    tile_lists: tuple[LinkedTileList, ...] = ()  # CUTLASS tile lists with their gates (Context.tile_lists): Python facts a re-scan keeps
    binaries: tuple[BinaryFacts, ...] = ()  # the prebuilt extension modules' images (ScanResult.binaries)
    # the units the files no gate builds are told from (the Python gates' and the build lists', before
    # op calls add theirs); None where the scan had none of those gates (then no file is free)
    free_sources: tuple[str, ...] | None = None
    host_linked: bool = False  # some gate's op calls name an op the scan registers (linked scan-wide, gates.ops)
    host_names: frozenset[str] = frozenset()  # the names the host checks' reach looked up (gates.host)
    host_first: frozenset[str] = frozenset()  # the host files a cold scan read in full first (engine.linking)
    host_words: tuple[str, ...] = ()  # the words that chose them
    pylink: PyRecord | None = None  # what each answer of the Python link read (engine.relink)
    pynames: NameTables | None = None  # which Python file spells which names, as the link read them
    op_linking: OpLinking | None = None  # where host_linked (engine.rescan links the op calls again)


@dataclass(frozen=True)
class Slot:
    """Where the result and the state of one target set are kept."""

    targets: tuple[str, ...]  # target names, in arch order
    key: bytes  # the scope and the targets: the state's entry key
    result_key: bytes  # that and every file's content: the result's entry key
    result_path: Path
    state_path: Path
    report_path: Path  # the last reports rendered from the result are named after it (StoredReport)
    lines_path: Path  # the line hashes of the files its findings are in, by content (engine.quoted)


class StoredReport:
    """The last reports front ends rendered from a stored result, kept beside it: a scan whose
    result is the one a report was rendered from shows it again without post-processing and
    rendering the result anew, whether nothing changed or an edit left the result as it was (a
    comment, a kernel's body that no rule reads). One per slot and settings (a hook's text report
    and a SARIF upload take turns), the newest KEPT of a slot; found by the result's content (the
    checksum of its stored bytes), what the engine did to it on the way out (`key`), the lines of
    the scanned files the report quotes (engine.quoted), and everything else the rendering read
    (the front end's `settings`: its options, the report's root, the folder it runs in)."""

    KEPT = 4

    def __init__(self, slot: Slot, key: bytes, root: str, places: tuple[tuple[str, int], ...], digests: dict[str, str]) -> None:
        self._stem = slot.report_path.name.removesuffix(".pkl")
        self._folder = slot.report_path.parent
        self.key = key
        self._quoted = (root, places, digests, slot.lines_path, slot.key)

    def read(self, settings: bytes) -> object | None:
        key, path = self._key(settings), self._path(settings)
        if key is None or read_header_key(path) != key:
            return None  # another result's report, or other settings': kept until the next is written
        return read_entry(path, key, object)

    def write(self, settings: bytes, value: object) -> None:
        key = self._key(settings)
        if key is None:
            return
        store_value(self._path(settings), key, value)
        kept = sorted(self._folder.glob(f"{self._stem}-*.pkl"), key=_modified, reverse=True)
        for path in kept[self.KEPT:]:
            path.unlink(missing_ok=True)

    def _path(self, settings: bytes) -> Path:
        return self._folder / f"{self._stem}-{hashlib.sha256(settings).hexdigest()[:16]}.pkl"

    def _key(self, settings: bytes) -> bytes | None:
        """None where a quoted file no longer holds what the scan read: no report is read or kept."""
        lines = self._quoted_lines
        return hashlib.sha256(self.key + settings + lines).digest() if lines is not None else None

    @cached_property
    def _quoted_lines(self) -> bytes | None:
        lines = quoted_lines(*self._quoted)
        return repr(lines).encode("utf-8", "surrogateescape") if lines is not None else None


def _modified(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


class ScanStore:
    def __init__(self, cache, base: bytes, targets: tuple[str, ...], digests: tuple[tuple[str, str, str], ...], racy: bool):
        self.cache = cache
        self.base = base
        self.digests = digests
        self.racy = racy
        self._folder = cache.folder / FOLDER
        self._prefix = base.hex()[:32]  # every slot's file names start with it
        self.slot = self._slot(targets)
        self._result_sum: bytes | None = None  # the checksum of the slot's stored result, once read or written
        self._loaded: Loaded | None = None  # the slot's state, as read: its parts a re-scan left are kept
        # the slot's state index and small part, once read (engine.samefacts reads them first)
        self._stamp: Stamp | None = None
        self._small: tuple[object] | None = None

    @classmethod
    def open(cls, cache, options: ScanOptions, discovery) -> ScanStore:
        seen = [cache.fingerprint(file) for file in discovery.files]
        racy = any(one is None or one[1] for one in seen)
        digests = sorted((file.path, file.language, one[0] if one else "unreadable") for file, one in zip(discovery.files, seen))
        return cls(cache, _scope_key(cache, options, discovery), target_names(options.targets), tuple(digests), racy)

    def _slot(self, targets: tuple[str, ...]) -> Slot:
        key = hashlib.sha256(self.base + repr(targets).encode()).digest()
        result_key = _result_key(key, self.digests)
        stem = f"{self._prefix}-{_tag(targets)}"
        return Slot(targets, key, result_key, self._folder / f"{stem}-result.pkl", self._folder / f"{stem}-state.pkl",
                    self._folder / f"{stem}-report.pkl", self._folder / f"{stem}-lines.pkl")

    def is_new(self) -> bool:
        """No scan of this scope was stored yet, for any targets: the first (cold) scan of the tree."""
        return not any(self._folder.glob(f"{self._prefix}-*.pkl"))

    def unchanged_result(self, slot: Slot | None = None) -> ScanResult | None:
        slot = slot or self.slot
        checksum = self._current_checksum(slot)
        if checksum is None:
            return None  # another tree's result (kept: a re-scan that stores nothing leaves it valid)
        result = read_entry(slot.result_path, slot.result_key, ScanResult, keep=True)
        if result is not None and slot == self.slot:
            self._result_sum = checksum
        return result

    def is_current(self, slot: Slot) -> bool:
        """The slot's result is of this very tree (its header's key says so)."""
        return self._current_checksum(slot) is not None

    def _current_checksum(self, slot: Slot) -> bytes | None:
        """The checksum of the slot's stored result where it is of this very tree, else None."""
        head = read_header(slot.result_path)
        return head[1] if head is not None and head[0] == slot.result_key else None

    def wider(self) -> list[Slot]:
        """The stored slots of this scope whose targets include every one of this scan's, and more:
        those whose result is of this very tree first, then the newest."""
        wanted = set(self.slot.targets)
        found: dict[tuple[str, ...], float] = {}
        for path in self._folder.glob(f"{self._prefix}-*-state.pkl"):
            targets = _untag(path.name.removeprefix(f"{self._prefix}-").removesuffix("-state.pkl"))
            if targets is not None and wanted < set(targets):
                try:
                    found[targets] = path.stat().st_mtime
                except OSError:
                    continue
        slots = [self._slot(targets) for targets in sorted(found, key=found.__getitem__, reverse=True)]
        return sorted(slots, key=lambda slot: not self.is_current(slot))

    def previous_state(self, slot: Slot | None = None) -> tuple[dict[str, tuple[str, str]], ScanState] | None:
        """The slot's last state and the files it saw: path -> (language, sha256). Its CUDA files'
        links stay in the file, mapped, until a re-scan asks for them (linkstore.PickledLinks)."""
        slot = slot or self.slot
        if slot == self.slot:
            loaded = self._parts(slot).load(self._stamp, {SMALL: self._small} if self._small else {})
        else:
            loaded = self._parts(slot).load()
        if loaded is None:
            return None
        try:
            state = ScanState(**fields_of(loaded))  # type: ignore[arg-type]
        except TypeError:  # a state of other fields
            return None
        if slot == self.slot:
            self._loaded = loaded
        return {path: (language, digest) for path, language, digest in loaded.digests}, state

    def stamp(self) -> Stamp | None:
        """The index of the slot's stored state: the files it saw, with their digests, and its parts."""
        if self._stamp is None:
            self._stamp = self._parts(self.slot).stamp()
        return self._stamp

    def small_fields(self, stamp: Stamp) -> dict[str, object] | None:
        """The stored state's fields other than its large ones (stateparts.ON_THEIR_OWN)."""
        self._small = self._parts(self.slot).part(stamp, SMALL)
        return self._small[0] if self._small is not None and isinstance(self._small[0], dict) else None

    def _parts(self, slot: Slot) -> StateParts:
        return StateParts(slot.state_path, slot.key)

    def carry_over(self, stamp: Stamp) -> ScanResult | None:
        """The slot's stored result where it is of the files `stamp` saw, stored again as this
        tree's with the state (its parts as they are): for a scan whose changes cannot change
        either (engine.samefacts). None where the result is of another tree."""
        was = _result_key(self.slot.key, stamp.digests)
        if self.racy:  # nothing is stored
            return read_entry(self.slot.result_path, was, ScanResult, keep=True)
        kept = rekeyed_entry(self.slot.result_path, self.slot.result_key, ScanResult, lambda _: True, was=was, keep=True)
        if kept is None:
            return None
        self._parts(self.slot).restamp(stamp, self.digests)
        self._result_sum = kept[1]
        return kept[0]  # type: ignore[return-value]

    def changed_files(self, previous: dict[str, tuple[str, str]], files: tuple[SourceFile, ...]) -> list[SourceFile] | None:
        """Files whose content differs from the previous state's, or None when the file set differs."""
        if set(previous) != {path for path, _, _ in self.digests}:
            return None
        now = {path: (language, digest) for path, language, digest in self.digests}
        return [file for file in files if previous[file.path] != now[file.path]]

    def report(self, result: ScanResult, root: str, way_out: bytes) -> StoredReport | None:
        """Where the report of this scan's result (the stored one: its paths relative to `root`, the
        folder analysed) is kept, or None when the result is not stored (a file changed within the
        racy window): `way_out` says what the engine does to the result before it returns it."""
        if self.racy or self._result_sum is None:
            return None
        key = hashlib.sha256(self.slot.key + self._result_sum + way_out).digest()
        places = tuple((f.location.path, f.location.line) for f in result.findings)
        return StoredReport(self.slot, key, root, places, {path: digest for path, _, digest in self.digests})

    def save(self, result: ScanResult, state: ScanState | None) -> None:
        """This scan's result (and state, when given) in its own slot."""
        if self.racy:
            return
        self._result_sum = self._save_result(result, state is not None and self._gates_differ(state))
        if state is not None:
            self._parts(self.slot).save(self.digests, state, self._loaded)

    def _save_result(self, result: ScanResult, changed: bool) -> bytes | None:
        """Store the result; its entry's checksum, which stands for its content: a result equal to
        the one stored (an edit that changed no finding) keeps the stored bytes, since the same
        content can pickle to other bytes (which of its equal parts are one object). `changed`:
        the result is known to differ from the stored one, which is then not read to compare."""
        path = self.slot.result_path
        kept = None if changed else rekeyed_entry(path, self.slot.result_key, ScanResult, result.__eq__)
        # in band: the checksum then stands for the result's pickle
        return kept[1] if kept is not None else store_value(path, self.slot.result_key, result, out_of_band=False)

    def _gates_differ(self, state: ScanState) -> bool:
        """Whether the state's gates, each with its text, are other than those of the state this scan
        loaded (an edited gate): the result reports each gate with its text, so it differs from the
        stored result of the loaded state. (Were the stored result another's, the compare skipped
        only costs the stored report, made again once.)"""
        loaded = self._loaded.values.get("results") if self._loaded is not None else None
        if not isinstance(loaded, tuple):
            return False
        return [(r.gate.id, r.gate.text) for r in loaded] != [(r.gate.id, r.gate.text) for r in state.results]


def _result_key(key: bytes, digests: tuple[tuple[str, str, str], ...]) -> bytes:
    """A result's entry key: the slot's and every file's content, so a changed tree misses on the
    entry's header alone."""
    return hashlib.sha256(key + repr(digests).encode("utf-8", "surrogateescape")).digest()


def target_names(targets: tuple[str, ...]) -> tuple[str, ...]:
    """The targets a scan judges, each once and in arch order whatever order they were given in:
    those named, else the knowledge base's defaults."""
    return tuple(t.name for t in (sorted({parse_target(t) for t in targets}) or default_targets()))


_TAG_LIMIT = 150  # characters of target names in an entry's file name; a longer list is hashed


def _tag(targets: tuple[str, ...]) -> str:
    """The targets as a file name tells them (`sm_80+sm_90a`), so a scan for fewer finds them."""
    tag = "+".join(targets)
    return tag if len(tag) <= _TAG_LIMIT else "h" + hashlib.sha256(tag.encode()).hexdigest()[:32]


def _untag(tag: str) -> tuple[str, ...] | None:
    return None if tag.startswith("h") else tuple(tag.split("+"))


def _scope_key(cache, options: ScanOptions, discovery) -> bytes:
    """What the analysis depends on besides the files and the targets: not the rules reported, nor
    the paths named on the command line (the files discovered from them, and the folder they are
    analysed from, stand for them: engine.roots)."""
    scope = (
        cache.salt, discovery.root, tuple(str(Path(p).resolve()) for p in options.include_dirs),
        options.defines, options.max_file_bytes, options.toolkit, options.compile_probe,
    )
    return hashlib.sha256(repr(scope).encode("utf-8", "surrogateescape")).digest()
