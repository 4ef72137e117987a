"""A tree of many Python files links them in a process of its own (engine.linking.python_side_apart):
what that process gives back is what the main process would have made, the scan's result is
stored as any other's, and that process's stage lines are the scan's own."""

from __future__ import annotations

from pathlib import Path

from archlint.engine import linking, scan
from archlint.extract.files import Workers
from archlint.model.scan import ScanOptions
from conftest import settled_copy

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def _scan(root: Path, cache: bool = True):
    return scan(ScanOptions(paths=(str(root),), jobs=1, use_cache=cache))


def test_the_python_side_linked_apart_gives_what_the_main_process_links(tmp_path, monkeypatch, capfd):
    monkeypatch.setenv("ARCHLINT_CACHE_DIR", str(tmp_path / "cache"))
    root = settled_copy(FIXTURES / "gate-flashinfer", tmp_path / "tree")
    expected = _scan(root, cache=False)  # a handful of Python files: linked in this process

    called = []
    real_call = Workers.call

    def call(self, function, *args):
        called.append(function.__name__)
        return real_call(self, function, *args)

    monkeypatch.setattr(linking, "APART_FROM", 1)
    monkeypatch.setattr(Workers, "call", call)
    monkeypatch.setenv("ARCHLINT_PROFILE", "1")
    capfd.readouterr()
    apart = _scan(root)
    stages = [line.split()[2] for line in capfd.readouterr().err.splitlines() if line.startswith("archlint: stage")]
    assert called == ["_python_side_alone"]
    assert apart.findings == expected.findings and apart.gates == expected.gates
    assert expected.gates and any(f.rule.startswith("AL1") for f in apart.findings)
    # the other process's stages, printed there, in the scan's order
    assert stages[:4] == ["discover", "facts", "pylink", "outline"] and "verdicts" in stages

    again = _scan(root)  # the scan's result was stored: the next one stands on it
    assert again.findings == expected.findings
    assert [line for line in capfd.readouterr().err.splitlines() if "stage facts" in line] == []
