"""Per-stage wall times, printed to stderr when ARCHLINT_PROFILE is set (a debugging aid)."""

from __future__ import annotations

import os
import sys
import time
from contextlib import contextmanager


@contextmanager
def stage(name: str):
    if not os.environ.get("ARCHLINT_PROFILE"):
        yield
        return
    start = time.perf_counter()
    try:
        yield
    finally:
        print(f"archlint: stage {name:<10} {time.perf_counter() - start:8.2f} s", file=sys.stderr)
