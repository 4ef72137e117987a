"""Per-stage wall times and files touched on stderr: with `archlint scan -v`, or ARCHLINT_PROFILE set
(a debugging aid and what bench/scan_bench.py reads); and a progress line on stderr when it is a
terminal (Progress): the stage's number and name, how many of its files (or gates) are done of its
total, and the time since the scan began. With ARCHLINT_PROFILE_DIR set, each stage
also runs under cProfile and its statistics are written there as `<n>-<stage>.prof` (the main
process only: profile with `--jobs 1` to see the extraction too; bench/stage_profile.py reads them)."""

from __future__ import annotations

import os
import sys
import time
from cProfile import Profile
from dataclasses import dataclass
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TextIO

# The stages of a full scan, in order: their numbers on the progress line (`includes` only where
# gates guard sources and the scan reads on demand).
SCAN_STAGES = ("discover", "facts", "pylink", "outline", "includes", "unit facts", "index", "verdicts", "checks")

_SHOWN: ContextVar[bool] = ContextVar("archlint_stage_times", default=False)

_current: list[str] = []  # the stage running now, for the progress line


@contextmanager
def stage_times(enabled: bool = True) -> Iterator[None]:
    """Print each stage's time while the block runs (`-v`), and the whole block's at its end."""
    token = _SHOWN.set(enabled or _SHOWN.get())
    start = time.perf_counter()
    PROGRESS.start()
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
    PROGRESS.begin(name, files, unit)
    finished = False
    try:
        yield touched
        finished = True
    finally:
        _profile_end(profile, name)
        _current.pop()
        PROGRESS.end()
        if finished and (_SHOWN.get() or os.environ.get("ARCHLINT_PROFILE")):  # an interrupted stage has no time
            count = touched.files
            _say(name, time.perf_counter() - start, f"  {count:6d} {unit}" if count is not None else "", _rss())


_profiled = [0]  # stages profiled so far: the files' order


@dataclass(frozen=True)
class TimingState:
    """What a process running some of a scan's stages for it needs to report them as the scan's
    own: whether stage times are shown, the progress line's start and plan, the profiles' count."""

    shown: bool
    began: float | None
    planned: tuple[str, ...]
    profiled: int


def timing_state() -> TimingState:
    return TimingState(_SHOWN.get(), PROGRESS.began, tuple(PROGRESS.planned), _profiled[0])


def resume_timing(state: TimingState) -> None:
    """Go on from `state`, another process's (the elapsed time is the monotonic clock's, which every
    process shares)."""
    _SHOWN.set(state.shown)
    PROGRESS.resume(state.began, state.planned)
    _profiled[0] = state.profiled


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
    """The process's resident memory as a stage ends, where /proc tells it (a stage run apart:
    its own process's)."""
    try:
        with open("/proc/self/statm") as handle:
            pages = int(handle.read().split()[1])
    except (OSError, IndexError, ValueError):
        return ""
    return f"  rss {pages * os.sysconf('SC_PAGE_SIZE') >> 20:6d} MiB"


class Progress:
    """The progress line on a terminal, rewritten in place: the stage's number among those the scan
    plans, its name, how many of its files (or gates) are done of its total, and the time since the
    scan began: `archlint: [3/9] facts 812/1575 files 12.4 s`. Nothing is written where the stream
    is not a terminal. `stream` None: sys.stderr as it is when a line is drawn."""

    EVERY = 0.1  # seconds between two redraws of the same stage's counts

    def __init__(self, stream: TextIO | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self._stream, self._clock = stream, clock
        self._plan: list[str] = []
        self._began: float | None = None  # when the scan began (else: when its first stage did)
        self._stages: list[_Counts] = []  # the running stages, innermost last
        self._shown = False
        self._terminal = False  # the stream, as the running stage began
        self._drawn = -float("inf")

    def start(self) -> None:
        """A scan begins: elapsed time counts from now; no plan yet."""
        self._began, self._plan = self._clock(), []

    @property
    def began(self) -> float | None:
        return self._began

    @property
    def planned(self) -> list[str]:
        return self._plan

    def resume(self, began: float | None, planned: Sequence[str]) -> None:
        """Carry on another process's line: its start and plan."""
        self._began, self._plan = began, list(planned)

    def plan(self, names: Sequence[str]) -> None:
        """The stages the scan is about to run, in order: they are numbered `[n/len(names)]`."""
        self._plan = list(names)

    def skip(self, name: str) -> None:
        """A planned stage this scan does not run after all: the count drops it."""
        if name in self._plan:
            self._plan.remove(name)

    def begin(self, name: str, total: int | None, unit: str) -> None:
        if self._began is None:
            self._began = self._clock()
        self._stages.append(_Counts(name, total or 0, unit))
        self._terminal = _is_terminal(self._stream)
        self._draw(force=True)

    def end(self) -> None:
        self._stages.pop()
        self._clear()

    def update(self, done: int, total: int) -> None:
        """The running stage's own count, done of total (the verdicts: gates judged)."""
        if self._stages:
            counts = self._stages[-1]
            counts.set(done, total)
            self._draw(force=done >= counts.total_now())

    def part(self) -> Callable[[int, int], None]:
        """A callback for one part of the running stage's work (one batch of files): what it reports,
        done of its total, adds to the parts before it, so the stage's count never starts over."""
        if not self._stages:
            return lambda done, total: None
        counts = self._stages[-1]
        counts.fold()

        def report(done: int, total: int) -> None:
            counts.part = (done, total)
            self._draw(force=counts.done_now() >= counts.total_now())
        return report

    def text(self, now: float | None = None) -> str:
        """The line as drawn at `now` (default: the clock's time), without the terminal's control characters."""
        now = self._clock() if now is None else now
        counts = self._stages[-1]
        number = f"[{self._plan.index(counts.name) + 1}/{len(self._plan)}] " if counts.name in self._plan else ""
        done, total = counts.done_now(), counts.total_now()
        amount = f" {done}/{total} {counts.unit}" if total else ""
        elapsed = now - (self._began if self._began is not None else now)
        return f"archlint: {number}{counts.name}{amount} {elapsed:.1f} s"

    def _draw(self, force: bool) -> None:
        if not self._terminal or not self._stages:
            return
        now = self._clock()
        if not force and now - self._drawn < self.EVERY:
            return
        stream = self._stream or sys.stderr
        stream.write(f"\r{self.text(now)}\x1b[K")
        stream.flush()
        self._shown, self._drawn = True, now

    def _clear(self) -> None:
        if self._shown:
            stream = self._stream or sys.stderr
            stream.write("\r\x1b[K")
            stream.flush()
            self._shown = False


class _Counts:
    """One running stage's count: its declared total, the parts of its work reported in full, and
    the part under way (done, total)."""

    def __init__(self, name: str, total: int, unit: str) -> None:
        self.name, self.unit, self.declared = name, unit, total
        self.done, self.total = 0, 0  # the parts before the one under way
        self.part = (0, 0)

    def fold(self) -> None:
        """The part under way is over: its count joins the stage's."""
        self.done, self.total, self.part = self.done + self.part[0], self.total + self.part[1], (0, 0)

    def set(self, done: int, total: int) -> None:
        self.done, self.total, self.part = done, total, (0, 0)

    def done_now(self) -> int:
        return self.done + self.part[0]

    def total_now(self) -> int:
        return max(self.declared, self.total + self.part[1])


PROGRESS = Progress()  # the scan's progress line (tests put one with a fake terminal and clock in its place)


def plan(names: Sequence[str]) -> None:
    """The stages the scan is about to run, in order (their numbers on the progress line)."""
    PROGRESS.plan(names)


def skip(name: str) -> None:
    """A planned stage the scan does not run after all."""
    PROGRESS.skip(name)


def stage_progress(done: int, total: int) -> None:
    """The running stage's count (`archlint: [8/9] verdicts 37/132 gates 41.2 s` on a terminal)."""
    PROGRESS.update(done, total)


def part_progress() -> Callable[[int, int], None]:
    """A progress callback for one batch of the running stage's files: it adds to the stage's count."""
    return PROGRESS.part()


def warn(message: str) -> None:
    """`archlint: warning: ...` on stderr, terminal or not: something the user should fix."""
    print(f"archlint: warning: {message}", file=sys.stderr)


def hint(message: str) -> None:
    """One line for a person at a terminal (never in CI logs or redirected output)."""
    if _is_terminal():
        print(f"archlint: {message}", file=sys.stderr)


def _is_terminal(stream: TextIO | None = None) -> bool:
    try:
        return (stream or sys.stderr).isatty()
    except (AttributeError, ValueError):
        return False
