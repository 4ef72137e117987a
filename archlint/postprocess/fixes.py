"""Fixes carried by findings (AL101: widen the gate's list): shown as a diff, or applied in place.

Fix locations are 1-based line/column in code points, end exclusive. Applying is allowed only
to files inside a git work tree (so the change can be reviewed and reverted), writable, and not
under site-packages: archlint never edits an installed package.
"""

from __future__ import annotations

import difflib
import os
import tempfile
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from archlint.discover import repository_root
from archlint.model.findings import Finding, Fix


class FixError(RuntimeError):
    """A fix could not be applied: overlapping edits, or a span outside the file."""


@dataclass(frozen=True)
class FileEdit:
    path: str  # relative to the report root (the repository's top), posix
    before: str
    after: str


def fixes_by_path(findings: Iterable[Finding]) -> dict[str, list[Fix]]:
    grouped: dict[str, list[Fix]] = defaultdict(list)
    for finding in findings:
        if finding.suppressed:
            continue
        for fix in finding.fixes:
            if fix not in grouped[fix.location.path]:
                grouped[fix.location.path].append(fix)
    return dict(sorted(grouped.items()))


def _offset(lines: list[str], line: int, col: int) -> int:
    if not 1 <= line <= len(lines) + 1:
        raise FixError(f"line {line} is outside the file")
    return sum(len(text) for text in lines[: line - 1]) + col - 1


def apply_to_text(text: str, fixes: Iterable[Fix]) -> str:
    """Apply non-overlapping replacements, last first so earlier offsets stay valid."""
    lines = text.splitlines(keepends=True)
    spans = []
    for fix in fixes:
        loc = fix.location
        start = _offset(lines, loc.line, loc.col)
        end = _offset(lines, loc.end_line or loc.line, loc.end_col or loc.col)
        spans.append((start, end, fix.replacement))
    spans.sort()
    for (_, end, _), (start, _, _) in zip(spans, spans[1:]):
        if start < end:
            raise FixError("overlapping fixes")
    for start, end, replacement in reversed(spans):
        text = text[:start] + replacement + text[end:]
    return text


def plan_edits(findings: Iterable[Finding], root: str | Path) -> list[FileEdit]:
    edits = []
    for path, fixes in fixes_by_path(findings).items():
        before = (Path(root) / path).read_text(encoding="utf-8")
        after = apply_to_text(before, fixes)
        if after != before:
            edits.append(FileEdit(path, before, after))
    return edits


def unified_diff(edits: Iterable[FileEdit]) -> str:
    chunks: list[str] = []
    for edit in edits:
        chunks.extend(
            difflib.unified_diff(
                edit.before.splitlines(keepends=True),
                edit.after.splitlines(keepends=True),
                fromfile=f"a/{edit.path}",
                tofile=f"b/{edit.path}",
            )
        )
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in chunks)


def refusal(path: Path) -> str | None:
    """Why archlint will not edit `path`, or None when it may."""
    resolved = path.resolve()
    if any(part in ("site-packages", "dist-packages") for part in resolved.parts):
        return "it is inside an installed package (site-packages)"
    if not os.access(resolved, os.W_OK):
        return "it is not writable"
    if repository_root(resolved.parent) is None:
        return "it is not inside a git work tree"
    return None


def apply_edits(edits: Iterable[FileEdit], root: str | Path) -> tuple[list[str], list[str]]:
    """Write each edit atomically. Returns (paths changed, 'path: reason' for those refused)."""
    changed, refused = [], []
    for edit in edits:
        target = Path(root) / edit.path
        reason = refusal(target)
        if reason:
            refused.append(f"{edit.path}: {reason}")
            continue
        write_atomic(target, edit.after)
        changed.append(edit.path)
    return changed, refused


def write_atomic(target: Path, text: str) -> None:
    """Write via a temporary file in the same folder and rename, so no partial file is left."""
    target = Path(target)
    handle = tempfile.NamedTemporaryFile(
        "w", encoding="utf-8", newline="", dir=target.parent, prefix=f".{target.name}.", suffix=".tmp", delete=False
    )
    try:
        with handle:
            handle.write(text)
        os.chmod(handle.name, target.stat().st_mode & 0o7777 if target.exists() else 0o666 & ~_umask())
        os.replace(handle.name, target)
    except BaseException:
        Path(handle.name).unlink(missing_ok=True)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
