"""The folder a scan analyses from: the deepest one holding every discovered file.

`archlint scan .` in a folder that holds nothing but `pkg/`, `archlint scan pkg`, and the hook's
`archlint scan pkg/x.py` (which scans the repository root) discover the same files under different
roots. Analysed from the deepest folder that holds them all, every root-relative path, so every
facts cache key and the stored scan's scope, is the same for the three, and each reuses what the
others stored. The result is rebased onto the scan root (postprocess.paths.rebase), so the engine's
result is the one it always gave. Module names do not move with the root: they follow the `__init__.py`
chain (link.modules.module_name).
"""

from __future__ import annotations

import posixpath
from dataclasses import replace
from pathlib import Path

from archlint.model.files import Discovery, SourceFile
from archlint.model.scan import ScanOptions


def analysed(discovery: Discovery, options: ScanOptions) -> tuple[Discovery, ScanOptions]:
    """The discovery and options as seen from the deepest folder holding every discovered file, or
    both unchanged where that would change what the scan reads: an include folder outside that
    folder (but inside the root), or a discovery diagnostic about a path outside it."""
    prefix = _common_folder([f.path for f in discovery.files])
    if not prefix:
        return discovery, options
    root = Path(discovery.root) / prefix
    if any(_between(Path(folder).resolve(), root, Path(discovery.root)) for folder in options.include_dirs):
        return discovery, options
    lead = prefix + "/"
    if any(not d.path.startswith(lead) and not posixpath.isabs(d.path) for d in discovery.diagnostics):
        return discovery, options
    files = tuple(SourceFile(f.path[len(lead):], f.absolute, f.language) for f in discovery.files)  # (replace() is slower)
    diagnostics = tuple(replace(d, path=d.path[len(lead):]) if d.path.startswith(lead) else d for d in discovery.diagnostics)
    # a named file outside the folder names no discovered file: it can match no finding
    report = tuple(p[len(lead):] if p.startswith(lead) else "\0" + p for p in options.report_paths)
    return Discovery(str(root), files, diagnostics), replace(options, report_paths=report)


def _common_folder(paths: list[str]) -> str:
    """The deepest folder (root-relative, posix) that holds every path; '' for the root itself."""
    if not paths:
        return ""
    # the common prefix of all is that of the first and last in order (a dirname each took longer)
    common = posixpath.commonprefix([min(paths), max(paths)])
    return common[:common.rfind("/")] if "/" in common else ""


def _between(folder: Path, inner: Path, outer: Path) -> bool:
    """Whether `folder` lies inside `outer` but not inside `inner`: an include folder the scan
    root's relative paths can name and the analysed folder's cannot."""
    return folder.is_relative_to(outer) and not folder.is_relative_to(inner)
