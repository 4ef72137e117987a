"""Gates over units that run prebuilt kernels (cubins loaded at run time): never POLICY; GENUINE
where the unit's host code says which GPUs its binaries serve and the target is not one of them;
UNKNOWN otherwise. Host-only headers fetched with the cubins lose nothing arch-specific."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from archlint.cli import cli
from archlint.engine import scan
from archlint.extract.cuda.facts import extract_cuda
from archlint.knowledge.prebuilt import load_prebuilt
from archlint.model.findings import EvidenceKind, Verdict
from archlint.model.scan import ScanOptions

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "gate-prebuilt"
EXCLUDED_FROM_SM10X = {"sm_80", "sm_89", "sm_90a", "sm_110a", "sm_120a", "sm_121a"}


@pytest.fixture(scope="module")
def gates():
    result = scan(ScanOptions(paths=(str(FIXTURE),), use_cache=False, jobs=1))
    return {Path(g.location.path).name: g for g in result.gates}


def _by_target(gate):
    return {v.target: v for v in gate.verdicts}


def test_the_runner_whose_predicate_serves_sm100_and_sm103_is_genuine_elsewhere(gates):
    verdicts = _by_target(gates["gemm.py"])
    assert set(verdicts) == EXCLUDED_FROM_SM10X  # sm_100a and sm_103a are admitted, not judged
    for target, verdict in verdicts.items():
        assert verdict.verdict is Verdict.GENUINE
        assert "runs prebuilt kernels" in verdict.reason and "`isArchCompatible`" in verdict.reason
        assert "only on SM 100 and 103 (compute capability 10.0, 10.3)" in verdict.reason
        check, marker = verdict.evidence[-1], verdict.evidence[-2]
        assert (check.kind, check.location.path.rsplit("/", 1)[-1], check.location.line) == (EvidenceKind.ARCH_CHECK, "trtllm_gemm_runner.cu", 17)
        assert (marker.kind, marker.location.line) == (EvidenceKind.PREBUILT, 10)
        assert "trtllmGen_gemm_export/GemmInterface.h" in marker.message
    assert "sm_120a is compute capability 12.0" in verdicts["sm_120a"].reason


def test_the_fmha_runner_that_checks_the_sm_in_its_constructor_is_genuine_elsewhere(gates):
    verdicts = _by_target(gates["fmha.py"])
    assert set(verdicts) == EXCLUDED_FROM_SM10X
    for verdict in verdicts.values():
        assert verdict.verdict is Verdict.GENUINE
        assert "`FLASHINFER_CHECK(mSM == kSM_100 || mSM == kSM_103, \"Unsupported architecture\")`" in verdict.reason
        assert "in `TllmGenFmhaRunner`" in verdict.reason
        last = verdict.evidence[-1]
        assert last.location.path.endswith("fmha/fmhaRunner.cuh") and last.location.line == 12
        assert any(hop.kind is EvidenceKind.PREBUILT and "flashInferMetaInfo.h" in hop.message for hop in verdict.evidence)


def test_a_tensorrt_llm_check_with_a_constant_is_read_too(gates):
    verdicts = _by_target(gates["xqa_cubin.py"])
    assert verdicts["sm_100a"].verdict is Verdict.GENUINE and verdicts["sm_80"].verdict is Verdict.GENUINE
    assert "`TLLM_CHECK_WITH_INFO(mSM == kSM_90 || mSM == kSM_120," in verdicts["sm_100a"].reason
    assert "only on SM 90 and 120 (compute capability 9.0, 12.0)" in verdicts["sm_100a"].reason
    assert verdicts["sm_121a"].verdict is Verdict.GENUINE
    assert verdicts["sm_100a"].evidence[-2].name == "cuModuleLoadData"
    # the check lets sm_120a through: whether a cubin serves it is not in the scanned code
    assert verdicts["sm_120a"].verdict is Verdict.UNKNOWN
    assert "lets sm_120a through" in verdicts["sm_120a"].reason and "runs prebuilt kernels" in verdicts["sm_120a"].reason


def test_cubins_loaded_with_no_check_keep_the_gate_unknown_whatever_its_own_kernels_need(gates):
    verdicts = _by_target(gates["cudnn_sdpa.py"])
    assert set(verdicts) == EXCLUDED_FROM_SM10X
    for verdict in verdicts.values():
        assert verdict.verdict is Verdict.UNKNOWN  # its own kernel needs nothing: POLICY before
        assert "runs prebuilt kernels" in verdict.reason and "`cuModuleLoadData` in `setup_prefill`" in verdict.reason
        assert "settle with a check of the SM version" in verdict.reason
        assert verdict.evidence[-1].location.line == 19 and verdict.evidence[-1].kind is EvidenceKind.PREBUILT


def test_kernels_that_only_include_an_export_declaration_header_are_judged_on_their_own(gates):
    verdicts = _by_target(gates["moe_utils.py"])
    assert {t for t, v in verdicts.items() if v.verdict is Verdict.POLICY} == {"sm_110a", "sm_120a", "sm_121a"}
    # below sm_90 the cluster kernel is its `#else` twin, which only asserts
    assert {t for t, v in verdicts.items() if v.verdict is Verdict.EMPTY} == {"sm_80", "sm_89"}
    assert "kernel `routingClusterKernel` (line 28) only traps for sm_80" in verdicts["sm_80"].reason
    assert [hop.location.line for hop in verdicts["sm_80"].evidence[-2:]] == [28, 22]
    assert not any("not found in the scanned trees" in v.reason for gate in gates.values() for v in gate.verdicts)


def test_sarif_results_carry_the_rule_of_each_verdict():
    output = CliRunner().invoke(cli, ["scan", str(FIXTURE), "--format", "sarif", "--no-cache", "--jobs", "1"]).output
    results = json.loads(output)["runs"][0]["results"]
    rules = {}
    for result in results:
        path = result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].rsplit("/", 1)[-1]
        rules.setdefault(path, set()).add(result["ruleId"])
    assert rules == {"gemm.py": {"AL102"}, "fmha.py": {"AL102"}, "xqa_cubin.py": {"AL102", "AL104"}, "cudnn_sdpa.py": {"AL104"},
                     "moe_utils.py": {"AL101", "AL103"}, "sm90_moe.py": {"AL103", "AL104"}}


def _facts(code: str):
    return extract_cuda("runner.cpp", code.encode())


def test_checks_are_read_in_their_common_spellings():
    facts = _facts("""
int getSMVersion();
void a() {
  int sm = getSMVersion();
  if (!(sm == 90 || sm == 100)) throw std::runtime_error("unsupported");
}
void b(int smVersion) {
  if (smVersion != 100 && smVersion != 103) { FLASHINFER_ERROR("unsupported"); }
}
void c(int sm, bool strict) {
  if (strict) { TORCH_CHECK(sm == 120, "only 12.0"); }
}
void d(int sm) {
  if (sm < 0) return;
  TORCH_CHECK(sm == 120, "only 12.0");
}
void e(int smem_bytes) { TORCH_CHECK(smem_bytes == 100, "size"); }
""")
    checks = {c.function: c for c in facts.arch_checks}
    assert (checks["a"].subject, checks["a"].values, checks["a"].unconditional) == ("sm", ("90", "100"), True)
    assert (checks["b"].name, checks["b"].values, checks["b"].unconditional) == ("throw", ("100", "103"), True)
    assert not checks["c"].unconditional  # inside a branch
    assert not checks["d"].unconditional  # after a return
    assert "e" not in checks  # a shared-memory size is no SM version


def test_predicates_need_one_integer_sm_parameter_and_no_other_returns():
    facts = _facts("""
bool servesArch(int smVersion, CudaArch arch) {
  switch (arch) { case CudaArch::Sm90a: return smVersion == 90; default: return false; }
}
constexpr bool isSMCompatible(int gpuSM, int kernelSM) { return gpuSM == kernelSM; }
bool anyArch(int smVersion) { if (smVersion == 90) return true; return smVersion == 100; }
""")
    predicates = {c.name: c for c in facts.arch_checks if c.kind == "predicate"}
    assert set(predicates) == {"servesArch"} and predicates["servesArch"].values == ("90",)


def test_loader_calls_are_calls_in_functions_not_declarations():
    facts = _facts("""
struct Driver { CUresult cuModuleLoadData(CUmodule* module, void const* image) const; };
void load(Driver const& driver, CUmodule* module, void const* image) { driver.cuModuleLoadData(module, image); }
CUresult Driver::cuModuleLoadData(CUmodule* module, void const* image) const { return (*_cuModuleLoadData)(module, image); }
""")
    assert [(l.name, l.function, l.line) for l in facts.loaders] == [("cuModuleLoadData", "load", 3)]


def test_host_header_rows():
    knowledge = load_prebuilt()
    assert all(row.source for row in knowledge.headers)
    row = knowledge.host_header
    assert row("flashinfer/trtllm/batched_gemm/trtllmGen_bmm_export/BatchedGemmInterface.h").runs_prebuilt
    assert row("flashinfer/trtllm/gemm/trtllmGen_gemm_export/trtllm/gen/CudaKernelLauncher.h").runs_prebuilt
    assert not row("flashinfer/trtllm/batched_gemm/trtllmGen_bmm_export/trtllm/gen/DtypeDecl.h").runs_prebuilt
    assert not row("flashinfer/trtllm/gemm/trtllmGen_gemm_export/Enums.h").runs_prebuilt
    assert row("flashInferMetaInfo.h").runs_prebuilt and row("include/flashinferMetaInfo.h").runs_prebuilt
    assert row("flashinfer/trtllm/gemm/GemmInterface.h") is None
    assert {"cuModuleLoadData", "cuLibraryLoadData", "cudaLibraryLoadFromFile"} <= knowledge.loaders


def test_a_gate_whose_code_runs_cute_dsl_kernels_is_never_policy(gates):
    verdicts = _by_target(gates["sm90_moe.py"])
    assert {t for t, v in verdicts.items() if v.verdict is Verdict.EMPTY} == {"sm_80", "sm_89"}  # its CUDA routing
    for target in ("sm_100a", "sm_103a", "sm_110a", "sm_120a", "sm_121a"):
        assert verdicts[target].verdict is Verdict.UNKNOWN
        assert "runs `grouped_gemm_sm90`, whose module imports `cutlass.cute`" in verdicts[target].reason
        last = verdicts[target].evidence[-1]
        assert (last.location.path.rsplit("/", 1)[-1], last.location.line) == ("grouped_gemm_dsl.py", 13)


def test_a_check_against_a_constant_no_scanned_file_defines_settles_nothing(tmp_path):
    (tmp_path / "pkg" / "csrc").mkdir(parents=True)
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "jit.py").write_text(
        "import pathlib\n\n"
        "def get_nvcc_flags_list(supported_major_versions=None):\n"
        "    return [f'-gencode=arch=compute_{m}0a,code=sm_{m}0a' for m in supported_major_versions]\n\n"
        "def gen_jit_spec(name, sources, extra_cuda_cflags=None):\n    return name, sources, extra_cuda_cflags\n\n"
        "def gen_runner_module():\n"
        "    flags = get_nvcc_flags_list(supported_major_versions=[9])\n"
        "    return gen_jit_spec('runner', [pathlib.Path(__file__).parent / 'csrc' / 'runner.cu'], extra_cuda_cflags=flags)\n")
    (tmp_path / "pkg" / "csrc" / "runner.cu").write_text(
        "#include <cuda.h>\n\n"
        "void load_hopper_kernels(int sm, CUmodule* module, void const* image) {\n"
        "  TORCH_CHECK(sm == kSmHopper, \"Hopper only\");\n"
        "  cuModuleLoadData(module, image);\n"
        "}\n")
    result = scan(ScanOptions(paths=(str(tmp_path),), targets=("sm_120a",), use_cache=False, jobs=1))
    (verdict,) = result.gates[0].verdicts
    assert verdict.verdict is Verdict.UNKNOWN
    assert "compares with values archlint cannot read (kSmHopper)" in verdict.reason
    assert "--include-dir" in verdict.reason
