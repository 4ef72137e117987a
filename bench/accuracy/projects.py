"""What each project's JIT hands the compiler: folders to scan, include folders, defines, flags, and
the translation unit to build for a guarded source.

FlashInfer compiles its `.cu` sources as they are. SGLang compiles header-only sources through a
generated wrapper that includes them and exports template instances
(`sglang/kernels/jit/utils/compile/spec.py`, `_wrapper_source`); a header alone instantiates no
kernel, so the bench writes that wrapper for one representative instance per header
(`SGLANG_INSTANCES`), and a header without one builds nothing worth counting.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Project:
    name: str
    package: str  # the folder inside an extracted wheel
    scan_folders: tuple[str, ...]  # relative to the wheel folder
    defines: tuple[str, ...]  # what every JIT build passes
    flags: tuple[str, ...]
    std: str
    arch_define: str = ""  # -D<name>=<__CUDA_ARCH__ of the target> on every build


# flashinfer/jit/core.py gen_jit_spec and cpp_ext.py CompilationContext.
FLASHINFER = Project(
    name="flashinfer", package="flashinfer",
    scan_folders=("flashinfer/jit", "flashinfer/data/csrc", "flashinfer/data/include", "flashinfer/data/cutlass/include"),
    defines=("FLASHINFER_ENABLE_F16", "FLASHINFER_ENABLE_BF16", "FLASHINFER_ENABLE_FP8_E4M3",
             "FLASHINFER_ENABLE_FP8_E5M2", "FLASHINFER_ENABLE_FP8_E8M0", "FLASHINFER_ENABLE_FP4_E2M1", "NDEBUG",
             "Py_LIMITED_API=0x03090000"),
    flags=("--expt-relaxed-constexpr", "-static-global-template-stub=false", "-use_fast_math", "-O3"),
    std="c++17",
)

# sglang/kernels/jit/utils/arch.py get_default_target_flags and compile/paths.py DEFAULT_CFLAGS.
SGLANG = Project(
    name="sglang", package="sglang", scan_folders=("sglang",), defines=(),
    flags=("--expt-relaxed-constexpr", "-O3"), std="c++20", arch_define="SGL_CUDA_ARCH",
)

# vLLM's CMake build (CMakeLists.txt, cmake/utils.cmake): torch's COMMON_NVCC_FLAGS less the half
# conversion switches it drops for CUDA >= 12.0, -DENABLE_FP8 (CUDA >= 11.8), C++20, the _C target's
# compile definitions; each block's own -D flags come from the scan's evidence.
VLLM = Project(
    name="vllm", package="vllm", scan_folders=(".",),
    defines=("ENABLE_FP8", "CUTLASS_ENABLE_DIRECT_CUDA_DRIVER_CALL=1", "TORCH_EXTENSION_NAME=_C",
             "Py_LIMITED_API=3"),
    flags=("--expt-relaxed-constexpr", "-O3"), std="c++20",
)

# The extension targets' own compile definitions (CMakeLists.txt target_compile_definitions), by the
# folder their sources sit in: _C_stable_libtorch builds csrc/libtorch_stable with torch's CUDA shim
# declarations on (USE_CUDA) against the stable ABI version it names.
VLLM_TARGET_DEFINES = (
    ("csrc/libtorch_stable/", ("USE_CUDA", "TORCH_TARGET_VERSION=0x020A000000000000ULL")),
)

PROJECTS = {project.name: project for project in (FLASHINFER, SGLANG, VLLM)}


def project_of(wheel: Path) -> Project:
    if (wheel / "CMakeLists.txt").is_file() and (wheel / "csrc").is_dir():
        return VLLM
    return SGLANG if (wheel / "sglang" / "kernels").is_dir() else FLASHINFER


def arch_defines(project: Project, target: str) -> tuple[str, ...]:
    if not project.arch_define:
        return ()
    digits = target[3:].rstrip("af")
    return (f"{project.arch_define}={int(digits) * 10}",)


# ---------------------------------------------------------------- include folders


def flashinfer_includes(wheel: Path, tvm_ffi: Path | None, nvshmem: Path | None = None) -> tuple[str, ...]:
    """The include folders FlashInfer's JIT passes (flashinfer/jit/cpp_ext.py), in its order, and last
    nvidia-nvshmem's, which the specs of the units that include it add."""
    data = wheel / "flashinfer" / "data"
    dirs = [data / "cccl" / "cub", data / "cccl" / "libcudacxx" / "include", data / "cccl" / "thrust"]
    # (The JIT also passes Python's include folder; no unit checked here needs Python.h, and leaving it
    # out keeps the compile cache keys the same on every machine.)
    dirs += _tvm_ffi_dirs(tvm_ffi)
    dirs += [data / "include", data / "csrc", data / "cutlass" / "include",
             data / "cutlass" / "tools" / "util" / "include", data / "spdlog" / "include"]
    if nvshmem is not None:
        dirs.append(nvshmem / "include")
    return tuple(str(d) for d in dirs if d.is_dir())


def sglang_includes(wheel: Path, tvm_ffi: Path | None, flashinfer_wheel: Path | None) -> tuple[str, ...]:
    """SGLang's DEFAULT_INCLUDE (kernels/jit/include), tvm-ffi's headers (its cpp extension adds them),
    and the registered `cutlass` / `flashinfer` dependencies, which come from the FlashInfer wheel
    (kernels/jit/utils/deps.py)."""
    dirs = [wheel / "sglang" / "kernels" / "jit" / "include", *_tvm_ffi_dirs(tvm_ffi)]
    if flashinfer_wheel is not None:
        data = flashinfer_wheel / "flashinfer" / "data"
        dirs += [data / "include", data / "csrc", data / "cutlass" / "include",
                 data / "cutlass" / "tools" / "util" / "include", data / "spdlog" / "include"]
    return tuple(str(d) for d in dirs if d.is_dir())


def vllm_includes(tree: Path, cutlass: Path | None, torch: Path | None, libraries: Path | None = None) -> tuple[str, ...]:
    """What define_extension_target passes: csrc, CUTLASS's include and tools/util/include (the release
    CMakeLists.txt pins as CUTLASS_REVISION, given with --cutlass), torch's two include folders (the
    torch release requirements/cuda.txt pins, given with --headers torch=FOLDER), Python's, and last the
    CUDA toolkit's library headers torch's CUDA headers include (cuSPARSE, cuBLAS, cuSOLVER; the
    nvidia-* wheels' include folder, given with --headers cuda-libraries=FOLDER)."""
    import sysconfig

    dirs = [tree / "csrc"]
    if cutlass is not None:
        dirs += [cutlass / "include", cutlass / "tools" / "util" / "include"]
    if torch is not None:
        dirs += [torch, torch / "torch" / "csrc" / "api" / "include"]
    dirs.append(Path(sysconfig.get_paths()["include"]))
    if libraries is not None:
        dirs.append(libraries)
    return tuple(str(d) for d in dirs if d.is_dir())


def _tvm_ffi_dirs(tvm_ffi: Path | None) -> list[Path]:
    return [] if tvm_ffi is None else [tvm_ffi / "include", tvm_ffi / "3rdparty" / "dlpack" / "include"]


# ---------------------------------------------------------------- SGLang's generated wrapper

# What tvm-ffi prepends to every generated unit (spec.py `_FFI_INCLUDES`).
_FFI_INCLUDES = (
    "#include <tvm/ffi/container/tensor.h>", "#include <tvm/ffi/dtype.h>", "#include <tvm/ffi/error.h>",
    "#include <tvm/ffi/extra/c_env_api.h>", "#include <tvm/ffi/function.h>",
)

# header (relative to sglang/kernels/jit/csrc) -> the exports of one instance, as the op's own
# `cuda_wrappers` spell them with `make_cpp_args` rendered for a typical call.
SGLANG_INSTANCES: dict[str, tuple[tuple[str, str], ...]] = {
    # ops/kvcache/hicache.py _jit_hicache_tma_module: TMA_STAGE_BYTES, TMA_NUM_STAGES, TMA_STORE_WARPS, quota 4
    "kvcacheio/hicache_tma.cuh": (("launch_one", "&HiCacheTmaKernel<32768, 6, 4, 4>::run_one"),
                                  ("launch_all", "&HiCacheTmaKernel<32768, 6, 4, 4>::run_all")),
    # ops/quantization/per_token_group_quant_8bit_v2.py _jit_module(bf16, fp8_e4m3, use_pdl=False)
    "gemm/per_token_group_quant_8bit_v2.cuh": (
        ("per_token_group_quant_8bit_v2", "PerTokenGroupQuant8bitV2Kernel<bf16_t, fp8_e4m3_t, false>::run"),),
    # ops/quantization/per_token_group_quant.py: flat layout, bf16 -> fp8_e4m3, group 128, fp32 scales,
    # row-major, aligned, no SiLU fusion, no PDL
    "gemm/per_token_group_quant.cuh": (
        ("per_token_group_quant",
         "PerTokenGroupQuantFlatKernel<bf16_t, fp8_e4m3_t, 128, false, true, true, false, false>::run"),),
    # ops/moe/moe_wna16_marlin.py: bf16, no expert parallelism, no bias, unsorted ids
    # ops/attention/attn_res.py _jit_fused_tma_module: _DIM 7168, 8 bank rows, the nvb=4 tuning (5, 1, 200)
    "kimi_k3/attn_res/fused_tma.cuh": (("run", "AttnResFusedTmaKernel<7168, 8, 5, 1, 200>::run"),),
    # ops/attention/msa_v1/compact_dequant.py _jit_dequant_module (no template)
    "minimax/msa_v1/attn/dequant.cuh": (
        ("gather_dequant_pair", "msa_v1::attn::compact_q8k8::dequant::gather_dequant_pair"),
        ("full_page_dequant", "msa_v1::attn::compact_q8k8::dequant::full_page_dequant")),
    # kda_kernels/ltx2_qknorm_split_rope_jit.py (kda_kernels/csrc), round_intermediates=False
    "diffusion/ltx2_qknorm_split_rope.cuh": (
        ("ltx2_qknorm_split_rope_pair", "ltx2_qknorm_split_rope::LTX2QKNormSplitRopeKernel::run<false>"),),
    "diffusion/ltx2_qknorm_split_rope_sm90.cuh": (
        ("ltx2_qknorm_split_rope_pair", "ltx2_qknorm_split_rope_kda::LTX2QKNormSplitRopeKernel::run<false>"),),
    "gemm/marlin_moe/moe_wna16_marlin.cuh": (
        ("moe_wna16_marlin_gemm", "moe_wna16_marlin_gemm<bf16_t, false, false, false, false, false>"),),
}


_CSRC_FOLDERS = ("/sglang/kernels/jit/csrc/", "/sglang/kernels/kda_kernels/csrc/")


def sglang_unit(header: str, workdir: Path) -> tuple[str, bool]:
    """(path of the unit to build, whether it instantiates a kernel) for an SGLang header."""
    relative = next((header.split(csrc, 1)[1] for csrc in _CSRC_FOLDERS if csrc in header), None)
    exports = SGLANG_INSTANCES.get(relative or "", ())
    if not header.endswith((".cuh", ".h", ".hpp")):
        return header, True
    lines = list(_FFI_INCLUDES) + [f'#include "{header}"', "namespace sglang {"]
    lines += [f"TVM_FFI_DLL_EXPORT_TYPED_FUNC({name}, ({kernel}));" for name, kernel in exports]
    lines.append("}  // namespace sglang")
    text = "\n".join(lines) + "\n"
    folder = workdir / "sglang-units"
    folder.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    path = folder / f"{Path(header).stem}-{digest}.cu"
    if not path.is_file():
        path.write_text(text, encoding="utf-8")
    return str(path), bool(exports)
