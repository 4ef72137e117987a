"""Per-stage wall times on stderr: with `archlint scan -v`, or ARCHLINT_PROFILE set (a debugging aid)."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_SHOWN: ContextVar[bool] = ContextVar("archlint_stage_times", default=False)


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


@contextmanager
def stage(name: str) -> Iterator[None]:
    if not (_SHOWN.get() or os.environ.get("ARCHLINT_PROFILE")):
        yield
        return
    start = time.perf_counter()
    try:
        yield
    finally:
        _say(name, time.perf_counter() - start)


def _say(name: str, seconds: float) -> None:
    print(f"archlint: stage {name:<10} {seconds:8.2f} s", file=sys.stderr)
