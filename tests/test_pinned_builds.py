"""Kernels a unit compiles at run time for one pinned arch (DeepGEMM's NVRTC options) keep a gate
from POLICY on every target that cannot run them."""

from __future__ import annotations

from pathlib import Path

from archlint.engine import scan
from archlint.judge.pinned import runs_on
from archlint.knowledge.arch import parse_target
from archlint.model.scan import ScanOptions

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "gate-launch-shapes"


def test_what_code_built_for_an_arch_runs_on():
    assert runs_on("sm_90a", parse_target("sm_90a")) and not runs_on("sm_90a", parse_target("sm_120a"))
    assert runs_on("compute_90", parse_target("sm_120a")) and not runs_on("compute_90", parse_target("sm_89"))
    assert runs_on("sm_100f", parse_target("sm_103a")) and not runs_on("sm_100f", parse_target("sm_120a"))
    assert runs_on("sm_80", parse_target("sm_89")) and not runs_on("sm_80", parse_target("sm_90a"))


def test_a_unit_whose_gemms_are_built_at_run_time_for_sm90a_is_genuine_elsewhere():
    result = scan(ScanOptions(paths=(str(FIXTURE),), targets=("sm_120a", "sm_80"), use_cache=False, jobs=1))
    (gate,) = [g for g in result.gates if g.location.path == "fi/jit/fp8_blockscale.py"]
    for verdict in gate.verdicts:
        assert verdict.verdict.value == "GENUINE"
        assert "run time for `sm_90a` only" in verdict.reason
        assert "runs only on compute capability 9.0" in verdict.reason
    hop = gate.verdicts[0].evidence[-1]
    assert (hop.location.path, hop.location.line) == ("fi/csrc/deep_gemm/compiler.cuh", 15)

