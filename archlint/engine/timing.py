"""Per-stage wall times and files touched on stderr: with `archlint scan -v`, or ARCHLINT_PROFILE set
(a debugging aid and what bench/scan_bench.py reads); and a progress line on stderr when it is a
terminal: the stage and how many of its files are done. With ARCHLINT_PROFILE_DIR set, each stage
also runs under cProfile and its statistics are written there as `<n>-<stage>.prof` (the main
process only: profile with `--jobs 1` to see the extraction too; bench/stage_profile.py reads them)."""

from __future__ import annotations

import os
import sys
import time
from cProfile import Profile
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_SHOWN: ContextVar[bool] = ContextVar("archlint_stage_times", default=False)

_current: list[str] = []  # the stage running now, for the progress line


@contextmanager
def stage_times(enabled: bool = True) -> Iterator[None]:
    """Print each stage's time while the block runs (`-v`), and the whole block's at its end."""
    token = _SHOWN.set(enabled or _SHOWN.get())
    start = time.perf_counter()
    try:
        yield
    finally:
        _SHOWN.reset(token)
        if enabled:
            _say("total", time.perf_counter() - start)


class Touched:
    """How many files (or other units) a stage reads, where that is known only as it ends."""

    def __init__(self, files: int | None) -> None:
        self.files = files


@contextmanager
def stage(name: str, files: int | None = None, unit: str = "files") -> Iterator[Touched]:
    """Time one stage; `files`: how many files (or other `unit`s) it reads, for the profile line
    (or set on what the block is given)."""
    _current.append(name)
    touched = Touched(files)
    profile = _profile_start(name)
    start = time.perf_counter()
    try:
        yield touched
    finally:
        _profile_end(profile, name)
        _current.pop()
        _clear_progress()
        if _SHOWN.get() or os.environ.get("ARCHLINT_PROFILE"):
            count = touched.files
            _say(name, time.perf_counter() - start, f"  {count:6d} {unit}" if count is not None else "", _rss())


_profiled = [0]  # stages profiled so far: the files' order


def _profile_start(name: str) -> Profile | None:
    if not os.environ.get("ARCHLINT_PROFILE_DIR") or len(_current) > 1:  # one profiler at a time
        return None
    profile = Profile()
    profile.enable()
    return profile


def _profile_end(profile: Profile | None, name: str) -> None:
    if profile is None:
        return
    profile.disable()
    folder = os.environ["ARCHLINT_PROFILE_DIR"]
    os.makedirs(folder, exist_ok=True)
    _profiled[0] += 1
    profile.dump_stats(os.path.join(folder, f"{_profiled[0]:02d}-{name.replace(' ', '-')}.prof"))


def _say(name: str, seconds: float, touched: str = "", rss: str = "") -> None:
    print(f"archlint: stage {name:<10} {seconds:8.2f} s{touched:<14}{rss}".rstrip(), file=sys.stderr)


def _rss() -> str:
    """The main process's resident memory as a stage ends, where /proc tells it."""
    try:
        with open("/proc/self/statm") as handle:
            pages = int(handle.read().split()[1])
    except (OSError, IndexError, ValueError):
        return ""
    return f"  rss {pages * os.sysconf('SC_PAGE_SIZE') >> 20:6d} MiB"


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


def warn(message: str) -> None:
    """`archlint: warning: ...` on stderr, terminal or not: something the user should fix."""
    print(f"archlint: warning: {message}", file=sys.stderr)


def hint(message: str) -> None:
    """One line for a person at a terminal (never in CI logs or redirected output)."""
    if _is_terminal():
        print(f"archlint: {message}", file=sys.stderr)


def _is_terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False
