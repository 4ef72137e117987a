"""The accuracy bench's bookkeeping on hand-made data: no nvcc, no wheel."""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # bench/ is run from the checkout, not installed
    sys.path.insert(0, str(ROOT))

from bench.accuracy.builds import (  # noqa: E402
    _traps_against,
    aggregate,
    pair_flags,
    pair_includes,
    plan,
    probe_options,
)
from bench.accuracy.generated import enclosing_function, generated_units  # noqa: E402
from bench.accuracy.pairs import Pair, gate_units, load_pairs, sample  # noqa: E402
from bench.accuracy.projects import FLASHINFER, sglang_unit  # noqa: E402
from bench.accuracy.scoring import decisive_shares, disagreements, is_agreement, metrics, render  # noqa: E402


def _pair(verdict, compiler, target="sm_120a", gate="flashinfer/jit/comm.py:7:18", units=("a.cu",)):
    return Pair(release="r", gate_id=gate, gate_text="g", target=target, verdict=verdict, reason="why",
                      evidence=("x.cuh:9: kernel empty",), units=units, compiler=compiler,
                      unit_outcomes=tuple((u, compiler, "first error") for u in units))


def test_aggregate_takes_the_worst_unit():
    assert aggregate(["built", "arch-error", "inconclusive"]) == "arch-error"
    assert aggregate(["built", "inconclusive", "built-empty"]) == "inconclusive"
    assert aggregate(["built", "built-trap"]) == "built-empty"
    assert aggregate(["built", "built"]) == "built"
    assert aggregate([]) == "inconclusive"


def test_agreement_table():
    assert is_agreement("POLICY", "built") is True
    assert is_agreement("POLICY", "arch-error") is False
    assert is_agreement("GENUINE", "arch-error") is True
    assert is_agreement("GENUINE", "built") is False
    assert is_agreement("EMPTY", "built-empty") is True
    assert is_agreement("EMPTY", "built") is False
    assert is_agreement("UNKNOWN", "built") is None
    assert is_agreement("POLICY", "inconclusive") is None
    assert is_agreement("POLICY", "not-run") is None


def test_metrics_matrix_precision_recall():
    pairs = [
        _pair("POLICY", "built"),
        _pair("POLICY", "built"),
        _pair("POLICY", "arch-error"),  # a false POLICY
        _pair("GENUINE", "arch-error"),
        _pair("GENUINE", "built"),  # the blocker did not stop the build
        _pair("EMPTY", "built-empty"),
        _pair("UNKNOWN", "built"),  # counts against POLICY recall
        _pair("POLICY", "inconclusive"),
        _pair("GENUINE", "not-run"),
    ]
    m = metrics(pairs)
    assert m.matrix["POLICY"]["built"] == 2
    assert m.matrix["POLICY"]["arch-error"] == 1
    assert m.matrix["GENUINE"]["not-run"] == 1
    assert m.agree == 4 and m.disagree == 2 and m.judged == 6
    assert m.policy_precision == pytest.approx(2 / 3)
    assert m.policy_recall == pytest.approx(2 / 4)  # built: 2 POLICY, 1 GENUINE, 1 UNKNOWN
    assert m.inconclusive == 1
    assert m.inconclusive_rate == pytest.approx(1 / 8)  # not-run pairs are not in the denominator
    wrong = disagreements(pairs)
    assert [(p.verdict, p.compiler) for p in wrong] == [("POLICY", "arch-error"), ("GENUINE", "built")]


def test_render_lists_every_disagreement_with_its_evidence():
    pairs = [_pair("POLICY", "built"), _pair("EMPTY", "built", target="sm_121a"),
             _pair("POLICY", "inconclusive")]
    text = render(pairs, Counter({"POLICY": 10, "EMPTY": 2}))
    assert "archlint EMPTY, nvcc built" in text
    assert "x.cuh:9: kernel empty" in text
    assert "nvcc a.cu: built: first error" in text
    assert "Inconclusive (not counted)" in text
    assert "POLICY precision 1.00" in text
    assert "Population" in text


def test_decisive_share_per_target_in_arch_order():
    def pair(target: str, verdict: str, release: str = "fi-0.7.2.post1") -> Pair:
        return Pair(release, f"g{target}{verdict}", "gate", target, verdict, "")

    pairs = [pair("sm_120a", "POLICY"), pair("sm_120a", "UNKNOWN"), pair("sm_120a", "EMPTY"), pair("sm_120a", "UNKNOWN"),
             pair("sm_80", "GENUINE"), pair("sm_110a", "UNKNOWN")]
    lines = decisive_shares(pairs).splitlines()
    rows = [line.split() for line in lines[1:]]
    assert [row[1] for row in rows] == ["sm_80", "sm_110a", "sm_120a", "all"]
    assert rows[2][2:] == ["2", "4", "0.50"]  # sm_120a: POLICY and EMPTY of four
    assert rows[3][2:] == ["3", "6", "0.50"]


def test_load_pairs_keeps_wanted_targets_and_joins_units(tmp_path):
    scan = {"gates": [{
        "id": "flashinfer/jit/comm.py:7:18", "text": "get_nvcc_flags_list(supported_major_versions=[9, 10])",
        "verdicts": [
            {"target": "sm_120a", "verdict": "EMPTY", "reason": "kernel empty",
             "evidence": [{"path": "h.cuh", "line": 9, "message": "empty"}]},
            {"target": "sm_75", "verdict": "GENUINE", "reason": "old", "evidence": []},
        ]}]}
    units = {"flashinfer/jit/comm.py:7:18": {"sources": ["data/csrc/a.cu"], "defines": ["X=1"], "references": ["sm_90a", "sm_100a"]}}
    pairs = load_pairs(scan, "rel", ("sm_120a", "sm_80"), units, str(tmp_path))
    assert len(pairs) == 1
    pair = pairs[0]
    assert pair.verdict == "EMPTY" and pair.target == "sm_120a" and pair.references == ("sm_90a", "sm_100a")
    assert pair.units == (str(tmp_path / "data/csrc/a.cu"),)
    assert pair.defines == ("X=1",)
    assert pair.evidence == ("h.cuh:9: empty",)


def test_sample_is_stratified_and_prefers_cheap_units(tmp_path):
    small, big = tmp_path / "small.cu", tmp_path / "big.cu"
    small.write_text("__global__ void k() {}\n")
    big.write_text("#include <cutlass/gemm.h>\n" + "x" * 100000)
    pairs = []
    for verdict, count in (("POLICY", 20), ("GENUINE", 10), ("EMPTY", 2), ("UNKNOWN", 3)):
        for i in range(count):
            unit = str(small if i % 2 else big)
            pairs.append(Pair("r", f"g{i}", "g", "sm_120a" if i % 3 else "sm_80", verdict, "", units=(unit,)))
    pairs.append(Pair("r", "nounits", "g", "sm_120a", "UNKNOWN", "", units=()))
    chosen = sample(pairs, 12, seed=1)
    kinds = Counter(p.verdict for p in chosen)
    assert len(chosen) == 12
    assert set(kinds) == {"POLICY", "GENUINE", "EMPTY", "UNKNOWN"}
    assert kinds["EMPTY"] == 2
    assert all(p.units for p in chosen)
    only_policy = [p for p in pairs if p.verdict == "POLICY" and p.target == "sm_120a"]
    cheap = sample(only_policy, 3, seed=1)
    assert all(p.units == (str(small),) for p in cheap)  # the cheap unit first


def test_plan_builds_each_unit_target_once():
    a = Pair("r", "g1", "g", "sm_120a", "POLICY", "", units=("/x/a.cu",), references=("sm_100a",))
    b = Pair("r", "g2", "g", "sm_120a", "EMPTY", "", units=("/x/a.cu", "/x/b.cu"), references=("sm_90a",))
    jobs = plan([a, b], {"r": ("/inc",)})
    assert [(j["unit"], j["target"]) for j in jobs] == [("/x/a.cu", "sm_120a"), ("/x/b.cu", "sm_120a")]
    assert jobs[0]["references"] == ["sm_100a", "sm_90a"]
    assert jobs[0]["includes"] == ["/inc"]


def test_flashinfer_build_options_unchanged_sglang_gets_its_own():
    fi = probe_options(("/inc",), ("X=1",), 10.0, None, "flashinfer", "sm_120a")
    assert fi.defines == FLASHINFER.defines + ("X=1",) and fi.std == "c++17" and fi.extra_flags == FLASHINFER.flags
    sg = probe_options(("/inc",), (), 10.0, None, "sglang", "sm_120a")
    assert sg.std == "c++20" and sg.defines == ("SGL_CUDA_ARCH=1200",)
    assert probe_options((), (), 10.0, None, "sglang", "sm_90a").defines == ("SGL_CUDA_ARCH=900",)


def test_sglang_header_is_built_through_a_wrapper_with_one_instance(tmp_path):
    header = "/w/sglang/kernels/jit/csrc/kvcacheio/hicache_tma.cuh"
    unit, instantiated = sglang_unit(header, tmp_path)
    text = Path(unit).read_text()
    assert instantiated and unit.endswith(".cu")
    assert f'#include "{header}"' in text and "HiCacheTmaKernel<32768, 6, 4, 4>::run_one" in text
    _, other = sglang_unit("/w/sglang/kernels/jit/csrc/elementwise/unknown.cuh", tmp_path)
    assert other is False


def test_units_get_the_folders_and_flags_their_spec_adds(tmp_path):
    csrc = tmp_path / "flashinfer" / "data" / "csrc"
    for folder in ("fmha_v2", "nv_internal", "nv_internal/include"):
        (csrc / folder).mkdir(parents=True)
    (csrc / "fmha_v2_run.cu").write_text("#include <fused_multihead_attention.h>\n")
    (csrc / "mixed_comm.cu").write_text("#include <nvshmem.h>\n#include <nvshmemx.h>\n")
    (csrc / "plain.cu").write_text('#include "flashinfer/vec_dtypes.cuh"\n')
    base = {"r": (str(tmp_path / "inc"), str(csrc))}
    fmha = _pair("UNKNOWN", "not-run", units=(str(csrc / "fmha_v2_run.cu"),))
    nvshmem = _pair("UNKNOWN", "not-run", units=(str(csrc / "mixed_comm.cu"),))
    plain = _pair("POLICY", "not-run", units=(str(csrc / "plain.cu"),))
    assert pair_includes(fmha, base) == base["r"] + (str(csrc / "fmha_v2"),)
    assert pair_flags(fmha) == ()
    assert pair_flags(nvshmem) == ("-rdc=true",)
    assert pair_includes(plain, base) == base["r"] and pair_flags(plain) == ()


# ---------------------------------------------------------------- sources the JIT generates

SPEC = '''\
def gen_customize_single_prefill_module(backend):
    if backend == "fa2":
        return gen_jit_spec(uri, paths, extra_cuda_cflags=_fa2_prefill_head_dim_nvcc_flags(1, 2, 3))
    return gen_jit_spec(
        uri,
        paths,
        extra_cuda_cflags=sm90a_nvcc_flags,
    )


def gen_other_module():
    return gen_jit_spec(uri, paths, extra_cuda_cflags=sm90a_nvcc_flags)
'''


def _fake_wheel(root: Path) -> Path:
    (root / "jit" / "attention").mkdir(parents=True)
    (root / "jit" / "attention" / "modules.py").write_text(SPEC)
    csrc = root / "data" / "csrc"
    csrc.mkdir(parents=True)
    (csrc / "single_prefill_sm90_customize_config.jinja").write_text(
        "using DTypeQ = {{ dtype_q }};\nconstexpr int HEAD_DIM_QK = {{ head_dim_qk }};\n"
        "#define ADDITIONAL_PARAMS_SETTER {{ additional_params_setter }}\n{{ variant_decl }}\n")
    (csrc / "single_prefill_sm90_kernel_inst.jinja").write_text(
        '#include "single_prefill_sm90_config.inc"\n'
        "template cudaError_t SinglePrefillWithKVCacheDispatched<{{ head_dim_qk }}, {{ mask_mode }}, "
        "{{ variant_name }}>(Params params);\n")
    (csrc / "single_prefill_sm90.cu").write_text('#include "single_prefill_sm90_config.inc"\n')
    (csrc / "single_prefill_sm90_jit_binding.cu").write_text('#include "single_prefill_sm90_config.inc"\n')
    return root


def test_enclosing_function_is_read_not_run(tmp_path):
    path = tmp_path / "spec.py"
    path.write_text(SPEC + "\nraise SystemExit('never run')\n")
    assert enclosing_function(path, 7) == "gen_customize_single_prefill_module"
    assert enclosing_function(path, 12) == "gen_other_module"
    assert enclosing_function(path, 10) == ""
    assert enclosing_function(tmp_path / "missing.py", 3) == ""


def test_fa3_gate_builds_the_rendered_folder(tmp_path):
    root = _fake_wheel(tmp_path / "fi-0.7.2" / "flashinfer")
    work = tmp_path / "work"
    units = generated_units(root, "jit/attention/modules.py:5:11", "gen_jit_spec( uri, paths, "
                            "extra_cuda_cflags=sm90a_nvcc_flags, )", work)
    names = [Path(u).name for u in units]
    assert names == [f"single_prefill_sm90_kernel_mask_{i}.cu" for i in range(4)] + [
        "single_prefill_sm90.cu", "single_prefill_sm90_jit_binding.cu"]
    folder = Path(units[0]).parent
    config = (folder / "single_prefill_sm90_config.inc").read_text()
    assert "using DTypeQ = half;" in config and "HEAD_DIM_QK = 128;" in config
    assert "params.additional_params.sm_scale = sm_scale;" in config
    assert "hopper/variants.cuh" in config
    assert "MaskMode::kCausal, DefaultAttention<false>>" in (folder / "single_prefill_sm90_kernel_mask_1.cu").read_text()
    # rendered once: a second call returns the same files, untouched
    stamp = (folder / "single_prefill_sm90.cu").stat().st_mtime_ns
    assert generated_units(root, "jit/attention/modules.py:5:11", "extra_cuda_cflags=sm90a_nvcc_flags", work) == units
    assert (folder / "single_prefill_sm90.cu").stat().st_mtime_ns == stamp
    # the generated folder is on the include path of those units
    pair = _pair("UNKNOWN", "not-run", units=units)
    base = {"r": (str(tmp_path / "inc"), str(root / "data" / "csrc"))}
    assert pair_includes(pair, base) == base["r"] + (str(folder),)


def test_gates_outside_generating_specs_build_the_wheel_files(tmp_path):
    root = _fake_wheel(tmp_path / "flashinfer")
    assert generated_units(root, "jit/attention/modules.py:12:37", "sm90a_nvcc_flags", tmp_path) is None
    # the fa2 branch's gate is another function's (the head-dim helper), not this one
    assert generated_units(root, "jit/attention/modules.py:3:52", "_fa2_prefill_head_dim_nvcc_flags(1, 2, 3)",
                           tmp_path) is None


def test_a_template_that_wants_more_than_the_table_gives_falls_back(tmp_path, capsys):
    root = _fake_wheel(tmp_path / "flashinfer")
    (root / "data" / "csrc" / "single_prefill_sm90_kernel_inst.jinja").write_text("{{ new_argument }}\n")
    assert generated_units(root, "jit/attention/modules.py:5:11", "sm90a_nvcc_flags", tmp_path / "w") is None
    assert "could not be written" in capsys.readouterr().out


def test_package_headers_go_only_to_the_units_that_need_them(tmp_path):
    csrc = tmp_path / "flashinfer" / "data" / "csrc"
    (csrc / "fmha_v2").mkdir(parents=True)
    cublas = tmp_path / "cublas" / "include"
    cublas.mkdir(parents=True)
    (csrc / "fmha_v2_run.cu").write_text("#include <fused_multihead_attention.h>\n")
    (csrc / "fp8_blockscale_gemm.cu").write_text("#include <cublasLt.h>\n")
    (csrc / "plain.cu").write_text("\n")
    base = {"r": (str(csrc),)}
    packages = {"cublas": str(cublas)}
    fmha = _pair("UNKNOWN", "not-run", units=(str(csrc / "fmha_v2_run.cu"),))
    fp8 = _pair("EMPTY", "not-run", units=(str(csrc / "fp8_blockscale_gemm.cu"),))
    plain = _pair("POLICY", "not-run", units=(str(csrc / "plain.cu"),))
    assert pair_includes(fmha, base, packages) == (str(csrc), str(csrc / "fmha_v2"), str(cublas))
    assert pair_includes(fp8, base, packages) == (str(csrc), str(cublas))
    assert pair_flags(fp8) == ("-DENABLE_FP8_BLOCK_SCALE",)
    assert pair_includes(plain, base, packages) == base["r"]
    assert pair_includes(fmha, base) == (str(csrc), str(csrc / "fmha_v2"))  # no package given: left out


def test_traps_count_against_the_admitted_builds():
    from archlint.runtime.compile_probe import ProbeResult

    def built(target, sites):
        return ProbeResult("u.cu", target, "built", (), "built", 1.0, kernels=len(sites), trap_sites=sites)

    here = built("sm_100a", (("PrefillWithKVCacheKernel", 52),))
    assert _traps_against(here, [built("sm_90a", (("PrefillWithKVCacheKernel", 0),))], "built")[0] == "built-trap"
    same = _traps_against(here, [built("sm_90a", (("PrefillWithKVCacheKernel", 52),))], "built")
    assert same[0] == "built" and "not arch-dependent" in same[1]
    assert _traps_against(here, [], "built")[0] == "not-run"  # nothing to compare with yet
    # a name the reference build spells otherwise (one demangler read it, the other did not)
    mangled = built("sm_120a", (("_ZN7cutlass13device_kernelINS_4gemm6kernel13GemmUniversalIvEEEvNT_6ParamsE", 31),))
    other = built("sm_100a", (("void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<void>>", 0),))
    assert _traps_against(mangled, [other], "built")[0] == "inconclusive"


# ---------------------------------------------------------------- through archlint and the command line


def test_gate_units_are_what_archlint_reads_the_gate_to_build():
    root, units = gate_units([str(ROOT / "fixtures" / "gate-flashinfer")], ("sm_90a", "sm_120a"))
    assert root == str(ROOT / "fixtures" / "gate-flashinfer")
    comm = units["flashinfer/jit/comm.py:7:18"]  # get_nvcc_flags_list(supported_major_versions=[9, 10])
    assert comm == {"sources": ["flashinfer/data/csrc/trtllm_allreduce.cu"], "defines": [], "references": ["sm_90a"]}


def _bench(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], cwd=cwd, capture_output=True, text=True,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, check=False)


def test_the_command_builds_an_exported_jobs_file(tmp_path):
    jobs, records = tmp_path / "jobs.json", tmp_path / "records.json"
    jobs.write_text("[]")
    done = _bench("bench.accuracy", "--run-jobs", str(jobs), "--records", str(records), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "0 builds written" in done.stdout and records.read_text() == "[]"
    assert _bench("bench.accuracy", cwd=tmp_path).returncode == 2  # --wheel is required


def test_bundle_packs_each_unit_with_what_its_includes_reach(tmp_path):
    include = tmp_path / "include"
    (include / "lib").mkdir(parents=True)
    (include / "lib" / "vec.cuh").write_text("#pragma once\n")
    unit = tmp_path / "src" / "k.cu"
    unit.parent.mkdir()
    unit.write_text('#include "local.cuh"\n#include <lib/vec.cuh>\n#include <missing.h>\n')
    (unit.parent / "local.cuh").write_text("\n")
    (tmp_path / "jobs.json").write_text(json.dumps([{"unit": str(unit), "includes": [str(include)]}]))
    done = _bench("bench.accuracy.bundle", "jobs.json", "bundle.tar.xz", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    with tarfile.open(tmp_path / "bundle.tar.xz") as archive:
        names = set(archive.getnames())
    reached = (unit, unit.parent / "local.cuh", include / "lib" / "vec.cuh")
    assert names == {str(path.resolve()).lstrip("/") for path in reached}


def test_a_genuine_blocker_may_show_as_traps_where_an_admitted_build_has_the_instruction():
    from bench.accuracy.scoring import is_agreement

    assert is_agreement("GENUINE", "arch-error") and is_agreement("GENUINE", "built-empty")
    assert not is_agreement("GENUINE", "built")
    assert is_agreement("EMPTY", "built-empty") and not is_agreement("EMPTY", "arch-error")
    assert is_agreement("POLICY", "built") and not is_agreement("POLICY", "built-empty")
    assert is_agreement("UNKNOWN", "built") is None and is_agreement("POLICY", "inconclusive") is None
