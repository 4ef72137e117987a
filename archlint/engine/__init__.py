"""Orchestration: the full and incremental scans, caches, stored results and stage timing.

`scan()` is the public door; the pipeline is imported when a scan runs, so that a command that
never scans (`archlint rules`, `--help`) starts without it.
"""

from __future__ import annotations

from archlint.model.scan import ScanOptions, ScanResult


def scan(options: ScanOptions) -> ScanResult:
    """Run the whole pipeline over the given paths. The worker processes it starts are fresh
    interpreters, which import the calling program's main module as multiprocessing's spawn start
    method does: a script that calls this guards its entry point (`if __name__ == "__main__":`)."""
    from archlint.engine.pipeline import run  # deferred: keeps CLI start-up light

    return run(options)
