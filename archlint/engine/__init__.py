"""Orchestration: the full and incremental scans, caches, stored results and stage timing.

`scan()` is the public door; the pipeline is imported when a scan runs, so that a command that
never scans (`archlint rules`, `--help`) starts without it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar, cast

from archlint.model.scan import ScanOptions, ScanResult

if TYPE_CHECKING:
    from archlint.engine.store import StoredReport

Shown = TypeVar("Shown")


# The last scan's result and where a report rendered from it is kept (scan_shown reads it)
_last: list[tuple[ScanResult, StoredReport | None]] = []


def scan(options: ScanOptions) -> ScanResult:
    """Run the whole pipeline over the given paths. The worker processes it starts are fresh
    interpreters, which import the calling program's main module as multiprocessing's spawn start
    method does: a script that calls this guards its entry point (`if __name__ == "__main__":`)."""
    from archlint.engine.pipeline import scanned  # deferred: keeps CLI start-up light

    result, stored = scanned(options)
    _last[:] = [(result, stored)]
    return result


def scan_shown(options: ScanOptions, show: Callable[[ScanResult], Shown], settings: Callable[[ScanResult], bytes]) -> Shown:
    """What `show` makes of scan()'s result (a rendered report): where the result is the stored one
    and its last report was made with the same `settings(result)` (everything `show` reads besides
    the result, as bytes), that report, read back; else `show(result)`, kept for the next scan.
    `show`'s value must pickle."""
    result = scan(options)
    stored = next((door for done, door in _last if done is result), None)
    _last.clear()
    if stored is None:
        return show(result)
    key = settings(result)
    found = stored.read(key)
    if found is not None:
        return cast(Shown, found)
    value = show(result)
    stored.write(key, value)
    return value
