"""Build-system strings that are not gates of their own: the elements of one list of targets, and
the flags the project's arch-flags function spells for its callers."""

from __future__ import annotations

from pathlib import Path

import pytest

from archlint.engine import scan
from archlint.model.findings import Verdict
from archlint.model.scan import ScanOptions

CASE = Path(__file__).resolve().parent.parent / "fixtures" / "gate-build-lists"


@pytest.fixture(scope="module")
def result():
    return scan(ScanOptions(paths=(str(CASE),), use_cache=False, jobs=1))


def test_one_gate_per_target_list(result) -> None:
    reports = [g for g in result.gates if g.location.path == "fb/build_ext.py"]
    assert [(g.location.line, g.admits) for g in reports] == [(14, ("sm_90a", "sm_100a", "sm_120a"))]
    verdicts = {v.target: v.verdict for v in reports[0].verdicts}
    assert "sm_100a" not in verdicts and "sm_120a" not in verdicts
    assert verdicts["sm_121a"] is Verdict.POLICY


def test_flags_spelled_by_the_arch_flags_function_are_no_gate(result) -> None:
    assert not [g for g in result.gates if g.location.path == "fb/compilation_context.py"]
    (call,) = [g for g in result.gates if g.location.path == "fb/jit/norm.py"]
    assert call.location.line == 6


def test_findings(result) -> None:
    found = sorted((f.location.path, f.location.line, f.rule) for f in result.findings)
    assert found == [("fb/build_ext.py", 14, "AL101"), ("fb/jit/norm.py", 6, "AL101")]
