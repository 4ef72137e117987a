"""Every Python file of every fixture edited in turn, as a user edits between two scans: a comment
line appended, then a number literal on a gate's line changed. After each edit the scan that starts
from the stored state (a full scan, or the stored state kept where the file's facts did not change)
gives what a scan with no cache gives."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from archlint.engine import scan
from archlint.model.scan import ScanOptions
from conftest import settle

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
CASES = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir() and any(p.rglob("*.py")))
_NUMBER = re.compile(r"(?<![\w.])(\d+)(?![\w.])")


def _scan(root: Path, cache: bool = True):
    return scan(ScanOptions(paths=(str(root),), jobs=1, use_cache=cache))


def _literal_changed(text: str, line: int) -> str | None:
    """The text with the last number literal of the line changed, or None when it holds none."""
    lines = text.splitlines(keepends=True)
    found = list(_NUMBER.finditer(lines[line - 1])) if line <= len(lines) else []
    if not found:
        return None
    match = found[-1]
    lines[line - 1] = lines[line - 1][: match.start()] + str(int(match.group(1)) + 2) + lines[line - 1][match.end():]
    return "".join(lines)


@pytest.mark.parametrize("case", CASES)
def test_each_python_file_edited_in_turn(case, tmp_path, monkeypatch):
    monkeypatch.setenv("ARCHLINT_CACHE_DIR", str(tmp_path / "cache"))
    root = tmp_path / "tree"
    shutil.copytree(FIXTURES / case, root)
    _edit_each_python_file(root)


def test_python_gates_beside_host_checks(tmp_path, monkeypatch, full_scans):
    """A FlashInfer-shaped package beside flash-attn-shaped host checks (no op call links them): a
    Python edit keeps the host checks' stored gates, and the result is a scan with no cache's."""
    monkeypatch.setenv("ARCHLINT_CACHE_DIR", str(tmp_path / "cache"))
    root = tmp_path / "tree"
    shutil.copytree(FIXTURES / "gate-flashinfer", root)
    shutil.copytree(FIXTURES / "gate-host-checks" / "csrc", root / "csrc")
    assert _edit_each_python_file(root, full_scans) == 0  # every edit re-scanned in part
    kinds = {g.gate_id.partition(":")[0].rpartition(".")[2] for g in _scan(root).gates}
    assert kinds == {"py", "cpp"}  # both kinds of gates judged


def _edit_each_python_file(root: Path, full_scans: list | None = None) -> int:
    """How many of the scans after an edit were full scans (where `full_scans` counts them)."""
    full = 0
    for path in [root, *root.rglob("*")]:
        settle(path, 3600)
    first = _scan(root)
    gate_lines = {(g.location.path, g.location.line) for g in first.gates}
    age = 3000
    for module in sorted(root.rglob("*.py")):
        relative = module.relative_to(root).as_posix()
        original = module.read_bytes()
        edits = [original + b"# edited\n"]
        for path, line in sorted(gate_lines):
            changed = _literal_changed(original.decode("utf-8", "replace"), line) if path == relative else None
            if changed is not None:
                edits.append(changed.encode("utf-8"))
                break
        for edited in [*edits, original]:
            module.write_bytes(edited)
            age -= 10  # each version newer than the last, all past the racy window
            settle(module, age)
            count = len(full_scans) if full_scans is not None else 0
            after = _scan(root)
            full += (len(full_scans) if full_scans is not None else 0) - count
            assert after == _scan(root, cache=False), f"{relative} after an edit"
    return full
