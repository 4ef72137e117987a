"""Units whose device work is a vendor library's (fixtures/gate-library-units): judged by what the
library documents for each form of the call (rules/kb/libraries.toml), and, where no kernel compiles
and no library call does the work, a reason that says what was found instead."""

from __future__ import annotations

from pathlib import Path

import pytest

from archlint.engine import scan
from archlint.knowledge.arch import parse_target
from archlint.knowledge.libraries import Support, load_libraries
from archlint.model.scan import ScanOptions

ROOT = Path(__file__).resolve().parent.parent / "fixtures" / "gate-library-units"
CSRC = "fi/data/csrc"


def _gates(**options):
    result = scan(ScanOptions(paths=(str(ROOT),), use_cache=False, jobs=1, **options))
    return {report.function: {v.target: v for v in report.verdicts} for report in result.gates}, result


@pytest.fixture(scope="module")
def gates():
    return _gates()[0]


def test_a_library_only_unit_is_policy_where_the_library_documents_every_form_it_makes(gates):
    verdict = gates["gen_mm_bf16_cublaslt_module"]["sm_80"]
    assert verdict.verdict.value == "POLICY"
    assert verdict.reason == ("the guarded units launch no kernel of their own: their device work is library calls "
                              "(`cublasLtMatmul`), each documented for sm_80")
    checked = [item for item in verdict.reached.constructs if item.hop.name == "cublasLtMatmul"]
    assert [item.requirement for item in checked] == ["cublaslt-matmul-fp16, cublaslt-matmul-bf16"]
    # the header's FP8 type map is a template this unit never instantiates: no FP8 form
    assert "FP8" not in checked[0].hop.message


def test_a_form_the_target_lacks_beside_one_it_has_is_unknown_naming_the_call(gates):
    verdict = gates["gen_bmm_fp8_module"]["sm_80"]
    assert verdict.verdict.value == "UNKNOWN"
    assert verdict.reason.startswith("`cublasLtMatmul` (cuBLASLt) in `bmm_fp8_internal_cublaslt` may run an FP8 matmul "
                                     "(`CUDA_R_8F_E4M3`, cublaslt_utils.cuh:57), which cuBLASLt "
                                     "documents for compute capability 8.9 and newer; sm_80 lacks it [cublaslt-matmul-fp8]")
    assert "-D flag" not in verdict.reason
    assert gates["gen_bmm_fp8_module"]["sm_89"].verdict.value == "POLICY"


def test_a_call_every_form_of_which_the_target_lacks_is_genuine(gates):
    verdict = gates["gen_gemm_fp8_out_module"]["sm_80"]
    assert verdict.verdict.value == "GENUINE"
    assert verdict.reason.startswith("`cublasLtMatmul` (cuBLASLt) in `gemm_fp8_out` runs an FP8 matmul")
    assert (verdict.evidence[-1].location.path, verdict.evidence[-1].location.line) == (f"{CSRC}/gemm_fp8_out.cu", 25)
    assert gates["gen_gemm_fp8_out_module"]["sm_89"].verdict.value == "POLICY"


def test_a_library_call_without_a_row_is_unknown_naming_it(gates):
    verdict = gates["gen_cudnn_gemm_graph_module"]["sm_120a"]
    assert verdict.verdict.value == "UNKNOWN"
    # cudnnBackendExecute, not the project's own `cudnn_gemm_run` nor the descriptor helpers
    assert verdict.reason.startswith("`cudnnBackendExecute` (cuDNN) in `cudnn_gemm_run` does device work the knowledge "
                                     "base has no row for; what it needs on sm_120a is not known")


def test_kernels_under_a_macro_no_build_passes_keep_the_define_reason_and_name_it(gates):
    verdict = gates["gen_moe_fp8_module"]["sm_120a"]
    assert verdict.verdict.value == "UNKNOWN"
    assert "`scale_experts_kernel` at moe_fp8.cu:6 under `#ifdef FLASHINFER_ENABLE_FP8_MOE` (line 5)" in verdict.reason
    assert "(a -D flag it cannot read may select them)" in verdict.reason
    assert verdict.reason.endswith("settle with --define FLASHINFER_ENABLE_FP8_MOE=VALUE")
    settled, _ = _gates(defines=("FLASHINFER_ENABLE_FP8_MOE=1",))
    assert settled["gen_moe_fp8_module"]["sm_120a"].verdict.value == "POLICY"


def test_a_host_only_unit_says_so_and_blames_no_define(gates):
    verdict = gates["gen_workspace_module"]["sm_120a"]
    assert verdict.verdict.value == "UNKNOWN"
    assert verdict.reason == ("no kernel of the guarded units compiles for sm_120a as archlint reads them: none of the 1 "
                              "guarded source(s) defines a kernel: host code only")


def test_library_rows_say_has_lacks_or_undocumented_per_target():
    rows = {row.id: row for row in load_libraries().calls}
    fp8, nvfp4, bf16 = rows["cublaslt-matmul-fp8"], rows["cublaslt-matmul-nvfp4"], rows["cublaslt-matmul-bf16"]
    assert [fp8.support(parse_target(t)) for t in ("sm_80", "sm_89", "sm_120a")] == [Support.LACKS, Support.HAS, Support.HAS]
    assert [nvfp4.support(parse_target(t)) for t in ("sm_90a", "sm_100a", "sm_120a")] == [
        Support.LACKS, Support.HAS, Support.UNDOCUMENTED]
    assert bf16.support(parse_target("sm_75")) is Support.UNDOCUMENTED  # not documented, not known to lack
    assert rows["nccl-device-multimem"].support(parse_target("sm_90a")) is Support.UNDOCUMENTED
    libraries = {library.name for library in load_libraries().libraries}
    assert all(row.source and row.library in libraries for row in rows.values())
    assert not load_libraries().does_work("cublasLtMatmulAlgoGetHeuristic") and load_libraries().does_work("cublasLtMatmul")


def test_a_form_documented_only_above_the_target_is_unknown_naming_the_call_not_a_define():
    # FlashInfer's cuBLASLt BF16 GEMM wrapper, excluded on sm_75: no kernel of its own, and no -D flag in play
    gates, _ = _gates(targets=("sm_75",))
    verdict = gates["gen_mm_bf16_cublaslt_module"]["sm_75"]
    assert verdict.verdict.value == "UNKNOWN"
    assert verdict.reason.startswith("`cublasLtMatmul` (cuBLASLt) in `mm_bf16_cublaslt` may run a BF16 matmul "
                                     "(`CUDA_R_16BF`, mm_bf16_cublaslt.cu:14), which cuBLASLt documents for compute "
                                     "capability 8.0 and newer, not for sm_75 [cublaslt-matmul-bf16]")
    assert "-D flag" not in verdict.reason
