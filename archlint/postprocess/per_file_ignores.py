"""Per-file ignores: rules left out of the files a glob matches (`per-file-ignores` in the config)."""

from __future__ import annotations

import re
from functools import lru_cache
from collections.abc import Iterable
from pathlib import PurePosixPath

from archlint.model.findings import Finding


@lru_cache(maxsize=256)
def glob_to_regex(pattern: str) -> re.Pattern[str]:
    """A gitignore-like glob: `*` within a segment, `**` across segments, `?` one character."""
    out, index = [], 0
    while index < len(pattern):
        if pattern.startswith("**/", index):
            out.append("(?:.*/)?")
            index += 3
        elif pattern.startswith("**", index):
            out.append(".*")
            index += 2
        elif pattern[index] == "*":
            out.append("[^/]*")
            index += 1
        elif pattern[index] == "?":
            out.append("[^/]")
            index += 1
        else:
            out.append(re.escape(pattern[index]))
            index += 1
    return re.compile("".join(out) + r"(?:/.*)?\Z")


def path_matches(path: str, pattern: str) -> bool:
    """Match a root-relative posix path; a pattern without '/' also matches the file name."""
    regex = glob_to_regex(pattern.lstrip("./") if pattern.startswith("./") else pattern)
    return bool(regex.match(path)) or ("/" not in pattern and bool(regex.match(PurePosixPath(path).name)))


def ignored_by_path(finding: Finding, per_file_ignores: Iterable[tuple[str, frozenset[str]]], prefix: str = "") -> bool:
    """The finding's rule is ignored for its file. Its path is from the report root; with the scan
    root at `prefix` below that, a glob may also be written from the scan root."""
    paths = [finding.location.path]
    if prefix and finding.location.path.startswith(prefix + "/"):
        paths.append(finding.location.path[len(prefix) + 1:])
    return any(
        finding.rule in rules and any(path_matches(path, glob) for path in paths) for glob, rules in per_file_ignores
    )
