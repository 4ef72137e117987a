"""The text report's gate section: one line per verdict shared by several targets, in arch order,
each gate named by its function and place, its real admits shown whatever --target says."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from conftest import inside_fixture

from archlint.cli import cli
from archlint.model.findings import Evidence, EvidenceKind, Location, Verdict
from archlint.model.gates import GateReport, TargetVerdict
from archlint.report import Report, render

FLASHINFER = Path(__file__).resolve().parents[1] / "fixtures" / "gate-flashinfer"
GEMM = "`gen_gemm_sm90_module` at flashinfer/jit/comm.py:25: " \
       "current_compilation_context.get_nvcc_flags_list(supported_major_versions=[9]) (admits sm_90a)"


def scan_text(*args: str) -> list[str]:
    return scan_text_in(FLASHINFER, *args)


def scan_text_in(fixture: Path, *args: str) -> list[str]:
    with inside_fixture(fixture):
        result = CliRunner().invoke(cli, ["scan", ".", "--no-cache", *args])
    assert result.exit_code in (0, 1), result.output
    return result.output.splitlines()


def test_targets_sharing_a_verdict_and_reason_are_one_line_in_arch_order():
    lines = scan_text()
    at = lines.index(GEMM)
    assert lines[at + 1] == ("  sm_80, sm_89, sm_100a, sm_103a, sm_110a, sm_120a, sm_121a  GENUINE  `wgmma.fence.sync.aligned` "
                             "in `warpgroup_arrive` needs sm_90a (arch-specific, cc 9.0 only); each target lacks it [wgmma-sync]")
    # the evidence once for the seven targets, each place once, the file named when it changes
    assert lines[at + 2] == ("      flashinfer/jit/comm.py:25 -> :26 -> flashinfer/data/csrc/gemm_sm90.cu:1 -> "
                             "flashinfer/data/include/flashinfer/gemm/wgmma.cuh:6")
    assert lines[at + 3].startswith("`gen_missing_module` at flashinfer/jit/comm.py:31: ")


def test_a_reason_that_differs_by_target_splits_the_group_and_lists_each_arch_value():
    lines = scan_text()
    at = next(i for i, line in enumerate(lines) if line.startswith("`gen_trtllm_comm_module` at flashinfer/jit/comm.py:7: "))
    heads = [line.split("  ")[1:3] for line in lines[at + 1:at + 8] if not line.startswith("      ")]
    assert heads == [["sm_80, sm_89", "EMPTY"], ["sm_110a", "POLICY"], ["sm_120a, sm_121a", "EMPTY"]]
    newest = next(line for line in lines[at:] if line.startswith("  sm_120a, sm_121a  EMPTY"))
    assert newest.endswith("`__CUDA_ARCH__ < 1200` is false for each target (__CUDA_ARCH__ = 1200, 1210)")


def test_target_filter_keeps_the_gates_real_admits():
    lines = scan_text("--target", "sm_120a", "-v")  # the gate block: with targets asked for, only under -v
    assert GEMM in lines
    assert not any("(admits nothing)" in line for line in lines)


def test_a_long_target_list_in_a_message_keeps_the_newest():
    lines = scan_text()
    [al102] = [line for line in lines if ": AL102 " in line]
    assert "excludes sm_100a, sm_103a, sm_110a, sm_120a, sm_121a (+2 more) for a real reason" in al102


def test_a_module_level_gate_is_named_module():
    gate = GateReport("g", "torch.cuda.get_device_capability()[0] >= 9", Location("pkg/ops.py", 3, 4), ("sm_90a",),
                      (TargetVerdict("sm_80", Verdict.UNKNOWN, "no kernel", (Evidence(Location("pkg/ops.py", 3), "gate", EvidenceKind.GATE),)),))
    text = render("text", Report(root="/nowhere", findings=(), gates=(gate,)))
    assert "`<module>` at pkg/ops.py:3: torch.cuda.get_device_capability()[0] >= 9 (admits sm_90a)" in text.splitlines()


def test_targets_given_out_of_order_are_reported_in_arch_order():
    result = CliRunner().invoke(cli, ["scan", str(FLASHINFER), "--no-cache", "--format", "json",
                                      "--target", "sm_121a,sm_80", "--target", "sm_110a", "--target", "sm_80"])
    document = json.loads(result.output)
    assert document["targets"] == ["sm_80", "sm_110a", "sm_121a"]
    [al102] = [f for f in document["findings"] if f["rule"] == "AL102"]
    assert al102["targets"] == ["sm_80", "sm_110a", "sm_121a"]


ROUTES = Path(__file__).resolve().parents[1] / "fixtures" / "gate-backend-routes"
SPARSE_MLA_CHAIN = (
    ("flashinfer/mla/_sparse_mla_sm120/_api.py", 1421, "gate `_sparse_mla_sm120_supported(q.device)` excludes sm_100a"),
    ("flashinfer/mla/_sparse_mla_sm120/_api.py", 566, "calls `_run_dsv32_decode`"),
    ("flashinfer/mla/_sparse_mla_sm120/_execution.py", 38, "calls `get_sparse_mla_sm120_module`"),
    ("flashinfer/jit/mla.py", 64, "calls `gen_sparse_mla_sm120_module`"),
    ("flashinfer/jit/mla.py", 78, "builds flashinfer/data/csrc/sparse_mla_sm120/dsv32_decode_dispatch.cu"),
    ("flashinfer/data/csrc/sparse_mla_sm120/dsv32_decode_dispatch.cu", 1, "compiles it"),
    ("flashinfer/data/csrc/sparse_mla_sm120/dsv32_decode_dispatch.cu", 18, "includes decode.cuh"),
    ("flashinfer/data/include/flashinfer/attention/sparse_mla_sm120/kernels/dsv32_fp8/decode.cuh", 16, "includes q_stage.cuh"),
    ("flashinfer/data/include/flashinfer/attention/sparse_mla_sm120/compute/q_stage.cuh", 31, "includes barrier.cuh"),
    ("flashinfer/data/include/flashinfer/attention/sparse_mla_sm120/arch/barrier.cuh", 84,
     "`mbarrier.try_wait.parity.shared::cta.b64` in `wait` needs sm_90 or newer; sm_89 lacks it"),
)


def test_a_policy_verdict_lists_three_constructs_and_counts_the_rest():
    lines = scan_text_in(ROUTES, "--target", "sm_120a", "-v")
    [constructs] = [line for line in lines if line.strip().startswith("constructs:")]
    assert constructs.count("`") == 6  # three constructs named, not six
    assert constructs.endswith("with no arch guard (needs sm_90 or newer) (+3 more)")


def test_no_line_is_longer_than_400_and_a_long_chain_goes_on_below():
    hops = tuple(Evidence(Location(path, line), message, EvidenceKind.INCLUDE) for path, line, message in SPARSE_MLA_CHAIN)
    reason = ("the unit runs prebuilt kernels (`#include \"flashInferMetaInfo.h\"`, fmhaKernels.cuh:34), and "
              "`FLASHINFER_CHECK(mSM == kSM_100 || mSM == kSM_103 || mSM == kSM_107, \"Unsupported architecture\")` in "
              "`TllmGenFmhaRunner` lets them run only on SM 100, 103 and 107 (compute capability 10.0, 10.3, 10.7); "
              "sm_89 is compute capability 8.9 " + "and it is long " * 12)
    gate = GateReport("g", "_sparse_mla_sm120_supported(q.device)", Location(SPARSE_MLA_CHAIN[0][0], 1421, 8),
                      ("sm_120a",), (TargetVerdict("sm_89", Verdict.GENUINE, reason, hops),))
    lines = render("text", Report(root="/nowhere", findings=(), gates=(gate,))).splitlines()
    assert max(len(line) for line in lines) <= 400
    at = next(i for i, line in enumerate(lines) if line.startswith("  sm_89  GENUINE  the unit runs"))
    assert lines[at + 1].startswith("        ") and lines[at + 1].strip()  # the reason goes on, indented
    chain = [line for line in lines if "->" in line]
    assert len(chain) == 2 and chain[1].lstrip().startswith("-> ")
    # nothing is cut: the pieces put together are the whole chain
    joined = " ".join(line.strip() for line in chain)
    assert joined.endswith("flashinfer/data/include/flashinfer/attention/sparse_mla_sm120/arch/barrier.cuh:84")
    assert joined.count(" -> ") == len(SPARSE_MLA_CHAIN) - 1
