"""A JIT spec's flag list that names its targets directly is one gate (FlashInfer's tinygemm2_sm100 shape)."""

from __future__ import annotations

from pathlib import Path

import pytest

from archlint.engine import scan
from archlint.model.scan import ScanOptions

ROOT = Path(__file__).resolve().parent.parent / "fixtures" / "gate-flag-lists"


@pytest.fixture(scope="module")
def gates():
    result = scan(ScanOptions(paths=(str(ROOT),), use_cache=False, jobs=1))
    return {report.location.line: report for report in result.gates if report.location.path == "fl/jit/tiny.py"}


def test_constant_literal_and_conditional_target_are_one_gate(gates):
    # Only the spec call is a gate; the literals on lines 13 and 15 are parts of it.
    assert sorted(gates) == [9, 28]
    gate = gates[9]
    assert gate.admits == ("sm_100a", "sm_103a")
    verdicts = {v.target: v.verdict.value for v in gate.verdicts}
    assert verdicts == {"sm_80": "GENUINE", "sm_89": "GENUINE", "sm_90a": "POLICY",
                        "sm_110a": "POLICY", "sm_120a": "POLICY", "sm_121a": "POLICY"}


def test_target_under_undecided_condition_is_not_excluded(gates):
    gate = gates[28]
    assert gate.admits == ("sm_120a", "sm_121a")
    assert "sm_121a" not in {v.target for v in gate.verdicts}
    assert all("approximately" not in v.reason for v in gate.verdicts)
