"""A Python gate judged through every layer (op call → registration → C++ function → unit → build
list), and the layers' disagreements as findings (AL106-AL108), on a vLLM-shaped tree: CMakeLists +
cmake/utils.cmake + csrc with host checks and registrations + Python ops and predicates."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from archlint.cli.commands import cli
from archlint.engine import scan
from archlint.engine.linking import link
from archlint.model.findings import EvidenceKind
from archlint.model.scan import ScanOptions

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "gate-layers"
W8A8 = "vllm/model_executor/layers/quantization/w8a8.py"
NVFP4_ENTRY = "csrc/quantization/fp4/nvfp4_scaled_mm_entry.cu"


@pytest.fixture(scope="module")
def result():
    return scan(ScanOptions(paths=(str(FIXTURE),), targets=("sm_80", "sm_90a", "sm_100a", "sm_120a", "sm_121a"),
                            use_cache=False, jobs=1))


def _findings(result, rule: str) -> dict[tuple[str, int], object]:
    return {(f.location.path, f.location.line): f for f in result.findings if f.rule == rule}


def _gate(result, path: str, line: int):
    return next(g for g in result.gates if (g.location.path, g.location.line) == (path, line))


def test_python_gate_evidence_names_every_layer(result):
    """`has_device_capability(90)` → `_C.cutlass_scaled_mm_azp` → its registration → the host check
    → the sm90 unit → the build list `SCALED_MM_ARCHS` with what it builds."""
    gate = _gate(result, W8A8, 11)
    verdict = next(v for v in gate.verdicts if v.target == "sm_80")
    hops = [(h.kind, h.location.path, h.location.line) for h in verdict.evidence]
    assert (EvidenceKind.CALL, "vllm/_custom_ops.py", 5) in hops  # the op call
    assert (EvidenceKind.CALL, "csrc/torch_bindings.cpp", 8) in hops  # ops.impl(..., &cutlass_scaled_mm_azp)
    assert (EvidenceKind.CALL, "csrc/quantization/w8a8/scaled_mm_entry.cu", 18) in hops  # the host check
    block = next(h for h in verdict.evidence if h.kind is EvidenceKind.BUILDS)
    assert (block.location.path, block.location.line) == ("CMakeLists.txt", 25)
    assert block.source == "csrc/quantization/w8a8/scaled_mm_c3x_sm90.cu"
    assert "SCALED_MM_ARCHS" in block.message and "9.0a" in block.message


def test_unit_of_the_whole_build_links_to_the_builds_own_list(result):
    """`mla_entry.cu` is one of the extension's own sources: its list is the build's `CUDA_ARCHS`."""
    linked = link(ScanOptions(paths=(str(FIXTURE),), targets=("sm_120a",), use_cache=False, jobs=1))
    mla = next(r for r in linked.context.gate_results if (r.gate.path, r.gate.line) == ("vllm/v1/attention/mla.py", 10))
    assert mla.layers is not None
    (op,) = mla.layers.ops
    assert (op.call.op, op.registration.function, op.units) == ("mla_decode", "mla_decode", ("csrc/attention/mla_entry.cu",))
    assert op.checks == ()
    assert op.blocks == ("CMakeLists.txt:51:1", "CMakeLists.txt:9:1")  # MLA_ARCHS, and the build's CUDA_ARCHS
    # the build's own list is no gate: the 3 arch-specific lists, 3 host checks and 6 Python gates
    assert sorted(r.gate.line for r in linked.context.gate_results if r.gate.path == "CMakeLists.txt") == [25, 39, 51]


def test_python_admits_what_the_host_check_refuses(result):
    found = _findings(result, "AL106")
    assert set(found) == {(W8A8, 20), ("vllm/model_executor/layers/quantization/nvfp4.py", 10)}  # not W8A8:29
    moe = found[(W8A8, 20)]
    assert moe.targets == ("sm_100a", "sm_120a", "sm_121a")
    assert "`_C.cutlass_moe_mm`" in moe.message and "scaled_mm_entry.cu:32" in moe.message
    assert [(h.location.path, h.location.line) for h in moe.evidence] == [
        (W8A8, 20), ("vllm/_custom_ops.py", 9), ("csrc/torch_bindings.cpp", 11),
        ("csrc/quantization/w8a8/scaled_mm_entry.cu", 32)]
    assert found[("vllm/model_executor/layers/quantization/nvfp4.py", 10)].targets == ("sm_121a",)


def test_host_check_admits_what_no_build_list_builds(result):
    found = _findings(result, "AL107")
    assert set(found) == {("csrc/quantization/w8a8/scaled_mm_entry.cu", 18)}  # not the moe ladder (line 32)
    azp = found[("csrc/quantization/w8a8/scaled_mm_entry.cu", 18)]
    assert azp.targets == ("sm_100a", "sm_120a", "sm_121a")
    assert "CMakeLists.txt:25" in azp.message and "scaled_mm_c3x_sm90.cu" in azp.message
    # through the op with no host check: 11.0 passes `has_device_capability(100)`, and MLA_ARCHS
    # builds 10.x and 12.x only
    mla = scan(ScanOptions(paths=(str(FIXTURE),), targets=("sm_110a",), use_cache=False, jobs=1))
    assert {(f.location.path, f.location.line) for f in mla.findings if f.rule == "AL107"} >= {
        ("vllm/v1/attention/mla.py", 17)}


def test_exact_arch_host_check_where_the_build_serves_the_family(result):
    found = _findings(result, "AL108")
    assert set(found) == {(NVFP4_ENTRY, 11)}
    finding = found[(NVFP4_ENTRY, 11)]
    assert finding.targets == ("sm_121",)
    assert "FP4_ARCHS" in finding.message and "CMakeLists.txt:39" in finding.message
    assert (finding.evidence[-1].location.path, finding.evidence[-1].location.line) == ("CMakeLists.txt", 39)


def test_sarif_carries_the_layer_rules(tmp_path):
    out = tmp_path / "out.sarif"
    run = CliRunner().invoke(cli, ["scan", str(FIXTURE), "--format", "sarif", "-o", str(out), "--no-cache", "--jobs", "1"])
    assert run.exit_code == 1, run.output
    sarif = json.loads(out.read_text())["runs"][0]
    rules = {rule["id"]: rule for rule in sarif["tool"]["driver"]["rules"]}
    assert rules["AL106"]["name"] == "host-refuses-admitted"
    assert rules["AL107"]["name"] == "admitted-not-built"
    assert rules["AL108"]["name"] == "exact-arch-host-check"
    results = [r for r in sarif["results"] if r["ruleId"] in ("AL106", "AL107", "AL108")]
    assert {r["ruleId"] for r in results} == {"AL106", "AL107", "AL108"}
    for r in results:  # both layers are locations of the result's code flow
        flow = r["codeFlows"][0]["threadFlows"][0]["locations"]
        assert len({loc["location"]["physicalLocation"]["artifactLocation"]["uri"] for loc in flow}) >= 2
