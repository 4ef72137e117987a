"""What `archlint scan` prints, as a record the stored scan keeps beside its result
(engine.scan_shown): a scan of an unchanged tree, with the same options, prints it again without
post-processing and rendering the result anew (on FlashInfer, an 11 MB SARIF log took most of a
warm scan's time). The key covers everything the printing reads besides the result."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from archlint import __version__
from archlint.model.scan import ScanOptions, ScanResult

if TYPE_CHECKING:
    from archlint.config import Settings
    from archlint.postprocess import PostprocessSettings


@dataclass(frozen=True)
class Shown:
    rendered: str  # the report, as written to the output file or standard output
    exit_code: int
    summary: str  # the report's summary line, for the terminal when the report goes to a file
    files_scanned: int
    empty: bool  # no file was read and nothing was said about the paths


def settings_key(result: ScanResult, options: ScanOptions, settings: Settings, chosen: PostprocessSettings,
                 looks: tuple) -> bytes:
    """Everything the post-processing and the report read besides the result and the scanned
    files (whose contents the stored result's key covers), in an order that does not depend on
    the process: the report's looks (`looks`: its format, the folder it is written to, colour and
    the other output options), the levels and the targets asked for, and every post-processing
    setting (rules, suppressions, per-file ignores, report paths and root, the baseline's
    fingerprints)."""
    per_file = tuple((glob, tuple(sorted(rules))) for glob, rules in chosen.per_file_ignores)
    key = (
        __version__, looks,
        sorted((rule, level.value) for rule, level in settings.levels.items()), settings.fail_on.value,
        bool(settings.targets), tuple(options.targets),
        sorted(chosen.active), sorted((rule, level.value) for rule, level in chosen.levels.items()), per_file,
        chosen.no_suppress, chosen.show_suppressed, tuple(chosen.report_paths), chosen.report_root,
        sorted(chosen.baseline.items()) if chosen.baseline is not None else None,
        # per-file ignore globs also match paths from the folder the result is relative to
        _real(result.root) if per_file else "",
    )
    return hashlib.sha256(repr(key).encode("utf-8", "surrogateescape")).digest()


def _real(root: str) -> str:
    return str(Path(os.path.realpath(root))) if root else ""
