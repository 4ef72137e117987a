"""Per-stage wall times and files touched, printed to stderr when ARCHLINT_PROFILE is set (a
debugging aid and what bench/scan_bench.py reads), and a progress line on stderr when it is a
terminal: the stage and how many of its files are done."""

from __future__ import annotations

import os
import sys
import time
from contextlib import contextmanager

_current: list[str] = []  # the stage running now, for the progress line


@contextmanager
def stage(name: str, files: int | None = None, unit: str = "files"):
    """Time one stage; `files`: how many files (or other `unit`s) it reads, for the profile line."""
    _current.append(name)
    start = time.perf_counter()
    try:
        yield
    finally:
        _current.pop()
        _clear_progress()
        if os.environ.get("ARCHLINT_PROFILE"):
            touched = f"  {files:6d} {unit}" if files is not None else ""
            print(f"archlint: stage {name:<10} {time.perf_counter() - start:8.2f} s{touched}", file=sys.stderr)


_shown = [False]  # a progress line is on screen


def stage_progress(done: int, total: int) -> None:
    """`archlint: facts 1200/3237 files`, rewritten in place on a terminal; nothing elsewhere."""
    if not total or not _is_terminal():
        return
    name = _current[-1] if _current else "scan"
    sys.stderr.write(f"\rarchlint: {name} {done}/{total} files\x1b[K")
    sys.stderr.flush()
    _shown[0] = True


def _clear_progress() -> None:
    if _shown[0]:
        sys.stderr.write("\r\x1b[K")
        sys.stderr.flush()
        _shown[0] = False


def hint(message: str) -> None:
    """One line for a person at a terminal (never in CI logs or redirected output)."""
    if _is_terminal():
        print(f"archlint: {message}", file=sys.stderr)


def _is_terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False
