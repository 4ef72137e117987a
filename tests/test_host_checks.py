"""C++ host checks as gates (flash-attn's `TORCH_CHECK(is_sm90 || is_sm8x, ...)`, vLLM's version_num
ladders ending in TORCH_CHECK_NOT_IMPLEMENTED), judged through the units their arms reach; and
op registrations linking a Python call of a custom op to the C++ function and its units."""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import replace
from pathlib import Path

import pytest

from archlint.engine import scan
from archlint.extract.cuda.facts import extract_cuda
from archlint.extract.python.facts import extract_python
from archlint.gates.host import capability_helpers, host_gates
from archlint.lang.cpp.capability import evaluate
from archlint.link.cuda import build_index
from archlint.link.ops import link_ops, op_calls, python_libraries
from archlint.model.cexpr import Binary, Name, Num
from archlint.model.findings import EvidenceKind, Verdict
from archlint.model.scan import ScanOptions

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
FLASH = FIXTURES / "gate-host-checks"
VLLM = FIXTURES / "gate-host-ops"
AMPERE_AND_HOPPER = {"sm_80", "sm_86", "sm_87", "sm_88", "sm_89", "sm_90a"}


def _scan(root: Path) -> dict[tuple[str, int], object]:
    result = scan(ScanOptions(paths=(str(root),), targets=("sm_80", "sm_90a", "sm_100a", "sm_120a", "sm_121a"),
                              use_cache=False, jobs=1))
    return {(Path(g.location.path).name, g.location.line): g for g in result.gates}


@pytest.fixture(scope="module")
def flash():
    return _scan(FLASH)


@pytest.fixture(scope="module")
def vllm():
    return _scan(VLLM)


def _verdict(gate, target: str):
    return next(v for v in gate.verdicts if v.target == target)


def _facts(root: Path, relative: str):
    return extract_cuda(relative, (root / relative).read_bytes())


# ---------------------------------------------------------------- flash-attn shape


def test_the_ampere_check_through_boolean_locals_admits_8x_and_9_0(flash):
    gate = flash[("flash_api.cpp", 23)]
    assert set(gate.admits) >= {"sm_80", "sm_90a"} and {"sm_100a", "sm_120a", "sm_121a"}.isdisjoint(gate.admits)
    assert gate.function == "FLASH_NAMESPACE::mha_fwd"
    assert "((major == 9) && (minor == 0)) || ((major == 8) && (minor >= 0))" in gate.arch_test.message and "admits 8.0, 8.6, 8.7, 8.8, 8.9, 9.0" in gate.arch_test.message


def test_the_ampere_check_is_policy_on_sm120a_through_the_launcher_in_another_unit(flash):
    verdict = _verdict(flash[("flash_api.cpp", 23)], "sm_120a")
    assert verdict.verdict is Verdict.POLICY
    assert verdict.reached.units == ("csrc/flash_attn/src/flash_fwd_hdim128_fp16_sm80.cu",)
    assert [hop.name for hop in verdict.reached.kernels] == ["flash_fwd_kernel"]
    calls = [hop.name for hop in verdict.reached.path if hop.kind is EvidenceKind.CALL]
    assert calls == ["run_mha_fwd_"]


def test_the_hopper_check_read_from_device_properties_is_genuine_on_sm120a(flash):
    gate = flash[("flash_api.cpp", 39)]
    assert set(gate.admits) == {"sm_90a"}
    for target in ("sm_100a", "sm_120a"):
        verdict = _verdict(gate, target)
        assert verdict.verdict is Verdict.GENUINE
        assert "wgmma" in verdict.reason
        assert verdict.evidence[-1].location.path.endswith("flash_fwd_hdim128_fp16_sm90.cu")


def test_a_check_that_refuses_8_6_but_admits_8_0_refuses_for_shared_memory_and_so_refuses_sm120(flash):
    gate = flash[("flash_api.cpp", 73)]
    assert set(gate.admits) == {"sm_80", "sm_90a"}
    verdict = _verdict(gate, "sm_120a")
    assert verdict.verdict is Verdict.GENUINE
    assert "refuses 8.6, which has every instruction 8.0 has but 101,376 bytes" in verdict.reason
    assert verdict.evidence[-1].kind is EvidenceKind.LIMIT
    # the Ampere check before it, through a function pointer to the launcher, stays POLICY
    assert _verdict(flash[("flash_api.cpp", 69)], "sm_120a").verdict is Verdict.POLICY


def test_the_helper_returning_a_pair_is_known_by_its_body_not_its_name():
    facts = _facts(FLASH, "csrc/flash_attn/src/hardware_info.h")
    helpers = {h.name: h.values for h in facts.host.helpers}
    assert helpers == {"get_compute_capability": (Name("@major"), Name("@minor"))}


def test_pybind_registrations_bind_names_to_functions():
    facts = _facts(FLASH, "csrc/flash_attn/flash_api.cpp")
    bound = {(r.kind, r.op, r.function, r.line) for r in facts.host.registrations}
    assert bound == {("pybind", "fwd", "mha_fwd", 52), ("pybind", "fwd_hopper", "mha_fwd_hopper", 53)}
    assert all(r.namespace == "TORCH_EXTENSION_NAME" and r.namespace_macro for r in facts.host.registrations)


# ---------------------------------------------------------------- vLLM shape


def test_the_ladder_over_version_num_is_one_gate_at_its_refusal(vllm):
    scaled_mm = vllm[("scaled_mm_entry.cu", 37)]
    assert {"sm_90a", "sm_120a", "sm_121a"} <= set(scaled_mm.admits)
    assert {"sm_80", "sm_100a"}.isdisjoint(scaled_mm.admits)
    assert "if (version_num >= 120) ...; if (version_num >= 90 && version_num < 100) ...;" in scaled_mm.text
    moe = vllm[("scaled_mm_entry.cu", 60)]
    assert set(moe.admits) & {"sm_80", "sm_90a", "sm_100a", "sm_120a", "sm_121a"} == {"sm_90a", "sm_100a"}


def test_the_moe_ladder_is_genuine_on_sm120a_through_the_newest_arm(vllm):
    verdict = _verdict(vllm[("scaled_mm_entry.cu", 60)], "sm_120a")
    assert verdict.verdict is Verdict.GENUINE
    assert "tcgen05" in verdict.reason
    assert [hop.name for hop in verdict.evidence if hop.kind is EvidenceKind.CALL] == ["cutlass_moe_mm_sm100"]
    assert verdict.evidence[-1].location.path.endswith("moe_mm_c3x_sm100.cu")


def test_get_sm_version_num_is_a_helper_by_its_body():
    facts = _facts(VLLM, "csrc/cutlass_extensions/common.cpp")
    (helper,) = facts.host.helpers
    assert helper.name == "get_sm_version_num"
    assert evaluate(helper.values[0], {"@major": 12, "@minor": 1}.get) == 121


def test_torch_library_registrations_and_the_python_op_call_link_to_the_entry_unit():
    paths = ["csrc/torch_bindings.cpp", "csrc/ops.h", "csrc/core/registration.h",
             "csrc/quantization/w8a8/cutlass/scaled_mm_entry.cu", "csrc/cache_kernels.cu"]
    index = build_index([_facts(VLLM, p) for p in paths])
    registrations = {(r.kind, r.op, r.function) for r in index.files["csrc/torch_bindings.cpp"].host.registrations}
    assert registrations == {("def", "cutlass_scaled_mm", ""), ("impl", "cutlass_scaled_mm", "cutlass_scaled_mm"),
                             ("def", "cutlass_moe_mm", ""), ("impl", "cutlass_moe_mm", "cutlass_moe_mm"),
                             ("def", "reshape_and_cache", ""), ("impl", "reshape_and_cache", "reshape_and_cache")}
    module = "vllm/_custom_ops.py"
    calls = op_calls(extract_python(module, (VLLM / module).read_bytes()), lambda name: name != "torch")
    assert {(c.kind, c.namespace, c.op, c.line) for c in calls} == {("torch-op", "_C", "cutlass_scaled_mm", 8),
                                                                     ("torch-op", "_C", "cutlass_moe_mm", 13),
                                                                     ("torch-op", "_C_cache_ops", "reshape_and_cache", 17)}
    bound = {b.call.op: (b.registration.line, b.units) for b in link_ops(calls, index)}
    entry = ("csrc/quantization/w8a8/cutlass/scaled_mm_entry.cu",)
    # `CONCAT(TORCH_EXTENSION_NAME, _cache_ops)` is any extension's name pasted to `_cache_ops`
    assert bound == {"cutlass_scaled_mm": (13, entry), "cutlass_moe_mm": (17, entry),
                     "reshape_and_cache": (23, ("csrc/cache_kernels.cu",))}
    elsewhere = replace(calls[-1], namespace="_C")
    assert link_ops([elsewhere], index) == []
    # an op namespace Python defines (`Library("vllm_ir", "FRAGMENT")`) is no C++ extension's
    ir = extract_python("vllm/ir/op.py", b'from torch.library import Library\nlib = Library("vllm_ir", "FRAGMENT")\n')
    assert python_libraries(ir) == {"vllm_ir"}
    in_python = replace(calls[0], namespace="vllm_ir")
    assert [b.call.op for b in link_ops([in_python], index)] == ["cutlass_scaled_mm"]
    assert link_ops([in_python], index, frozenset({"vllm_ir"})) == []


def test_a_python_predicate_before_a_custom_op_is_judged_through_the_ops_kernels(vllm):
    verdict = _verdict(vllm[("cutlass_moe.py", 10)], "sm_120a")
    assert verdict.verdict is Verdict.GENUINE
    messages = [hop.message for hop in verdict.evidence]
    assert "calls op `_C.cutlass_moe_mm`" in messages
    assert "`cutlass_moe_mm` is registered to `cutlass_moe_mm`" in messages
    assert verdict.evidence[-1].location.path.endswith("moe_mm_c3x_sm100.cu")


# ---------------------------------------------------------------- remaps and evaluation


TRTLLM = b"""
#include <cuda_runtime.h>
inline int getSMVersion(bool queryRealSmArch = false) {
    int device{-1};
    cudaGetDevice(&device);
    int sm_major = 0;
    int sm_minor = 0;
    cudaDeviceGetAttribute(&sm_major, cudaDevAttrComputeCapabilityMajor, device);
    cudaDeviceGetAttribute(&sm_minor, cudaDevAttrComputeCapabilityMinor, device);
    int sm = sm_major * 10 + sm_minor;
    if (sm == 121 && !queryRealSmArch) {
        return 120;
    }
    return sm;
}

void runner(int m) {
    TLLM_CHECK_WITH_INFO(getSMVersion() == 120, "This kernel runs on SM120 only");
    launch(m);
}
"""


def test_getsmversion_reports_12_1_as_120_so_an_exact_check_admits_both():
    facts = extract_cuda("cpp/runner.cu", TRTLLM)
    index = build_index([facts])
    assert set(capability_helpers(index)) == {"getSMVersion"}
    ((gate, _),) = host_gates(index).pairs
    assert gate.admits == (120, 121) and gate.line == 18 and gate.exact


def test_an_undecided_operand_leaves_a_conjunction_unknown_but_a_false_one_decides_it():
    cond = Binary("&&", Binary(">=", Name("@major"), Num(9)), Name("flag"))
    assert evaluate(cond, {"@major": 8}.get) == 0
    assert evaluate(cond, {"@major": 9}.get) is None
    assert evaluate(Binary("||", cond, Num(1)), {"@major": 9}.get) == 1


NVFP4 = b"""
int32_t get_sm_version_num();

static bool nvfp4_quant_sm_supported() {
  const int32_t sm = get_sm_version_num();
  #if defined(ENABLE_NVFP4_SM100) && ENABLE_NVFP4_SM100
  if (sm >= 100 && sm < 120) return true;
  #endif
  #if defined(ENABLE_NVFP4_SM120) && ENABLE_NVFP4_SM120
  if (sm >= 120 && sm < 130) return true;
  #endif
  return false;
}

void scaled_fp4_quant_out(int output) {
  STD_TORCH_CHECK(nvfp4_quant_sm_supported(), "No compiled nvfp4 quantization kernel for SM ", get_sm_version_num());
  scaled_fp4_quant_sm1xxa(output);
}
"""


def test_a_predicate_returning_true_under_capability_tests_is_a_helper_too():
    helper = _facts(VLLM, "csrc/cutlass_extensions/common.cpp")
    index = build_index([helper, extract_cuda("csrc/nvfp4_quant_entry.cu", NVFP4)])
    ((gate, _),) = host_gates(index).pairs
    assert gate.line == 16 and gate.admits == (100, 103, 110, 120, 121)


def test_a_ladder_judges_as_admitted_only_the_capabilities_of_its_widened_arm():
    result = scan(ScanOptions(paths=(str(VLLM),), targets=("sm_80", "sm_120a"), use_cache=False, jobs=1))
    at_azp = [f for f in result.findings if f.location.path.endswith("scaled_mm_entry.cu") and f.location.line == 91]
    # 12.x takes the `version_num >= 90` arm and its Hopper kernels; 8.0 takes the Ampere arm
    assert [(f.rule, f.targets) for f in at_azp] == [("AL105", ("sm_120a",))]
    assert "wgmma" in at_azp[0].message


def test_a_rescan_after_a_host_check_changes_reads_the_new_check(tmp_path, monkeypatch):
    monkeypatch.setenv("ARCHLINT_CACHE_DIR", str(tmp_path / "cache"))
    root = tmp_path / "tree"
    shutil.copytree(FLASH, root)
    stamp = time.time() - 3600
    for path in [root, *root.rglob("*")]:
        os.utime(path, (stamp, stamp))

    def admits() -> set[str]:
        result = scan(ScanOptions(paths=(str(root),), targets=("sm_90a", "sm_120a"), jobs=1))
        return {t for g in result.gates if g.location.line == 39 for t in g.admits}

    assert "sm_120a" not in admits()
    api = root / "csrc/flash_attn/flash_api.cpp"
    api.write_text(api.read_text().replace("bool is_sm90 = dprops->major == 9 && dprops->minor == 0;",
                                           "bool is_sm90 = dprops->major >= 9;"))
    os.utime(api, (stamp + 60, stamp + 60))
    assert {"sm_90a", "sm_120a"} <= admits()
