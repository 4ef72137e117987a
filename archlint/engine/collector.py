"""The cycle collector, paused while a scan makes or loads millions of objects.

Facts, stored state and reports form no reference cycles to speak of: reference counting frees
what a scan drops, and each collection the collector started meanwhile would only walk every live
object again (loading the facts the workers send back took nine times as long with it on).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused(freeze: bool = False) -> Iterator[None]:
    """`freeze`: what is alive at the end lives on (the scan's facts and result), so it is moved out
    of the collector's sight for good; else its next collection would walk all of it once more."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if freeze:
            gc.freeze()
        if enabled:
            gc.enable()
