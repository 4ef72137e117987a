"""A measurement of FlashInfer's SM120 CUTLASS launchers whose tiles are written in C++, sharing no
code with archlint's compile probe, to check `archlint tactics --compile-probe` against:
sizeof(GemmKernel::SharedStorage) of every instantiation the release's JIT makes, read by nvcc's
front end from copies of the release's own launcher headers patched here to declare an incomplete
`Show<size, M, N, K, ...>` after the kernel type. The instantiations are written out below from
the release's kernel templates and jit/gemm/core.py (what gen_gemm_sm120_module renders), and the
SVDQuant tactics from jit/gemm/svdquant_sm120_configs.py (read as text).

    python -m bench.accuracy.cxx_tactic_sizes DATA TARGET[,TARGET] EXTRA_INCLUDE OUT.json
    python -m bench.accuracy.cxx_tactic_sizes table ARCHLINT_TACTICS.json OUT.json RELEASE

DATA is the wheel's `flashinfer/data` folder; EXTRA_INCLUDE holds cublasLt.h (the pip packages'
`nvidia/cu13/include`). J (environment) sets the compiles run at once (default 2). Nothing of the
wheel is run or written.
"""
import itertools, json, os, re, shutil, subprocess, sys, tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

NVCC = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
SHOW = "template <int...> struct Show;\n"
FP8 = ["cutlass::float_e4m3_t", "cutlass::float_e5m2_t"]
OUT = ["cutlass::half_t", "cutlass::bfloat16_t"]
E5M2, BF16 = "cutlass::float_e5m2_t", "cutlass::bfloat16_t"


def patch(text, show, folder):
    text = re.sub(r'#include "(\.\./[^"]+)"', lambda m: f'#include "{folder}/{m.group(1)}"', text)  # the copy lives elsewhere
    m = re.search(r"using\s+GemmKernel\s*=[^;]*;", text)
    assert m
    return SHOW + text[:m.end()] + " " + show + text[m.end():]


def dense_units(d, work):
    """gemm_groupwise_sm120 and group_gemm_fp8_groupwise_sm120: a fixed tile, 16 instantiations each."""
    out = []
    for name, func, ns, args in [
        ("gemm_groupwise_sm120", "CutlassGroupwiseScaledGEMMSM120", "flashinfer::gemm",
         "void*, size_t, {i}*, {i}*, float*, float*, {o}*, int, int, int, int, cudaStream_t"),
        ("group_gemm_fp8_groupwise_sm120", "CutlassFP8GroupwiseScaledGroupGEMMSM120", "flashinfer::group_gemm",
         "void*, size_t, void*, size_t, {i}*, {i}*, float*, float*, {o}*, int*, int, int, int, int, cudaStream_t")]:
        hdr = work / name / "flashinfer" / "gemm"; hdr.mkdir(parents=True, exist_ok=True)
        text = (d / f"include/flashinfer/gemm/{name}.cuh").read_text()
        show = ("Show<(int)sizeof(typename GemmKernel::SharedStorage), (int)cute::size<0>(MmaTileShape_MNK{}), "
                "(int)cute::size<1>(MmaTileShape_MNK{}), (int)cute::size<2>(MmaTileShape_MNK{}), ScaleGranularityM, (int)ScaleMajorK, "
                f"(int)std::is_same_v<DTypeIn, {E5M2}>, (int)std::is_same_v<DTypeOut, {BF16}>> show_probe_;")
        (hdr / f"{name}.cuh").write_text(patch(text, show, d / "include/flashinfer/gemm"))
        lines = [f"#include <flashinfer/gemm/{name}.cuh>"]
        for i, o, major, sgm in itertools.product(FP8, OUT, ["true", "false"], [1, 128]):
            lines.append(f"template cudaError_t {ns}::{func}<{sgm}, 128, 128, {major}, {i}, {o}>({args.format(i=i, o=o)});")
        unit = work / f"{name}.cu"; unit.write_text("\n".join(lines) + "\n")
        out.append((name, unit, [work / name], ["CUTLASS_ENABLE_GDC_FOR_SM100=1"]))
    return out


def grouped_units(d, work):
    """group_gemm_{nvfp4,mxfp4}_groupwise_sm120: tiles from the template's loops, per swap and output type."""
    out = []
    for name, macro, tiles_n, tiles_k, acts, sf in [
        ("group_gemm_nvfp4_groupwise_sm120", "INSTANTIATE_GROUP_GEMM_NVFP4_GROUPWISE_SM120", [32, 64, 128], [128, 256],
         ["cutlass::float_e2m1_t"], "cutlass::float_ue4m3_t"),
        ("group_gemm_mxfp4_groupwise_sm120", "INSTANTIATE_GROUP_GEMM_MXFP4_GROUPWISE_SM120", [32, 64, 128], [128],
         FP8, "cutlass::float_ue8m0_t")]:
        hdr = work / name / "flashinfer" / "gemm"; hdr.mkdir(parents=True, exist_ok=True)
        text = (d / f"include/flashinfer/gemm/{name}.cuh").read_text()
        show = (f"Show<(int)sizeof(typename GemmKernel::SharedStorage), TileM, TileN, TileK, (int)SwapAB, "
                f"(int)std::is_same_v<DTypeInA, {E5M2}>, (int)std::is_same_v<DTypeOut, {BF16}>> show_probe_;")
        (hdr / f"{name}.cuh").write_text(patch(text, show, d / "include/flashinfer/gemm"))
        lines = [f"#include <flashinfer/gemm/{name}.cuh>", "namespace flashinfer { namespace group_gemm {"]
        for a, o, n, k, swap in itertools.product(acts, OUT, tiles_n, tiles_k, ["true", "false"]):
            strip = lambda t: t.replace("cutlass::", "")
            lines.append(f"{macro}(128, {n}, {k}, {swap}, {a}, cutlass::float_e2m1_t, {sf}, {sf}, {o}, "
                         f"{strip(a)}, float_e2m1_t, {strip(sf)}, {strip(sf)}, {strip(o)})")
        lines.append("} }")
        unit = work / f"{name}.cu"; unit.write_text("\n".join(lines) + "\n")
        out.append((name, unit, [work / name], ["CUTLASS_ENABLE_GDC_FOR_SM100=1"]))
    return out


def svdquant_units(d, work):
    configs_py = d.parent / "jit/gemm/svdquant_sm120_configs.py"
    if not configs_py.exists():
        return []
    configs = re.findall(r'"(Tactic\w+Config)"', configs_py.read_text())
    lines = ['#include "flashinfer/gemm/nvfp4_svdquant_gemm_template_sm120.h"', "template <int...> struct Show;",
             "namespace flashinfer { namespace gemm { namespace svdquant_sm120 {"]
    lines += [f"Show<(int)sizeof(typename {c}::GemmKernel::SharedStorage), {i}> show_{i}_;" for i, c in enumerate(configs)]
    lines.append("} } }")
    unit = work / "svdquant.cu"; unit.write_text("\n".join(lines) + "\n")
    return [("nvfp4_svdquant_gemm_template_sm120", unit, [],
             ["ENABLE_BF16", "ENABLE_FP4", "CUTLASS_ENABLE_GDC_FOR_SM100=1", "FLASHINFER_ENABLE_SVDQ_SM120_K1_K2_FUSION"], configs)]


def compile_one(d, extra, target, job):
    name, unit, first, defines = job[:4]
    inc = [*first, d / "include", d / "cutlass/include", d / "cutlass/tools/util/include", d / "csrc", extra]
    cmd = [NVCC, "-std=c++17", f"-arch={target}", "--expt-relaxed-constexpr", *[f"-D{x}" for x in defines],
           *[a for r in inc for a in ("-I", str(r))], "-c", str(unit), "-o", "/dev/null"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    text = p.stdout + p.stderr
    shows = [[int(x) for x in s.split(",")] for s in dict.fromkeys(re.findall(r'Show<([\d, ]+)>" is not allowed', text))]
    errors = [l for l in text.splitlines() if "error" in l and "Show<" not in l and "errors detected" not in l][:3]
    rows = []
    for s in shows:
        if len(job) > 4:  # svdquant: (size, config index)
            rows.append(dict(launcher=name, target=target, config=job[4][s[1]], bytes=s[0]))
        elif name.startswith(("gemm_groupwise", "group_gemm_fp8")):
            rows.append(dict(launcher=name, target=target, tile=s[1:4], scale_granularity_m=s[4], scale_major_k=bool(s[5]),
                             dtype_in=FP8[s[6]], dtype_out=OUT[s[7]], bytes=s[0]))
        else:
            rows.append(dict(launcher=name, target=target, tile=s[1:4], swap_ab=bool(s[4]),
                             dtype_a=(FP8[s[5]] if "mxfp4" in name else "cutlass::float_e2m1_t"), dtype_d=OUT[s[6]], bytes=s[0]))
    return rows, errors


def main():
    data, targets, extra, out = Path(sys.argv[1]), sys.argv[2].split(","), Path(sys.argv[3]), Path(sys.argv[4])
    with tempfile.TemporaryDirectory(prefix="cxx-tactic-sizes-") as scratch:
        jobs = []
        for target in targets:
            work = Path(scratch) / target
            work.mkdir(parents=True)
            only = tuple(os.environ.get("ONLY", "").split(",")) if os.environ.get("ONLY") else ()  # launcher name prefixes
            jobs += [(data, extra, target, job) for job in dense_units(data, work) + grouped_units(data, work) + svdquant_units(data, work)
                     if not only or job[0].startswith(only)]
        rows, problems = [], []
        with ThreadPoolExecutor(int(os.environ.get("J", "2"))) as pool:
            for job, (found, errs) in zip(jobs, pool.map(lambda j: compile_one(*j), jobs)):
                rows += found
                if errs:
                    problems.append({"unit": job[3][0], "target": job[2], "errors": errs})
    out.write_text(json.dumps({"rows": rows, "problems": problems}, indent=1))
    print(len(jobs), "units", len(rows), "sizes", len(problems), "units with other errors")




def _key(launcher, target, tile, fields):
    name = Path(launcher).name.split(".")[0]
    if "config" in fields:
        return (name, target, fields["config"])
    if "scale_major_k" in fields:
        return (name, target, tile, fields["dtype_in"], fields["dtype_out"], int(fields["scale_granularity_m"]),
                str(fields["scale_major_k"]).lower())
    return (name, target, tile, str(fields["swap_ab"]).lower(), fields["dtype_a"], fields["dtype_d"])


def table(archlint_json, independent_json, release):
    """A markdown table of archlint's rows (`archlint tactics --format json`) beside this measurement."""
    mine = {}
    for row in json.loads(Path(independent_json).read_text())["rows"]:
        tile = "×".join(map(str, row["tile"])) if "tile" in row else ""
        mine[_key(row["launcher"], row["target"], tile, row)] = row["bytes"]
    lines = ["| release | launcher | tile | tactic | target | static | probe B | nvcc B | over 101,376 | agree |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    agree = total = 0
    for row in json.loads(Path(archlint_json).read_text()):
        if not row["launcher"] or "/" not in row["launcher"]:
            continue  # the tiles written in Python lists: tactic_sizes.py measures those
        fields = dict(part.split("=", 1) for part in row["axes"].split(", ") if "=" in part)
        ours = mine.get(_key(row["launcher"], row["target"], row["tile"], fields))
        same = ours is not None and ours == row["measured"]
        agree, total = agree + same, total + 1
        over = "yes" if (row["measured"] or 0) > 101376 else "no"
        lines.append(f"| {release} | {Path(row['launcher']).name} | {row['tile']} | {row['axes']} | {row['target']} | "
                     f"{row['verdict'] if row['measured'] is None else 'unknown size'} | {row['measured']} | {ours} | {over} | {'yes' if same else 'NO'} |")
    lines.append(f"\n{agree} of {total} tactic × target rows: archlint's probe equals the independent nvcc measurement.")
    return "\n".join(lines)


if __name__ == "__main__":
    if sys.argv[1] == "table":  # table ARCHLINT.json INDEPENDENT.json RELEASE
        print(table(sys.argv[2], sys.argv[3], sys.argv[4]))
    else:
        main()
