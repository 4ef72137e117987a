"""Walk the scan roots and classify files, never leaving the roots and never following a link loop."""

from __future__ import annotations

import fnmatch
import os
import stat
from pathlib import Path

from archlint.knowledge.languages import (
    BINARY_SUFFIXES,
    CMAKE_NAMES,
    CMAKE_SUFFIXES,
    CUDA_SUFFIXES,
    PYTHON_SUFFIXES,
    TEMPLATE_SUFFIXES,
)
from archlint.model.files import Discovery, SourceFile
from archlint.model.findings import Diagnostic

SKIP_DIRS = frozenset({".git", ".hg", ".svn", "__pycache__", ".mypy_cache", ".pytest_cache", ".tox", ".nox",
                       ".venv", "node_modules", "build", "dist", ".eggs", "_skbuild", "CMakeFiles"})


def scan_root(paths: tuple[str, ...]) -> Path:
    """The common folder of all paths: every reported path is relative to it."""
    resolved = [Path(p).resolve() for p in paths]
    folders = [p if p.is_dir() else p.parent for p in resolved]
    return Path(os.path.commonpath([str(f) for f in folders])) if folders else Path.cwd()


def repository_root(start: str | Path) -> Path | None:
    """The top of the git work tree holding `start`: the nearest folder at or above it with a `.git`
    entry (a folder, or the file a linked work tree or submodule has). Found by looking, never by
    running git, which would read the scanned tree's own config. GIT_CEILING_DIRECTORIES is honoured."""
    here = Path(start).resolve()
    if not here.is_dir():
        here = here.parent
    ceilings = {Path(p).resolve() for p in os.environ.get("GIT_CEILING_DIRECTORIES", "").split(os.pathsep) if p}
    for folder in (here, *here.parents):
        if (folder / ".git").exists():
            return folder
        if folder.parent in ceilings:
            return None
    return None


def report_root(paths: tuple[str, ...]) -> Path:
    """The folder reported paths are relative to: the repository holding the scan root, else the
    working directory when the scan root lies inside it, else the scan root itself."""
    root = scan_root(paths)
    top = repository_root(root)
    if top is not None:
        return top
    here = Path.cwd().resolve()
    return here if root.is_relative_to(here) else root


def language_of(name: str) -> str | None:
    if name in CMAKE_NAMES:
        return "cmake"
    dot = name.rfind(".")
    if dot <= 0 or not name[:dot].strip("."):  # no suffix, as os.path.splitext reads a leading dot
        return None
    return _LANGUAGES.get(name[dot:].lower())


_LANGUAGES = {**dict.fromkeys(CUDA_SUFFIXES, "cuda"), **dict.fromkeys(PYTHON_SUFFIXES, "python"),
              **dict.fromkeys(TEMPLATE_SUFFIXES, "template"), **dict.fromkeys(BINARY_SUFFIXES, "binary"),
              **dict.fromkeys(CMAKE_SUFFIXES, "cmake")}


def discover(paths: tuple[str, ...], exclude: tuple[str, ...] = ()) -> Discovery:
    root = scan_root(paths)
    files: dict[str, SourceFile] = {}
    diagnostics: list[Diagnostic] = []
    for given in paths:
        start = Path(given)
        if not start.exists() and not start.is_symlink():
            diagnostics.append(Diagnostic(given, "path does not exist", rule="AL902"))
            continue
        _walk(start.resolve(), root, exclude, files, diagnostics)
    ordered = tuple(files[key] for key in sorted(files))
    return Discovery(str(root), ordered, tuple(sorted(set(diagnostics), key=lambda d: (d.path, d.line, d.message))))


def _relative(path: Path, root: Path) -> str | None:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return None


def _excluded(relative: str, exclude: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatch(relative, pattern) or fnmatch.fnmatch(relative, pattern.rstrip("/") + "/*") for pattern in exclude)


def _walk(start: Path, root: Path, exclude: tuple[str, ...], files: dict[str, SourceFile], diagnostics: list[Diagnostic]) -> None:
    """Iterative walk; directories are identified by (device, inode) so a link loop is entered once.
    The stack holds (absolute, root-relative or None): a folder listed under its parent is relative
    by name, a start or a link's target is placed against the root."""
    seen_dirs: set[tuple[int, int]] = set()
    stack: list[tuple[str, str | None]] = [(str(start), None)]
    while stack:
        current, relative = stack.pop()
        if relative is None:
            relative = _relative(Path(current), root)
            if relative is None:
                diagnostics.append(Diagnostic(current, "link points outside the scanned roots; not followed", rule="AL902"))
                continue
            relative = "" if relative == "." else relative
        if relative and exclude and _excluded(relative, exclude):
            continue
        try:
            info = os.stat(current)
        except OSError as error:
            diagnostics.append(Diagnostic(relative or ".", f"cannot be read: {error.strerror or error}", rule="AL902"))
            continue
        if stat.S_ISDIR(info.st_mode):
            key = (info.st_dev, info.st_ino)
            if key not in seen_dirs:
                seen_dirs.add(key)
                _list(current, relative, root, exclude, files, diagnostics, stack)
        elif stat.S_ISREG(info.st_mode):
            _add_file(files, relative, current, os.path.basename(current))
        elif language_of(os.path.basename(current)) is not None:
            diagnostics.append(Diagnostic(relative, "not a regular file (FIFO, socket or device); skipped", rule="AL902"))


def _list(folder: str, relative: str, root: Path, exclude: tuple[str, ...], files: dict[str, SourceFile],
          diagnostics: list[Diagnostic], stack: list[tuple[str, str | None]]) -> None:
    """One folder's entries: files recorded, folders and followed links pushed on the stack."""
    try:
        entries = list(os.scandir(folder))
    except OSError as error:
        diagnostics.append(Diagnostic(relative or ".", f"folder cannot be listed: {error.strerror or error}", rule="AL902"))
        return
    prefix = f"{relative}/" if relative else ""
    for entry in entries:
        name = entry.name
        if _is_plain_file(entry):  # classified from the listing, with no further system call
            path = prefix + name
            if not (exclude and _excluded(path, exclude)):
                _add_file(files, path, entry.path, name)
            continue
        if name in SKIP_DIRS and entry.is_dir(follow_symlinks=False):
            continue
        if entry.is_symlink():
            target = Path(os.path.realpath(entry.path))
            if _relative(target, root) is None:
                diagnostics.append(Diagnostic(prefix + name, "link points outside the scanned roots; not followed", rule="AL902"))
                continue
            if not os.path.exists(entry.path):  # dangling, or a loop of links
                if language_of(name) or language_of(target.name):
                    diagnostics.append(Diagnostic(prefix + name, "link is dangling or loops; not followed", rule="AL902"))
                continue
            stack.append((str(target), None))
            continue
        stack.append((entry.path, prefix + name))


def _is_plain_file(entry: os.DirEntry) -> bool:
    try:
        return entry.is_file(follow_symlinks=False)
    except OSError:
        return False


def _add_file(files: dict[str, SourceFile], relative: str, path: str, name: str) -> None:
    """Record a regular file under its root-relative path when its name marks a language we read."""
    language = language_of(name)
    if language is not None and relative not in files:
        files[relative] = SourceFile(relative, path, language)
