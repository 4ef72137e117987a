"""Sources named at run time and flag lists built by comprehensions (FlashInfer 0.7's cuDNN Frost
adapters and fused GDN decode)."""

from __future__ import annotations

from pathlib import Path

import pytest

from archlint.engine import scan
from archlint.model.scan import ScanOptions

ROOT = Path(__file__).resolve().parent.parent / "fixtures" / "gate-flag-lists"


@pytest.fixture(scope="module")
def gates():
    result = scan(ScanOptions(paths=(str(ROOT),), targets=("sm_80", "sm_100a", "sm_120a"), use_cache=False, jobs=1))
    return {report.location.line: report for report in result.gates if report.location.path == "fl/jit/frost.py"}


def test_a_source_formatted_per_dtype_is_every_file_of_its_folder_the_name_spells(gates):
    gate = gates[16]
    verdicts = {v.target: v for v in gate.verdicts}
    assert verdicts["sm_80"].verdict.value == "GENUINE"
    hop = verdicts["sm_80"].evidence[-1]
    assert (hop.location.path, hop.location.line) == ("fl/backends/frost/csrc/moe_bf16.cu", 7)
    policy = verdicts["sm_100a"]
    assert policy.verdict.value == "POLICY"
    assert "2 guarded source(s)" in policy.reason
    assert {"fl/backends/frost/csrc/moe_bf16.cu", "fl/backends/frost/csrc/moe_fp8.cu"} <= set(policy.reached.units)


def test_defines_built_by_a_comprehension_leave_the_target_list_exact(gates):
    gate = gates[24]
    assert gate.admits == ("sm_120a",)
    verdicts = {v.target: v.verdict.value for v in gate.verdicts}
    assert verdicts == {"sm_80": "GENUINE", "sm_100a": "POLICY"}


def test_a_define_formatted_in_the_list_leaves_the_target_list_exact(gates):
    gate = gates[35]
    assert gate.admits == ("sm_120a",)
    verdicts = {v.target: v for v in gate.verdicts}
    assert verdicts["sm_100a"].verdict.value == "POLICY"
    assert all("approximately" not in v.reason for v in gate.verdicts)
