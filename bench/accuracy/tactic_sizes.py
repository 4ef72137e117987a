"""A measurement of FlashInfer's SM120 CUTLASS tactics that shares no code with archlint's compile
probe, to check `archlint tactics --compile-probe` against: sizeof(GemmKernel::SharedStorage) of
every tactic the MoE generator and the dense FP4 / MXFP8 modules instantiate, read by nvcc's front
end from copies of the release's own launcher headers, patched here to declare an incomplete
`Show<size, stages, M, N, K, swap, finalize, mx>` after the kernel type (one unit per tile and kind;
the tiles are those the release's generator lists, written out below).

    python -m bench.accuracy.tactic_sizes DATA RELEASE TARGET[,TARGET] EXTRA_INCLUDE OUT.json

DATA is the wheel's `flashinfer/data` folder; EXTRA_INCLUDE holds the toolkit library headers the
launchers include (`cublasLt.h`, `curand_kernel.h`: the pip packages' `nvidia/cu13/include`). J
(environment) sets the compiles run at once (default 2). Nothing of the wheel is run or written.
"""
import itertools, os, re, shutil, subprocess, sys, json, tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

NVCC = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
MOE_TILES = [(128,32,128),(128,32,256),(128,64,128),(128,64,256),(128,128,128),(128,128,256),(256,128,128),(128,256,128)]
FP4_TILES = MOE_TILES
MX_TILES = {"0.6.17": [(128,32,128),(128,64,128),(128,128,128),(256,128,128),(128,256,128)], "0.7.4": [(128,32,128),(128,64,128),(128,128,128)]}
SHOW = "template <int...> struct Show;\n"

def patch(text, after, show):
    m = re.search(after, text)
    assert m, after
    return SHOW + text[:m.end()] + " " + show + text[m.end():]

def roots(d):
    nv = d / "csrc/nv_internal"
    return [nv / "tensorrt_llm/kernels/cutlass_kernels/moe_gemm/launchers", nv, nv / "include",
            nv / "tensorrt_llm/cutlass_extensions/include", nv / "tensorrt_llm/kernels/cutlass_kernels/include",
            nv / "tensorrt_llm/kernels/cutlass_kernels", d / "cutlass/include", d / "cutlass/tools/util/include", d / "include"]

def units(d, v, target, work):
    out = []
    work.mkdir(parents=True, exist_ok=True)
    # MoE grouped GEMM: the launcher copy sits in its own folder, ahead on the include path
    moe = work / "moe"; moe.mkdir(exist_ok=True)
    src = (d / "csrc/nv_internal/tensorrt_llm/kernels/cutlass_kernels/moe_gemm/launchers/moe_gemm_tma_ws_launcher.inl").read_text()
    (moe / "moe_gemm_tma_ws_launcher.inl").write_text(patch(src, r"using GemmKernel =[^;]*;",
        "Show<(int)sizeof(typename GemmKernel::SharedStorage), (int)CollectiveMainloop::DispatchPolicy::Stages, CTA_M_, CTA_N_, CTA_K_, (int)SwapAB, (int)IsFinalizeFusion, (int)IsMXFPX> show_probe_;"))
    for m, n, k in MOE_TILES:
        lines = ['#include "moe_gemm_tma_ws_launcher.inl"', "namespace tensorrt_llm { namespace kernels { namespace cutlass_kernels_oss {"]
        for (act, mx), fusion, swap in itertools.product([("SafeFP4", "false"), ("__nv_fp8_e4m3", "true")], ["NONE", "FINALIZE"], ["true", "false"]):
            lines.append(f"INSTANTIATE_TMA_WARP_SPECIALIZED_MOE_GEMM(Sm120, {act}, SafeFP4, __nv_bfloat16, void, EpilogueOpDefault, {fusion}, {m}, {n}, {k}, 1, 1, 1, {mx}, false, false, {swap});")
        lines.append("}}}")
        name = work / f"moe_{m}_{n}_{k}.cu"; name.write_text("\n".join(lines) + "\n")
        out.append(("moe", name, [moe]))
    # dense FP4 and MXFP8: the dispatch header includes the kernel header from its own folder, so both are copied
    for kind, tiles, disp, kern, after, show, inst in [
        ("fp4", FP4_TILES, "fp4_gemm_cutlass_template_sm120.h", "fp4_gemm_template_sm120.h", r"using\s+GemmKernelDefault\s*=[^;]*;",
         "Show<(int)sizeof(typename GemmKernelDefault::SharedStorage), (int)CollectiveMainloop::DispatchPolicy::Stages, CTA_M_, CTA_N_, CTA_K_, (int)SWAP_AB_, 0, 0> show_probe_;",
         "INSTANTIATE_FP4_GEMM_KERNEL_LAUNCHER(__nv_bfloat16, {m}, {n}, {k}, 1, 1, 1, _1SM, {swap})"),
        ("mxfp8", MX_TILES[v], "mxfp8_gemm_cutlass_template_sm120.h", "mxfp8_gemm_template_sm120.h", r"using\s+GemmKernel\s*=[^;]*;",
         "Show<(int)sizeof(typename GemmKernel::SharedStorage), (int)CollectiveMainloop::DispatchPolicy::Stages, CTA_M_, CTA_N_, CTA_K_, (int)SWAP_AB_, 0, 1> show_probe_;",
         "INSTANTIATE_MXFP8_GEMM_KERNEL_LAUNCHER_SM120(__nv_bfloat16, {m}, {n}, {k}, {swap})")]:
        hdr = work / kind / "flashinfer" / "gemm"; hdr.mkdir(parents=True, exist_ok=True)
        g = d / "include/flashinfer/gemm"
        text = (g / kern).read_text()
        # the non-placeholder definition: the second #define of the macro
        macro = inst.split("(")[0]
        second = [mm.start() for mm in re.finditer(r"#define " + macro + r"\b", text)][-1]
        text = text[:second] + patch(text[second:], after, show).replace(SHOW, "", 1)
        (hdr / kern).write_text(SHOW + text)
        (hdr / disp).write_text((g / disp).read_text())
        for m, n, k in tiles:
            lines = [f'#include "flashinfer/gemm/{disp}"', "namespace flashinfer { namespace gemm {"]
            lines += [inst.format(m=m, n=n, k=k, swap=s) for s in ("true", "false")]
            lines.append("} }")
            name = work / f"{kind}_{m}_{n}_{k}.cu"; name.write_text("\n".join(lines) + "\n")
            out.append((kind, name, [work / kind]))
    return out

def compile_one(d, extra, target, kind, unit, first):
    flags = ["-std=c++17", f"-arch={target}", "--expt-relaxed-constexpr", "-DCOMPILE_BLACKWELL_TMA_GEMMS",
             "-DCOMPILE_BLACKWELL_SM120_TMA_GROUPED_GEMMS", "-DENABLE_BF16", "-DENABLE_FP8", "-DENABLE_FP4",
             "-DUSING_OSS_CUTLASS_MOE_GEMM", "-DCUTLASS_ENABLE_GDC_FOR_SM100=1"]
    inc = [*first, *roots(d), extra]
    cmd = [NVCC, *flags, *[a for r in inc for a in ("-I", str(r))], "-c", str(unit), "-o", "/dev/null"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=580)
    shows = re.findall(r'Show<([\d, ]+)>" is not allowed', p.stdout + p.stderr)
    errs = [l for l in (p.stdout + p.stderr).splitlines() if "error" in l and "Show<" not in l][:3]
    return [dict(target=target, kind=kind, unit=unit.name, show=[int(x) for x in s.split(",")]) for s in dict.fromkeys(shows)], errs

def main():
    data, release, targets, extra, out = Path(sys.argv[1]), sys.argv[2], sys.argv[3].split(","), Path(sys.argv[4]), Path(sys.argv[5])
    with tempfile.TemporaryDirectory(prefix="tactic-sizes-") as scratch:
        jobs = [(data, extra, target, kind, unit, first) for target in targets
                for kind, unit, first in units(data, release, target, Path(scratch) / target)]
        rows, problems = [], []
        with ThreadPoolExecutor(int(os.environ.get("J", "2"))) as pool:
            for job, (found, errs) in zip(jobs, pool.map(lambda j: compile_one(*j), jobs)):
                rows += [dict(row, release=release) for row in found]
                if not found:
                    problems.append({"unit": job[4].name, "errors": errs})
    out.write_text(json.dumps({"rows": rows, "problems": problems}, indent=1))
    print(len(jobs), "units", len(rows), "sizes", len(problems), "units without a size")


if __name__ == "__main__":
    main()
