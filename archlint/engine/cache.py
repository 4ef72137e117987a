"""Content-addressed cache of per-file facts, kept in the user's cache folder.

An entry is found by a key that covers everything the facts depend on: archlint's version, its
shipped data, its own source code, the size limit, the file's root-relative path and the sha256
of its bytes. So a changed file, a new archlint or a new knowledge base simply misses; nothing is
ever invalidated in place. An entry is a header (magic, key, payload length and sha256) followed
by the pickled FileFacts; one that fails any check is deleted and rebuilt, never trusted.

Writes go to a temporary file in the entry's own folder and are moved into place with
os.replace, so concurrent scans see either no entry or a whole one. A file modified within the
last two seconds, or changed while it was being read, is not stored (the racy-git rule: its
mtime cannot prove the bytes read are the bytes hashed).
"""

from __future__ import annotations

import hashlib
import mmap
import os
import pickle
import struct
import tempfile
import time
from dataclasses import dataclass, replace
from functools import lru_cache
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import NamedTuple

from archlint import __version__
from archlint.engine.collector import collector_paused
from archlint.engine.timing import warn
from archlint.knowledge.resources import data_hash, parsed_tables, preload_tables, tree_hash
from archlint.model.files import FileFacts, SourceFile
from archlint.model.scan import ScanOptions

MAGIC = b"ALFACTS2"  # 2: the buffer table after the payload
_HEADER = struct.Struct(">8s32s32sQ")  # magic, key, payload sha256, payload length
_COUNT = struct.Struct(">I")  # how many out-of-band buffers follow the payload (then their sizes)
STATS_NAME = "stats-v1.idx"  # (size, mtime_ns, inode, device) -> sha256, for files hashed at rest
STATS_LIMIT = 500_000
TABLES_NAME = "rules-tables.idx"  # the shipped rules files' tables as parsed, for the salt's data
LAYOUT = "facts-v1"  # the folder inside cache_dir(); a format change picks a new name
RACY_SECONDS = 2.0
_RACY_NS = int(RACY_SECONDS * 1e9)
PRUNE_EVERY_SECONDS = 24 * 3600
UNUSED_SECONDS = 30 * 24 * 3600  # entries not read for this long are pruned


def cache_dir() -> Path:
    """$ARCHLINT_CACHE_DIR, else $XDG_CACHE_HOME/archlint, else ~/.cache/archlint."""
    explicit = os.environ.get("ARCHLINT_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "archlint"


@lru_cache(maxsize=1)
def code_hash() -> str:
    """Hash of archlint's own source files: a code change must invalidate cached facts."""
    return tree_hash(Path(__file__).resolve().parents[1], ".py")


def _salt(max_bytes: int) -> bytes:
    return f"{__version__}\0{data_hash()}\0{code_hash()}\0{max_bytes}".encode()


class _Seen(NamedTuple):  # made for every file of every scan: a tuple is the cheapest record
    """What get() saw of a file: its content hash and the stat that vouches for it."""

    digest: str
    stat: tuple[int, int, int, int]  # size, mtime_ns, inode, device
    racy: bool


class FactsCache:
    def __init__(self, folder: Path, salt: bytes, known: dict | None = None):
        self.folder = folder
        self._salt = salt
        self._seen: dict[str, _Seen] = {}
        # absolute path -> (stat, sha256 of its bytes)
        self._known = _load_stats(folder / STATS_NAME) if known is None else known
        self._known_changed = False
        self._tables_held: frozenset[str] = frozenset()  # the rules files' tables the folder holds

    @classmethod
    def open(cls, max_bytes: int = 4 * 1024 * 1024, roots: tuple[str, ...] = ()) -> FactsCache | None:
        """The cache, or None when its folder cannot be used (`usable` says why)."""
        try:
            return cls.usable(max_bytes, roots)
        except Unusable:
            return None

    @classmethod
    def usable(cls, max_bytes: int = 4 * 1024 * 1024, roots: tuple[str, ...] = ()) -> FactsCache:
        """The cache; Unusable when its folder cannot be made or written (a file in the way, no
        permission, a full disk) or would lie inside a scanned root."""
        folder = cache_dir() / LAYOUT
        try:
            resolved = folder.resolve()
            if any(_inside(resolved, Path(root).resolve()) for root in roots):
                raise Unusable(cache_dir(), "it lies inside a scanned folder")
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            if not os.access(folder, os.W_OK | os.X_OK):
                raise Unusable(cache_dir(), "not writable")
            _probe(folder)
            salt = _salt(max_bytes)
        except (OSError, RuntimeError) as error:
            raise Unusable(cache_dir(), _reason(error)) from None
        _prune_now_and_then(folder)
        cache = cls(folder, salt)
        cache._preload_tables()
        return cache

    def get(self, file: SourceFile) -> FileFacts | None:
        seen = self._look(file)
        if seen is None:
            return None
        key = self._key(file, seen.digest)
        facts = read_entry(self._entry(key), key, FileFacts)
        if facts is None:
            return None
        self._seen.pop(file.absolute, None)
        return replace(facts, file=file)

    def stored(self, file: SourceFile, digest: str) -> FileFacts | None:
        """The facts stored for the file as it was when its bytes hashed to `digest` (an earlier
        version: what a re-scan compares the new facts with), or None."""
        key = self._key(file, digest)
        facts = read_entry(self._entry(key), key, FileFacts)
        return None if facts is None else replace(facts, file=file)

    def sink(self, files: list[SourceFile]) -> EntrySink:
        """What a worker needs to store the facts of these files itself (picklable, small): each
        file's key and the stat its hash was taken at. Files not seen by get() are hashed now."""
        expected = {}
        for file in files:
            seen = self._seen.pop(file.absolute, None) or self._look(file, remember=False)
            if seen is not None and not seen.racy:
                expected[file.absolute] = (self._key(file, seen.digest), seen.stat)
        return EntrySink(self.folder, expected)

    @property
    def salt(self) -> bytes:
        """What every key shares: archlint's version, data and code, and the size limit."""
        return self._salt

    def fingerprint(self, file: SourceFile) -> tuple[str, bool] | None:
        """The sha256 of the file's bytes and whether it is racy (modified too recently to trust
        its stat), or None when it cannot be read."""
        seen = self._look(file)
        return None if seen is None else (seen.digest, seen.racy)

    def _look(self, file: SourceFile, remember: bool = True) -> _Seen | None:
        before = _stat(file.absolute)
        if before is None:
            return None
        known = self._known.get(file.absolute)
        if known is not None and known[0] == before and time.time_ns() - before[1] >= _RACY_NS:
            seen = _Seen(known[1], before, False)  # unchanged since it was hashed: same size, mtime, inode
            if remember:
                self._seen[file.absolute] = seen
            return seen
        try:
            with open(file.absolute, "rb") as handle:
                digest = _binary_digest(handle, before[0]) if file.language == "binary" else hashlib.file_digest(handle, "sha256").hexdigest()
        except OSError:
            return None
        racy = time.time_ns() - before[1] < _RACY_NS or _stat(file.absolute) != before
        seen = _Seen(digest, before, racy)
        if not racy:
            self._known[file.absolute] = (before, digest)
            self._known_changed = True
        if remember:
            self._seen[file.absolute] = seen
        return seen

    def detached(self) -> FactsCache:
        """A copy that knows no file's hash: a few bytes to send to a worker, which hashes the
        files it stores itself."""
        return FactsCache(self.folder, self._salt, known={})

    def adopt(self, copy: FactsCache) -> None:
        """Take on what a copy of this cache, sent to another process, learned there (the files it
        hashed and the facts it took)."""
        self._seen, self._known = copy._seen, copy._known
        self._known_changed = self._known_changed or copy._known_changed

    def flush(self) -> None:
        """Save the stat → hash table, so the next scan need not re-read unchanged files, and the
        rules files' tables, where this scan parsed some the folder did not hold."""
        if self._known_changed:
            _save_stats(self.folder / STATS_NAME, self._known)
            self._known_changed = False
        parsed = parsed_tables()
        if not parsed.keys() <= self._tables_held:
            if store_value(self.folder / TABLES_NAME, self._tables_key(), parsed, out_of_band=False) is not None:
                self._tables_held = frozenset(parsed)

    def _preload_tables(self) -> None:
        """The rules files' tables as an earlier scan of this salt (its data) parsed them."""
        tables = read_entry(self.folder / TABLES_NAME, self._tables_key(), dict)
        if isinstance(tables, dict):
            preload_tables(tables)
            self._tables_held = frozenset(tables)

    def _tables_key(self) -> bytes:
        return hashlib.sha256(self._salt + b"\0" + TABLES_NAME.encode()).digest()

    def _key(self, file: SourceFile, digest: str) -> bytes:
        text = b"\0".join((self._salt, file.path.encode("utf-8", "surrogateescape"), file.language.encode(), digest.encode()))
        return hashlib.sha256(text).digest()

    def _entry(self, key: bytes) -> Path:
        return _entry_path(self.folder, key)


def open_cache(options: ScanOptions) -> FactsCache | None:
    """The facts cache the options ask for (None with --no-cache, or where it cannot be used: then a
    warning says why, since every scan would be a cold one)."""
    if not options.use_cache:
        return None
    try:
        return FactsCache.usable(options.max_file_bytes, options.paths)
    except Unusable as problem:
        warn(f"{problem}; scanning without a cache")
        return None


class Unusable(Exception):
    """The cache folder cannot be used: a scan goes on without it."""

    def __init__(self, folder: Path, reason: str) -> None:
        super().__init__(f"cache folder {folder} is not usable ({reason})")
        self.folder, self.reason = folder, reason


class NotACacheFolder(Exception):
    """`archlint cache clear` was pointed at something that is not archlint's cache: nothing is removed."""


_BINARY_ENDS = 1 << 20


def _binary_digest(handle, size: int) -> str:
    """A prebuilt library's digest: its size and its first and last MiB (the ELF header, the section
    table, and in practice the fatbin's first headers), not its whole content: hashing a 1 GB
    library would cost seconds, more than the scan reads of it. A rebuild that changes its images
    changes its size or its section table."""
    digest = hashlib.sha256(b"binary\0%d\0" % size)
    digest.update(handle.read(_BINARY_ENDS))
    if size > 2 * _BINARY_ENDS:
        handle.seek(size - _BINARY_ENDS)
    digest.update(handle.read(_BINARY_ENDS))
    return digest.hexdigest()


def _probe(folder: Path) -> None:
    """Write a page into the folder and delete it: a read-only or full file system fails here (OSError)."""
    handle, name = tempfile.mkstemp(prefix=".tmp-probe-", dir=folder)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(bytes(4096))
    finally:
        _discard(Path(name))


def _reason(error: OSError | RuntimeError) -> str:
    """`No space left on device`, `Not a directory`: what the system said, without the path."""
    text = getattr(error, "strerror", None) or str(error)
    return text[:1].lower() + text[1:]


def _origin() -> str:
    return " (ARCHLINT_CACHE_DIR)" if os.environ.get("ARCHLINT_CACHE_DIR") else ""


def clear() -> int:
    """Delete every cache entry (and any temporary file a killed scan left); returns how many entries.
    NotACacheFolder, with nothing removed, when the cache folder is a file or a folder holding other
    things than archlint's cache (ARCHLINT_CACHE_DIR pointing at the wrong place)."""
    top = cache_dir()
    folder = top / LAYOUT
    removed = 0
    if not top.exists() and not top.is_symlink():
        return 0
    if not top.is_dir():
        raise NotACacheFolder(f"{top}{_origin()} is not a folder, so not an archlint cache; nothing removed")
    if not folder.is_dir():
        if folder.exists() or any(top.iterdir()):
            raise NotACacheFolder(f"{top}{_origin()} is not an archlint cache folder (it holds no {LAYOUT} folder); nothing removed")
        return 0
    _discard(folder / STATS_NAME)
    _discard(folder / TABLES_NAME)
    for shard in sorted(folder.iterdir()):
        if not shard.is_dir() or shard.is_symlink():
            continue
        for item in shard.iterdir():
            if item.name.endswith(".pkl") or item.name.startswith(".tmp-"):
                try:
                    item.unlink()
                except OSError:
                    continue
                removed += item.name.endswith(".pkl")
        try:
            shard.rmdir()
        except OSError:
            pass
    return removed


@dataclass(frozen=True)
class EntrySink:
    """Stores facts into the cache from any process: an entry is written only when the file still
    has the stat its hash was taken at (else the bytes the facts came from may not be those hashed)."""

    folder: Path
    expected: dict[str, tuple[bytes, tuple[int, int, int, int]]]  # absolute path -> (key, stat)

    def only(self, files: list[SourceFile]) -> EntrySink:
        """The part of the sink these files need (what a batch carries to its worker)."""
        return EntrySink(self.folder, {f.absolute: self.expected[f.absolute] for f in files if f.absolute in self.expected})

    def write(self, file: SourceFile, payload: bytes) -> None:
        found = self.expected.get(file.absolute)
        if found is None or _stat(file.absolute) != found[1]:
            return
        write_entry(_entry_path(self.folder, found[0]), found[0], payload)


def _entry_path(folder: Path, key: bytes) -> Path:
    name = key.hex()
    return folder / name[:2] / f"{name}.pkl"


# ---------------------------------------------------------------- entries on disk


def read_entry(path: Path, key: bytes, kind: type, keep: bool = False, mapped: bool = False):
    """The entry's value, or None (a bad entry is deleted). `keep`: the value lives to the end of
    the scan, so it is loaded straight out of the cycle collector's sight (see unpickle); `mapped`:
    the file is mapped, not read, so its out-of-band buffers (write_entry's) reach the value unread
    and only what the value reads of them is (whatever reads a part of them checks it)."""
    try:
        with open(path, "rb") as handle:
            data = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) if mapped else handle.read()
    except (OSError, ValueError):  # ValueError: an empty file cannot be mapped
        return None
    value = _decode(data, key, kind, keep)
    if value is None:
        _discard(path)
    else:
        _touch(path)
    return value


def _decode(data: bytes | mmap.mmap, key: bytes, kind: type = FileFacts, keep: bool = False):
    view = memoryview(data)
    if len(view) < _HEADER.size:
        return None
    magic, stored_key, checksum, length = _HEADER.unpack_from(view)
    table = _HEADER.size + length
    if magic != MAGIC or stored_key != key or table + _COUNT.size > len(view):
        return None
    (count,) = _COUNT.unpack_from(view, table)
    start = table + _COUNT.size + 8 * count
    if start > len(view) or hashlib.sha256(view[_HEADER.size : start]).digest() != checksum:
        return None
    buffers = []
    for size in struct.unpack_from(f">{count}Q", view, table + _COUNT.size):
        buffers.append(view[start : start + size])
        start += size
    if start != len(view):
        return None
    try:
        value = unpickle(view[_HEADER.size : table], keep, buffers)
    except Exception:  # noqa: BLE001 - any failure to load means a bad entry, rebuilt from the source
        return None
    return value if isinstance(value, kind) else None


def unpickle(payload, keep: bool = False, buffers: Iterable = ()):
    """pickle.loads with the cycle collector paused (engine.collector); `keep`: the objects live to
    the end of the scan, so they are frozen before it resumes; `buffers`: its out-of-band buffers."""
    with collector_paused(freeze=keep):
        return pickle.loads(payload, buffers=buffers)


def read_header_key(path: Path) -> bytes | None:
    """The key an entry was written under, read from its header alone (None if unreadable)."""
    head = read_header(path)
    return head[0] if head is not None else None


def read_header(path: Path) -> tuple[bytes, bytes] | None:
    """The key an entry was written under and its checksum (write_entry's), read from its header
    alone (None if unreadable)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(_HEADER.size)
    except OSError:
        return None
    if len(head) < _HEADER.size:
        return None
    magic, key, checksum, _ = _HEADER.unpack(head)
    return (key, checksum) if magic == MAGIC else None


def store_value(path: Path, key: bytes, value: object, out_of_band: bool = True) -> bytes | None:
    """Pickle the value into an entry; its checksum, or None where it could not be pickled or
    written. Its pickle buffers (a stored state's links) are written out of band, after the payload,
    to be mapped from the file when it is read (read_entry's `mapped`), unless `out_of_band` is false:
    then the checksum covers every byte, and stands for the value's pickle."""
    buffers: list[pickle.PickleBuffer] = []
    try:
        payload = pickle.dumps(value, protocol=5, buffer_callback=buffers.append if out_of_band else None)
    except (pickle.PicklingError, TypeError, AttributeError, RecursionError):
        return None
    return write_entry(path, key, payload, [buffer.raw() for buffer in buffers])


def rekeyed_entry(path: Path, key: bytes, kind: type, keeps: Callable[[object], bool], was: bytes | None = None,
                  keep: bool = False) -> tuple[object, bytes] | None:
    """Where the entry at `path` (under whatever key, or under `was` where given) holds a `kind` that
    `keeps` accepts, the entry written again under `key`, its bytes otherwise as they were (the file
    is read once): its value (`keep`: as read_entry's) and its checksum (which the key is not part
    of). Else None, and the entry is left as it is."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    if len(data) < _HEADER.size:
        return None
    magic, stored_key, checksum, length = _HEADER.unpack_from(data)
    if was is not None and stored_key != was:
        return None
    value = _decode(data, stored_key, kind, keep)
    if magic != MAGIC or value is None or not keeps(value):
        return None
    header = _HEADER.pack(MAGIC, key, checksum, length)
    return (value, checksum) if _write_atomic(path, header, memoryview(data)[_HEADER.size:]) else None


def write_entry(path: Path, key: bytes, payload: bytes, buffers: Sequence[bytes | memoryview] = ()) -> bytes | None:
    """The header, the payload, the sizes of its out-of-band pickle buffers and the buffers; the
    checksum covers all but the buffers (read_entry(..., mapped=True) leaves them to be read as used).
    The checksum, where the entry was written."""
    table = _COUNT.pack(len(buffers)) + struct.pack(f">{len(buffers)}Q", *map(len, buffers))
    checksum = hashlib.sha256(payload)
    checksum.update(table)
    header = _HEADER.pack(MAGIC, key, checksum.digest(), len(payload))
    try:
        path.parent.mkdir(exist_ok=True, mode=0o700)
    except OSError:
        return None
    # in parts: a stored scan is tens of MB
    return checksum.digest() if _write_atomic(path, header, payload, table, *buffers) else None


def _write_atomic(path: Path, *parts: bytes | memoryview) -> bool:
    """Write to a temporary file in the same folder, then rename: readers never see half a file.
    Whether it was written."""
    temporary = None
    try:
        handle, temporary = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
        with os.fdopen(handle, "wb") as out:
            for part in parts:
                out.write(part)
        os.replace(temporary, path)
        temporary = None
        return True
    except OSError:
        return False
    finally:
        if temporary is not None:
            _discard(Path(temporary))


def _discard(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass


def _touch(path: Path) -> None:
    """Mark an entry as used, at most once a day, so pruning keeps what is read."""
    try:
        if time.time() - path.stat().st_mtime > PRUNE_EVERY_SECONDS:
            os.utime(path)
    except OSError:
        pass


def _prune_now_and_then(folder: Path) -> None:
    """Delete entries unused for a month; runs at most once a day, keeping the cache bounded."""
    stamp = folder / ".pruned"
    try:
        if time.time() - stamp.stat().st_mtime < PRUNE_EVERY_SECONDS:
            return
    except FileNotFoundError:
        pass
    except OSError:
        return
    try:
        stamp.touch()
        cutoff = time.time() - UNUSED_SECONDS
        for shard in folder.iterdir():
            if shard.is_dir() and not shard.is_symlink():
                for entry in shard.iterdir():
                    if entry.stat().st_mtime < cutoff:
                        _discard(entry)
    except OSError:
        return


# ---------------------------------------------------------------- stat table


def _load_stats(path: Path) -> dict:
    """The stat table, or an empty one when it is missing or damaged (it only saves work)."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError:
        return {}
    if len(data) < 32 or hashlib.sha256(data[32:]).digest() != data[:32]:
        return {}
    try:
        table = unpickle(data[32:])
    except Exception:  # noqa: BLE001 - a damaged table is simply rebuilt
        return {}
    return table if isinstance(table, dict) else {}


def _save_stats(path: Path, table: dict) -> None:
    if len(table) > STATS_LIMIT:
        table = dict(list(table.items())[-STATS_LIMIT:])
    payload = pickle.dumps(table, protocol=5)
    _write_atomic(path, hashlib.sha256(payload).digest(), payload)


# ---------------------------------------------------------------- helpers


def _stat(path: str) -> tuple[int, int, int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_size, info.st_mtime_ns, info.st_ino, info.st_dev)


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents
