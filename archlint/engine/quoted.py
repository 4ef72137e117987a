"""The lines a report quotes, for the stored report's key: a report reads the scanned files beyond
the result (SARIF's primaryLocationLineHash of each finding's line: the 100 characters from the
line's start, spaces and tabs left out), so a stored report stands only while those hashes do.

The hashes are kept per file content (sha256 -> line -> hash) in one entry per stored scan, so a
scan after an edit hashes the lines of the files whose content changed and no others.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from pathlib import Path

from archlint.engine.cache import read_entry, store_value
from archlint.postprocess.baseline import LineHasher, decided_text

Lines = tuple[tuple[str, tuple[tuple[int, str | None], ...]], ...]  # (path, ((line, hash), ...)), by path


def quoted_lines(root: str, places: Iterable[tuple[str, int]], digests: Mapping[str, str], memo_path: Path,
                 memo_key: bytes) -> Lines | None:
    """The line hash of each (path, line) (root-relative paths; `digests`: path -> sha256 of the
    content the scan read), by path; None where a file no longer holds the content the scan read.
    The hashes of a file the scan did not hash are not kept."""
    wanted: dict[str, set[int]] = {}
    for path, line in places:
        wanted.setdefault(path, set()).add(line)
    stored = read_entry(memo_path, memo_key, dict) or {}
    memo: dict[str, dict[int, str | None]] = {}
    found = []
    for path in sorted(wanted):
        digest = digests.get(path, "")
        known = dict(stored.get(digest, {})) if digest else {}
        missing = sorted(wanted[path] - known.keys())
        if missing:
            hashes = _hashes(Path(root) / path, missing, digest)
            if hashes is None:
                return None
            known.update(hashes)
        if digest:
            memo[digest] = known
        found.append((path, tuple((line, known[line]) for line in sorted(wanted[path]))))
    if memo != {digest: stored.get(digest) for digest in memo}:
        store_value(memo_path, memo_key, memo)
    return tuple(found)


def _hashes(path: Path, lines: list[int], digest: str) -> dict[int, str | None] | None:
    try:
        data = path.read_bytes()
    except OSError:
        # changed since the scan hashed it; one the scan did not read gets no hash, as in the report
        return None if digest else dict.fromkeys(lines)
    if digest and hashlib.sha256(data).hexdigest() != digest:
        return None  # changed since the scan hashed it: its next scan will see the change
    hasher = LineHasher(decided_text(data, max(lines)))
    return {line: hasher.get(line) for line in lines}

