"""Dynamic shared-memory opt-ins sized from the C++ around them (extract/cuda/sizes.py, judge/smem.py).

vLLM 0.22.0's dsv3_fused_a_gemm.cu opts into `smem_bytes`, a constexpr of the launcher's template
constants (16 stages of (16 + kTileN) x 256 bf16 tiles: 197,632 bytes), behind a `9.0a;10.0f;11.0f`
build list; sm_120 allows 101,376 bytes per block, so the list is genuine there. Sizes that follow
the device's own limit are no obstacle; a size nothing computes leaves POLICY unsaid.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from archlint.engine import scan
from archlint.extract.cuda.facts import extract_cuda
from archlint.model.findings import Verdict
from archlint.model.scan import ScanOptions

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "gate-smem-sizes"


@lru_cache(maxsize=4)
def _scan(root: str = str(FIXTURE), target: str = "sm_120a", select: tuple[str, ...] = ()):
    return scan(ScanOptions(paths=(root,), targets=(target,), use_cache=False, jobs=1, select=select))


def _verdict(variable: str, result=None):
    (report,) = [g for g in (result or _scan()).gates if f"({variable} " in g.text]
    (verdict,) = report.verdicts
    return verdict


def _requests(source: str, path: str = "k.cu"):
    return [r for r in extract_cuda(path, source.encode()).smem if r.kind == "dynamic-attr"]


# ---------------------------------------------------------------- the verdicts a user reads


def test_template_constant_pipeline_over_the_limit_is_genuine() -> None:
    verdict = _verdict("FUSED_A_GEMM_ARCHS")
    assert verdict.verdict is Verdict.GENUINE
    assert "197,632 bytes for launch_fused_a_gemm<__nv_bfloat16, 7168, 2112, 8>" in verdict.reason
    assert "launch_fused_a_gemm<__nv_bfloat16, 7168, 2112, 16>" in verdict.reason
    assert "kStages = 16" in verdict.reason and "kStages = 12" in verdict.reason
    assert "every instantiation exceeds sm_120a's limit of 101,376 bytes per block" in verdict.reason
    assert any(e.location.path.endswith("csrc/fused_a_gemm.cu") and e.location.line == 37 for e in verdict.evidence)


def test_the_same_pipeline_within_the_limit_is_policy() -> None:
    assert _verdict("SHALLOW_GEMM_ARCHS").verdict is Verdict.POLICY


def test_a_size_that_follows_the_device_limit_is_policy() -> None:
    assert _verdict("ADAPTIVE_GEMM_ARCHS").verdict is Verdict.POLICY


def test_a_struct_size_nothing_computes_is_unknown_with_what_would_settle_it() -> None:
    verdict = _verdict("TRAITS_GEMM_ARCHS")
    assert verdict.verdict is Verdict.UNKNOWN
    assert "`sizeof(GemmTraits<128, 128, 4>::SharedStorage)`" in verdict.reason
    assert "101,376 bytes per block" in verdict.reason and "--launch-probe" in verdict.reason


def test_unknown_size_stays_policy_where_an_admitted_build_has_no_more_shared_memory(tmp_path: Path) -> None:
    """A list that admits 8.6 (99 KB, as sm_120) was not sized for more than the target has."""
    root = tmp_path / "tree"
    _copy(FIXTURE, root, ('"9.0a;10.0f" "${CUDA_ARCHS}")\nif(TRAITS', '"8.6;9.0a;10.0f" "${CUDA_ARCHS}")\nif(TRAITS'))
    assert _verdict("TRAITS_GEMM_ARCHS", _scan(str(root))).verdict is Verdict.POLICY


def test_a_list_that_admits_sm120_for_the_pipeline_is_reported_with_the_arithmetic(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    _copy(FIXTURE, root, ('"9.0a;10.0f;11.0f"', '"9.0a;10.0f;11.0f;12.0f"'))
    result = _scan(str(root), select=("AL105", "AL204"))
    over = sorted((f.location.path, f.location.line) for f in result.findings if f.rule == "AL204")
    assert over == [("csrc/fused_a_gemm.cu", 37), ("csrc/fused_a_gemm.cu", 40)]
    (admitted,) = [f for f in result.findings if f.rule == "AL105"]
    assert "asks more shared memory than it has" in admitted.message and "197,632 bytes" in admitted.message


def _copy(source: Path, root: Path, edit: tuple[str, str]) -> None:
    for path in source.rglob("*"):
        if path.is_file():
            target = root / path.relative_to(source)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(path.read_text())
    lists = root / "CMakeLists.txt"
    assert edit[0] in lists.read_text()
    lists.write_text(lists.read_text().replace(edit[0], edit[1]))


# ---------------------------------------------------------------- the evaluator on real shapes


def test_sizes_follow_aliases_std_max_and_the_calls_template_arguments() -> None:
    (request,) = _requests("""
typedef __nv_bfloat16 elem_t;
namespace cfg { constexpr int kBase = 256; }
struct Tile { static constexpr int kRows = 16; };
template <int kCols>
void launch(int n) {
  constexpr int kDepth = std::max(2, 1024 / kCols);
  constexpr size_t kBytes = Tile::kRows * kCols * sizeof(elem_t) * kDepth + cfg::kBase;
  cudaFuncSetAttribute(kern<kCols>, cudaFuncAttributeMaxDynamicSharedMemorySize, kBytes);
}
void run(int n) {
  constexpr int kWide = 128;
  if (n > 4) launch<kWide>(n); else launch<64>(n);
}
""")
    assert {(s.instance, s.nbytes) for s in request.sizes} == {("launch<128>", 16 * 128 * 2 * 8 + 256),
                                                               ("launch<64>", 16 * 64 * 2 * 16 + 256)}
    assert request.unsized == "" and request.adaptive == ""


def test_a_local_the_function_changes_is_no_constant() -> None:
    (request,) = _requests("""
void launch(int n) {
  int smem = 64 * 1024;
  if (n > 8) smem = 2 * n * 1024;
  cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
}
""")
    assert request.nbytes is None and not request.sizes
    assert "`smem`" in request.unsized


def test_a_template_instantiated_nowhere_in_the_file_says_so() -> None:
    (request,) = _requests("""
template <int kStages>
void launch() {
  constexpr int bytes = kStages * 32768;
  cudaFuncSetAttribute(kern<kStages>, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
}
""", "launch.cuh")
    assert not request.sizes and "`launch` is a template (`kStages`) that the file instantiates nowhere" in request.unsized


def test_a_check_against_the_device_limit_chooses_nothing() -> None:
    """Reading the limit only to refuse a size chosen before it does not size for the device."""
    (request,) = _requests("""
template <int kStages>
void launch(int device) {
  constexpr int bytes = kStages * 32768;
  int limit = 0;
  cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
  TORCH_CHECK(bytes <= limit, "too much shared memory");
  cudaFuncSetAttribute(kern<kStages>, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
}
template void launch<6>(int);
""")
    assert request.adaptive == "" and [s.nbytes for s in request.sizes] == [6 * 32768]


def test_a_configuration_chosen_under_the_device_limit_adapts() -> None:
    (request,) = _requests("""
void launch(int device) {
  cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, device);
  size_t const limit = prop.sharedMemPerBlockOptin;
  if (limit >= 200 * 1024) {
    cudaFuncSetAttribute(kern<8>, cudaFuncAttributeMaxDynamicSharedMemorySize, 8 * 24576);
  }
}
""")
    assert request.nbytes == 8 * 24576 and "`(limit >= 200 * 1024)` follows `sharedMemPerBlockOptin`" in request.adaptive
    (chosen,) = _requests("""
void launch(int device, Params p) {
  cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, device);
  size_t const limit = prop.sharedMemPerBlockOptin;
  if (limit >= 200 * 1024) {
    cudaFuncSetAttribute(kern<8>, cudaFuncAttributeMaxDynamicSharedMemorySize, p.stages * 24576);
  }
}
""")
    assert "sharedMemPerBlockOptin" in chosen.adaptive


def test_a_plain_struct_is_laid_out_as_the_compiler_does() -> None:
    """nvcc 13.0 for sm_120a: static_assert(sizeof(S) == 128) holds (the `__align__(16)` member makes
    Inner 16 bytes; float4 members align to 16; the union is as large as its double[3])."""
    (request,) = _requests("""
#define N 3
struct Inner { __align__(16) unsigned char k[N * 5]; };
struct S {
  Inner st[2];
  __nv_bfloat16 q[7];
  float4 r[N];
  union { float a; double b[3]; } u;
  char tail;
};
void init() { cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(sizeof(S))); }
""")
    assert request.nbytes == 128


def test_a_template_struct_is_not_laid_out() -> None:
    (request,) = _requests("""
template <int kStages> struct Ring { float4 slots[kStages]; };
void init() { cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, sizeof(Ring<4>)); }
""")
    assert request.nbytes is None and "`sizeof(Ring<4>)`" in request.unsized


def test_a_macro_body_sized_by_a_helper_that_reads_the_device_adapts() -> None:
    """FlashInfer 0.7.2.post1's mixed_comm.cu shape: the opt-in sits in a macro body, and every function
    that expands the macro sizes it with a helper returning half the SM's shared memory."""
    source = """
int get_dummy_smem_size(int device_id) {
  cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, device_id);
  int per_sm = prop.sharedMemPerMultiprocessor;
  return std::min(per_sm / 2, per_sm - prop.reservedSharedMemPerBlock);
}
#define LAUNCH_KERNEL(kernel)                                                            \\
  [&]() -> bool {                                                                        \\
    cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_size); \\
    return true;                                                                         \\
  }()
void allreduce(int device) {
  int smem_size = get_dummy_smem_size(device);
  LAUNCH_KERNEL(allreduce_kernel);
}
"""
    (request,) = _requests(source)
    assert "`smem_size` follows the device's shared memory where `LAUNCH_KERNEL` is expanded" in request.adaptive
    (fixed,) = _requests(source.replace("int smem_size = get_dummy_smem_size(device);", "int smem_size = 160 * 1024;"))
    assert fixed.adaptive == "" and "macro body" in fixed.unsized


def test_instantiations_chosen_by_the_device_limit_in_the_caller_adapt() -> None:
    """FlashInfer 0.7.2.post1's tinygemm2.cu shape: the launcher's size is a template constant, but its
    caller picks 16 or 4 stages from the device's opt-in limit, read by a helper."""
    source = """
static int get_max_dynamic_smem() {
  static int cached = -1;
  int device;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&cached, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
  return cached;
}
template <int STAGES>
void launch_impl(int n) {
  int smem_size = STAGES * 12288;
  cudaFuncSetAttribute(kern<STAGES>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_size);
}
void launch(int n) {
  int max_stages = get_max_dynamic_smem() / 12288;
  if (max_stages >= 16) {
    launch_impl<16>(n);
  } else if (max_stages >= 4) {
    launch_impl<4>(n);
  }
}
"""
    (request,) = _requests(source)
    assert "every instantiation is launched under a choice: `(max_stages >= 16)`" in request.adaptive
    (shape,) = _requests(source.replace("get_max_dynamic_smem() / 12288", "n / 64"))
    assert shape.adaptive == "" and sorted(s.nbytes for s in shape.sizes) == [4 * 12288, 16 * 12288]


def test_the_size_is_named_as_written_inside_a_checking_macro() -> None:
    """TensorRT-LLM's shape: the attribute call sits in a check macro, across a line continuation of
    a macro body; the reason names the size, not the parentheses and backslash around it."""
    source = """
#define LAUNCH(kernel)                                                                   \\
  TLLM_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, \\
                                       smemSize));
"""
    (request,) = _requests(source)
    assert request.text == "smemSize"


# ---------------------------------------------------------------- requests a macro body makes


def test_a_macro_body_request_is_sized_where_the_unit_expands_the_macro() -> None:
    # routing.cu expands LAUNCH_ROUTING -> LAUNCH_PDL with /*smemSize=*/0; the header's
    # LAUNCH_FINALIZE, which finalize.cu expands with 160 KiB, is not expanded in this unit
    assert _verdict("ROUTING_ARCHS").verdict is Verdict.POLICY


def test_a_macro_expanded_with_too_many_bytes_is_genuine_with_the_place() -> None:
    verdict = _verdict("FINALIZE_ARCHS")
    assert verdict.verdict is Verdict.GENUINE
    assert "`smemSize` = 163,840 bytes for `LAUNCH_FINALIZE` expanded at" in verdict.reason
    assert "csrc/routing/finalize.cu:30" in verdict.reason
    assert any(e.location.path.endswith("routing/launch_macros.h") and e.location.line == 19 for e in verdict.evidence)


def test_a_size_from_run_time_values_says_so() -> None:
    verdict = _verdict("RMSNORM_ARCHS")
    assert verdict.verdict is Verdict.UNKNOWN
    assert "`smemSize` is a size archlint cannot compute (it follows run-time values: `dim`)" in verdict.reason


def test_macro_calls_are_read_with_their_literal_and_passed_on_arguments() -> None:
    from archlint.extract.cuda.facts import extract_cuda

    facts = extract_cuda("k.cuh", b"""
#define LAUNCH_INNER(kernel, smemSize, stream) \\
  cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smemSize)
#define LAUNCH_OUTER(kernel, smemSize) LAUNCH_INNER(kernel, smemSize, nullptr)
void run() {
  LAUNCH_OUTER(k, /*smemSize=*/48 * 1024);
  LAUNCH_OUTER(k, bytes);
}
""")
    calls = {(c.name, c.within): c.arguments for c in facts.expansions}
    assert calls[("LAUNCH_INNER", "LAUNCH_OUTER")] == ("kernel", "smemSize", None)
    assert ("LAUNCH_OUTER", "") in calls and {("k", 49152), ("k", "bytes")} == {
        c.arguments for c in facts.expansions if c.name == "LAUNCH_OUTER"}
    (request,) = [r for r in facts.smem if r.kind == "dynamic-attr"]
    assert (request.macro, request.macro_argument, request.text) == ("LAUNCH_INNER", 1, "smemSize")


def test_a_macro_expanded_with_a_variable_names_the_place_and_the_variable() -> None:
    verdict = _verdict("DYN_ROUTING_ARCHS")
    assert verdict.verdict is Verdict.UNKNOWN
    assert ("it is sized where `LAUNCH_PDL` is expanded, and csrc/routing/dyn_routing.cu:" in verdict.reason
            and "passes `smemSize`, which is no literal" in verdict.reason)
