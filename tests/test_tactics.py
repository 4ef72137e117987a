"""CUTLASS tactics vs shared memory: the tile lists a generator offers, read without running it,
linked to the gate that admits the target, and AL204 where a lower bound on a tactic's shared
memory exceeds the target's opt-in limit. The nvcc tests measure the fixture launcher's
`sizeof(SharedStorage)` and check that the bound never exceeds it."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from archlint.cli import cli
from archlint.extract.python.tactics import tile_lists
from archlint.judge.smem_bound import fit, tactic_bound
from archlint.knowledge.cutlass import load_cutlass
from archlint.model.tactics import Fit, TacticChoice

CASE = Path(__file__).resolve().parents[1] / "fixtures" / "al204-cutlass-tactics"
GENERATOR = CASE / "moekit" / "jit" / "gemm" / "generate_kernels.py"
LAUNCHERS = CASE / "moekit" / "csrc"
NVCC = shutil.which("nvcc")
LIMIT = 101_376  # sm_120 opt-in per block (rules/kb/devices.toml)


def _line(text: str) -> int:
    return next(n for n, line in enumerate(GENERATOR.read_text().splitlines(), 1) if line.strip() == text)


def _fixture_lists():
    (fact,) = tile_lists("generate_kernels.py", GENERATOR.read_bytes())
    return fact


def test_the_generator_lists_are_read_with_their_product_and_filters():
    fact = _fixture_lists()
    assert (fact.function, fact.variable, fact.arch, fact.stages) == ("generate_sm120_grouped_gemm_operations", "cta_shapes_mnk", 120, 0)
    assert [t.text() for t in fact.tiles] == ["128×128×128", "128×256×128", "256×128×128", "128×128×256", "128×256×256", "256×96×256"]
    by_dtype: dict[str, set[str]] = {}
    for choice in fact.choices:
        by_dtype.setdefault(choice.axis("dtype"), set()).add(fact.tiles[choice.tile].text())
    # the `if ...: continue` filters: FP8 x FP4 keeps two tiles, FP8 x FP8 drops N = 96
    assert by_dtype["(DataType.e4m3, e2m1)"] == {"128×128×128", "128×256×128"}
    assert "256×96×256" not in by_dtype["DataType.e4m3"] and len(by_dtype["DataType.e4m3"]) == 5
    assert len(by_dtype["e2m1"]) == 6
    assert len(fact.choices) == (5 + 6 + 2) * 2 * 2 and all(c.sure for c in fact.choices)  # × fusions × swap_ab
    assert fact.note == ""


def test_a_filter_that_is_not_literal_leaves_the_combination_in_unsure():
    source = b"""
from itertools import product
def gen():
    arch = 120
    cta_shapes_mnk = [[128, 128, 128], [128, 256, 128]]
    supported_dtypes = [e2m1]
    for dtype, cta_shape_mnk in product(supported_dtypes, cta_shapes_mnk):
        if too_big(cta_shape_mnk):
            continue
        ops.append(cta_shape_mnk)
"""
    (fact,) = tile_lists("g.py", source)
    assert len(fact.choices) == 2 and not any(c.sure for c in fact.choices)
    assert fact.note == "2 combination(s) under a filter archlint does not read"


def test_the_bound_counts_stages_operand_tiles_and_scale_factors():
    fact, knowledge = _fixture_lists(), load_cutlass()
    launcher = knowledge.launcher_for("launchers/moe_gemm_tma_ws_launcher.inl", 120)
    big = TacticChoice(4, (("dtype", "e2m1"), ("swap", "False")))
    bound = tactic_bound(fact, big, launcher, knowledge)
    assert bound is not None and bound.nbytes == 110_592 and bound.stages == 2
    assert bound.arithmetic == ("2 stages × ((128×256 A + 256×256 B) × 4 bits (e2m1) + (128 + 256)×256/16 × 1 B "
                                "(ue4m3 scale factors)) = 110,592")
    assert fit(bound, LIMIT) is Fit.DOES_NOT_FIT
    mixed = tactic_bound(fact, TacticChoice(1, (("dtype", "(DataType.e4m3, e2m1)"), ("swap", "True"))), launcher, knowledge)
    assert mixed is not None and mixed.nbytes == 2 * (128 * 128 // 2 + 256 * 128 + 384 * 128 // 32)  # swap: A is the weight


def test_a_tactic_at_exactly_the_limit_is_not_reported():
    fact, knowledge = _fixture_lists(), load_cutlass()
    launcher = knowledge.launcher_for("moe_gemm_tma_ws_launcher.inl", 120)
    bound = tactic_bound(fact, TacticChoice(5, (("dtype", "e2m1"),)), launcher, knowledge)
    assert bound is not None and bound.nbytes == LIMIT
    assert fit(bound, LIMIT) is Fit.CANNOT_TELL


def test_scan_reports_the_tiles_over_the_limit_with_the_arithmetic():
    result = CliRunner().invoke(cli, ["scan", str(CASE), "--no-cache", "--select", "AL204", "--target", "sm_120a"])
    assert result.exit_code == 1
    heads = [line for line in result.output.splitlines() if ": AL204 " in line]
    path = "fixtures/al204-cutlass-tactics/moekit/jit/gemm/generate_kernels.py"
    k256, wide = _line("[128, 128, 256],"), _line("[128, 256, 256],")
    assert heads == [
        f"{path}:{k256}:9: AL204 `cta_shapes_mnk[3] = [128, 128, 256]` needs at least 2 stages × ((128×256 A + 128×256 B) "
        "× 1 B (e4m3)) = 131,072 bytes of shared memory per block, over the 101,376 bytes a block can have on sm_120a",
        f"{path}:{wide}:9: AL204 `cta_shapes_mnk[4] = [128, 256, 256]` needs at least 2 stages × ((128×256 A + 256×256 B) "
        "× 1 B (e4m3)) = 196,608 bytes of shared memory per block, over the 101,376 bytes a block can have on sm_120a",
        f"{path}:{wide}:9: AL204 `cta_shapes_mnk[4] = [128, 256, 256]` needs at least 2 stages × ((128×256 A + 256×256 B) "
        "× 4 bits (e2m1) + (128 + 256)×256/16 × 1 B (ue4m3 scale factors)) = 110,592 bytes of shared memory per block, "
        "over the 101,376 bytes a block can have on sm_120a",
    ]
    # the chain runs from the gate through the module generator to the tile list
    assert "fused_moe.py:13: gate `current_compilation_context.get_nvcc_flags_list(supported_major_versions=[12])`" in result.output
    assert "calls `moekit.jit.gemm.generate_kernels.generate_sm120_grouped_gemm_operations`" in result.output


def test_scan_for_a_target_the_gate_shuts_out_reports_no_tactic():
    result = CliRunner().invoke(cli, ["scan", str(CASE), "--no-cache", "--select", "AL204", "--target", "sm_89"])
    assert result.exit_code == 0 and ": AL204 " not in result.output


def test_tactics_command_lists_each_tactic_with_its_verdict():
    result = CliRunner().invoke(cli, ["tactics", str(CASE), "--no-cache", "--target", "sm_120a", "--format", "json"])
    assert result.exit_code == 0
    rows = json.loads(result.output)
    assert len(rows) == 52 + 4 and {r["target"] for r in rows} == {"sm_120a"}  # MoE tactics, then 2 dense tiles × swap
    at_limit = [r for r in rows if r["tile"] == "256×96×256"]
    assert {(r["bound"], r["verdict"]) for r in at_limit} == {(LIMIT, "cannot tell")}
    assert "compile probe" in at_limit[0]["settle"]
    assert sum(r["verdict"] == "does not fit" for r in rows) == 4 * 3  # 3 tile × element pairs, 4 tactics each


def test_a_launcher_that_filters_at_run_time_is_not_reported(tmp_path: Path):
    jit = tmp_path / "kit" / "jit"
    jit.mkdir(parents=True)
    (jit / "__init__.py").write_text("")
    (tmp_path / "kit" / "__init__.py").write_text("")
    (jit / "core.py").write_text((CASE / "moekit" / "jit" / "core.py").read_text())
    generator = """
from itertools import product
from .core import current_compilation_context, gen_jit_spec

def generate_sm80_fused_grouped_gemm_operations():
    arch = 80
    supported_dtypes = [DataType.f16]
    cta_shapes_mnk = [(128, 128, 64)]
    stages = [2, 4]
    ops = []
    for dtype, cta_shape_mnk, stage in product(supported_dtypes, cta_shapes_mnk, stages):
        ops.append((dtype, cta_shape_mnk, stage))
    return ops

def gen_moe_sm89_module():
    flags = current_compilation_context.get_nvcc_flags_list(supported_major_versions=[8])
    generate_sm80_fused_grouped_gemm_operations()
    launcher = "{launcher}"
    return gen_jit_spec("moe_89", ["moe.cu"], extra_cuda_cflags=flags)
"""
    (tmp_path / "kit" / "moe.cu").write_text("__global__ void k() {}\n")
    for launcher, reported in (("fused_moe_gemm_launcher_sm80.inl", False), ("", True)):
        (jit / "moe.py").write_text(generator.replace("{launcher}", launcher))
        result = CliRunner().invoke(cli, ["scan", str(tmp_path), "--no-cache", "--select", "AL204", "--target", "sm_89"])
        # 4 stages × (128×64 A + 128×64 B) × 2 B = 131,072 B > 101,376 B; the 2-stage tactic is under the limit
        heads = [line for line in result.output.splitlines() if ": AL204 " in line]
        assert heads == ([f"kit/jit/moe.py:8:23: AL204 `cta_shapes_mnk[0] = [128, 128, 64]` needs at least 4 stages × "
                          "((128×64 A + 128×64 B) × 2 B (f16)) = 131,072 bytes of shared memory per block, over the "
                          "101,376 bytes a block can have on sm_89"] if reported else [])
        rows = json.loads(CliRunner().invoke(cli, ["tactics", str(tmp_path), "--no-cache", "--target", "sm_89",
                                                   "--format", "json"]).output)
        verdicts = sorted(r["verdict"] for r in rows)
        assert verdicts == (["cannot tell", "does not fit"] if reported else ["filtered at run time"] * 2)


def _measure(tactics: list[str]) -> list[int]:
    """sizeof(GemmKernel<...>::SharedStorage) for each tactic, read from the compiler's error for an
    incomplete `Show<sizeof(...)>`: the front end alone, nothing is built or run."""
    probe = "#include \"launchers/moe_gemm_tma_ws_launcher.inl\"\ntemplate <int...> struct Show;\n" \
            f"Show<{', '.join(f'(int)sizeof(moekit::GemmKernel<{t}>::SharedStorage)' for t in tactics)}> show;\n"
    done = subprocess.run([NVCC, "-std=c++17", "-arch=sm_120a", "-I", str(LAUNCHERS), "-x", "cu", "-c", "-", "-o", "/dev/null"],
                          input=probe, capture_output=True, text=True, timeout=300)
    match = re.search(r"Show<([\d, ]+)>", done.stdout + done.stderr)
    assert match, done.stderr
    return [int(v) for v in match.group(1).split(",")]


@pytest.mark.skipif(NVCC is None, reason="nvcc not installed: measuring SharedStorage needs it")
def test_nvcc_measures_at_least_the_bound_of_every_instantiated_tactic():
    fact, knowledge = _fixture_lists(), load_cutlass()
    launcher = knowledge.launcher_for("moe_gemm_tma_ws_launcher.inl", 120)
    auto = "moekit::StageCountAutoCarveout<sizeof(moekit::EpilogueStorage<4096>)>"
    cases = [  # (tile index, dtype, the fixture launcher's tactic)
        (1, "e2m1", f"moekit::Tactic<128, 256, 128, 4, 4, 16, 4096, true>, {auto}"),
        (3, "e2m1", f"moekit::Tactic<128, 128, 256, 4, 4, 16, 4096, true>, {auto}"),
        (0, "(DataType.e4m3, e2m1)", f"moekit::Tactic<128, 128, 128, 8, 4, 32, 4096, true>, {auto}"),
    ]
    measured = _measure([tactic for _, _, tactic in cases])
    for (tile, dtype, _), size in zip(cases, measured):
        bound = tactic_bound(fact, TacticChoice(tile, (("dtype", dtype), ("swap", "False"))), launcher, knowledge)
        assert bound is not None and bound.nbytes <= size, (fact.tiles[tile].text(), bound, size)
    assert measured == [88_064, 78_848, 81_920]  # CUTLASS-like auto stages fill the limit: 3, 2, 3 stages


@pytest.mark.skipif(NVCC is None, reason="nvcc not installed: measuring SharedStorage needs it")
def test_nvcc_measures_the_at_limit_tactic_at_exactly_the_limit_so_it_fits():
    (size,) = _measure(["moekit::Tactic<256, 96, 256, 4, 4, 16, 0, false>, moekit::StageCount<2>"])
    assert size == LIMIT  # fits: a block may use exactly its opt-in limit


def test_the_compile_probe_without_nvcc_says_it_needs_it(monkeypatch):
    from archlint.probe import tactics as tactic_probe

    monkeypatch.setattr(tactic_probe, "find_nvcc", lambda: None)
    result = CliRunner().invoke(cli, ["tactics", str(CASE), "--no-cache", "--target", "sm_120a", "--compile-probe"])
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == ["archlint tactics: the compile probe needs nvcc (not found on PATH)"]


@pytest.mark.skipif(NVCC is None, reason="nvcc not installed: the compile probe needs it")
def test_the_compile_probe_measures_each_tactic_through_the_launcher(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("ARCHLINT_CACHE_DIR", str(tmp_path / "cache"))
    result = CliRunner().invoke(cli, ["tactics", str(CASE), "--no-cache", "--target", "sm_120a", "--compile-probe",
                                      "--format", "json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    measured = [r for r in rows if r["measured"] is not None]
    assert measured and all(r["bound"] <= r["measured"] for r in measured)  # the bound is a lower bound
    # CUTLASS-like auto stages: 3 stages by the operand bytes, the 1024-byte alignment takes the block over
    finalize = {(r["tile"], r["verdict"], r["measured"]) for r in rows
                if "dtype=e2m1" in r["axes"] and "fusion=finalize" in r["axes"] and r["tile"] in ("128×256×128", "256×128×128")}
    assert finalize == {("128×256×128", "does not fit", 102_400), ("256×128×128", "does not fit", 102_400)}
    assert {r["verdict"] for r in rows if r["measured"] is not None and r["measured"] <= LIMIT} == {"fits"}
    # the auto stage count cannot give the at-limit tile two stages: the kernel does not compile
    at_limit = [r for r in rows if r["tile"] == "256×96×256"]
    assert at_limit and all(r["measured"] is None and "compile" in r["probe_note"] for r in at_limit)
    assert any(r["probe_note"].startswith("does not compile: static assertion failed") for r in at_limit)
    assert {r["verdict"] for r in at_limit} == {"cannot tell"}
    # cached by content: a second run compiles nothing and answers the same
    again = CliRunner().invoke(cli, ["tactics", str(CASE), "--no-cache", "--target", "sm_120a", "--compile-probe",
                                     "--format", "json"])
    assert json.loads(again.output) == rows


def test_a_dense_tile_list_takes_its_element_types_from_the_launcher_it_renders(tmp_path: Path):
    """FlashInfer 0.6.17's dense MXFP8 module: tiles in a `with` block, rendered through the
    launcher's Jinja template; 256x128x128 is exactly at the limit by the bound (flashinfer #3568
    measured 111,616 bytes), so it is not reported: only a measurement tells."""
    jit = tmp_path / "kit" / "jit"
    jit.mkdir(parents=True)
    (tmp_path / "kit" / "__init__.py").write_text("")
    (jit / "__init__.py").write_text("")
    (jit / "core.py").write_text((CASE / "moekit" / "jit" / "core.py").read_text())
    (jit / "gemm.py").write_text('''
import jinja2
from .core import current_compilation_context, gen_jit_spec

def gen_gemm_sm120_module_cutlass_mxfp8():
    sources = ["mxfp8_gemm_cutlass_sm120.cu"]
    with open("mxfp8_gemm_cutlass_sm120.jinja") as f:
        template = jinja2.Template(f.read())
        cta_m_n_k_list = [
            (128, 128, 128),
            (256, 128, 128),
        ]
        for cta_m, cta_n, cta_k in cta_m_n_k_list:
            sources.append(template.render(cta_m=cta_m, cta_n=cta_n, cta_k=cta_k))
    flags = current_compilation_context.get_nvcc_flags_list(supported_major_versions=[12])
    return gen_jit_spec("mxfp8_gemm_cutlass_sm120", sources, extra_cuda_cflags=flags)
''')
    rows = json.loads(CliRunner().invoke(cli, ["tactics", str(tmp_path), "--no-cache", "--target", "sm_120a",
                                               "--format", "json"]).output)
    # the template instantiates each tile with swap_ab false and true: two tactics of one bound
    assert [(r["tile"], r["axes"], r["bound"], r["verdict"]) for r in rows] == [
        ("128×128×128", "swap=False", 67_584, "cannot tell"), ("128×128×128", "swap=True", 67_584, "cannot tell"),
        ("256×128×128", "swap=False", LIMIT, "cannot tell"), ("256×128×128", "swap=True", LIMIT, "cannot tell")]
    assert rows[2]["arithmetic"] == ("2 stages × ((256×128 A + 128×128 B) × 1 B (e4m3) + (256 + 128)×128/32 × 1 B "
                                     "(ue8m0 scale factors)) = 101,376")
    assert rows[0]["launcher"] == "mxfp8_gemm_cutlass_sm120.jinja"


@pytest.mark.skipif(NVCC is None, reason="nvcc not installed: the compile probe needs it")
def test_scan_with_the_compile_probe_reports_each_measured_tactic_over_the_limit(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("ARCHLINT_CACHE_DIR", str(tmp_path / "cache"))
    args = ["scan", str(CASE), "--target", "sm_120a", "--format", "json", "--select", "AL204"]
    probed = json.loads(CliRunner().invoke(cli, [*args, "--compile-probe"]).output)
    tactics = [f for f in probed["findings"] if dict(f.get("properties", {})).get("measured") == "nvcc"
               and f["symbol"] == "generate_sm120_grouped_gemm_operations"]
    # exactly the two FP4 FINALIZE tactics nvcc measures over 101,376 bytes (the tactics test above)
    assert sorted((f["message"].split("`")[1], f["properties"]["nbytes"]) for f in tactics) == [
        (f"cta_shapes_mnk[{i}] = {tile} with dtype e2m1, fusion finalize, cluster (1, 1, 1), swap {swap}", "102400")
        for i, tile in ((1, "[128, 256, 128]"), (2, "[256, 128, 128]")) for swap in ("False", "True")
    ]
    first = tactics[0]
    assert first["targets"] == ["sm_120a"] and "needs 102,400 bytes" in first["message"]
    assert first["path"].endswith("generate_kernels.py") and first["line"] == _line("[128, 256, 128],")
    assert first["evidence"][0]["message"].startswith("gate `")  # the chain starts at the gate that admits sm_120a
    assert any("nvcc measures sizeof(SharedStorage)" in hop["message"] for hop in first["evidence"])
    # a measured tactic that fits is not reported, whatever the bound: every finding is over the limit
    assert all(int(f["properties"]["nbytes"]) > LIMIT for f in tactics)
    # the same scan again answers from the stored result: no compile, the same findings
    again = json.loads(CliRunner().invoke(cli, [*args, "--compile-probe"]).output)
    assert again["findings"] == probed["findings"]


def test_scan_with_the_compile_probe_and_no_nvcc_says_so_and_judges_by_the_bound(monkeypatch, tmp_path: Path):
    from archlint.probe import nvcc, tactics as tactic_probe

    monkeypatch.setenv("ARCHLINT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(nvcc, "find_nvcc", lambda: None)
    monkeypatch.setattr(tactic_probe, "find_nvcc", lambda: None)
    args = ["scan", str(CASE), "--target", "sm_120a", "--format", "json", "--select", "AL204", "--no-cache"]
    result = CliRunner().invoke(cli, [*args, "--compile-probe"])
    assert result.stderr.splitlines() == ["archlint: --compile-probe needs nvcc (not on PATH, in $CUDA_HOME or "
                                          "/usr/local/cuda): tactics are judged by the static bound alone"]
    plain = CliRunner().invoke(cli, args)
    assert json.loads(result.stdout)["findings"] == json.loads(plain.stdout)["findings"]


@pytest.mark.skipif(NVCC is None, reason="nvcc not installed: the compile probe needs it")
def test_the_probe_reaches_a_kernel_header_its_template_takes_by_a_quoted_sibling_include(tmp_path: Path, monkeypatch):
    """FlashInfer's dense FP4 GEMM: the Jinja template includes the dispatch header, which takes the
    kernel header from its own folder (`#include "fp4_gemm_template_sm120.h"`), so a patched copy
    must sit beside a copy of its includer; the template instantiates each tile with swap_ab true
    and false, each a tactic of its own, and only the wider swapped epilogue takes 128x256x128 over."""
    monkeypatch.setenv("ARCHLINT_CACHE_DIR", str(tmp_path / "cache"))
    result = CliRunner().invoke(cli, ["tactics", str(CASE), "--no-cache", "--target", "sm_120a", "--compile-probe",
                                      "--format", "json"])
    rows = [r for r in json.loads(result.output) if r["generator"] == "gen_gemm_sm120_module_cutlass_fp4"]
    assert [(r["tile"], r["axes"], r["measured"], r["verdict"]) for r in rows] == [
        ("128×128×128", "swap=False", 97_280, "fits"), ("128×128×128", "swap=True", 93_184, "fits"),
        ("128×256×128", "swap=False", 88_064, "fits"), ("128×256×128", "swap=True", 102_400, "does not fit")]
    scan = json.loads(CliRunner().invoke(cli, ["scan", str(CASE), "--target", "sm_120a", "--format", "json",
                                               "--select", "AL204", "--compile-probe"]).output)
    dense = [f for f in scan["findings"] if f["symbol"] == "gen_gemm_sm120_module_cutlass_fp4"]
    assert [(f["line"], f["properties"]["tactic"], f["properties"]["nbytes"]) for f in dense] == [
        (_line_of(CASE / "moekit" / "jit" / "gemm_fp4.py", "(128, 256, 128),"), "swap True", "102400")]


def _line_of(path: Path, text: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if line.strip() == text)


def test_a_unit_stopped_by_a_missing_toolkit_header_says_which_and_what_settles_it():
    from archlint.probe.tactics import _answers

    output = ("In file included from tree/launchers/moe_gemm_tma_ws_launcher.inl:41,\n"
              "                 from unit.cu:1:\n"
              "/tree/include/tensorrt_llm/common/cudaUtils.h:19:10: fatal error: cublasLt.h: No such file or directory\n"
              "compilation terminated.\n")
    (answer,) = _answers(output, [("generate_kernels.py", 40, "tactic", "sm_120a")], 3).values()
    assert answer.nbytes is None
    assert answer.note == ("no size in nvcc's output: cublasLt.h: No such file or directory; "
                           "pass --include-dir with the folder holding `cublasLt.h`")


@pytest.mark.skipif(NVCC is None, reason="nvcc not installed: the compile probe needs it")
def test_a_tactic_linked_through_two_gates_is_one_finding(tmp_path: Path, monkeypatch):
    # FlashInfer's fused_moe.py reaches the same SM120 generator from three gates ([12], [10, 12], ...)
    monkeypatch.setenv("ARCHLINT_CACHE_DIR", str(tmp_path / "cache"))
    tree = tmp_path / "tree"
    shutil.copytree(CASE, tree)
    module = tree / "moekit" / "jit" / "fused_moe.py"
    module.write_text(module.read_text() + '''

def gen_cutlass_fused_moe_sm10x_sm12x_module():
    nvcc_flags = ["-DCOMPILE_BLACKWELL_SM120_TMA_GROUPED_GEMMS", "-DENABLE_FP8", "-DENABLE_FP4"]
    nvcc_flags += current_compilation_context.get_nvcc_flags_list(supported_major_versions=[10, 12])
    return gen_cutlass_fused_moe_module(nvcc_flags, "120")
''')
    from archlint.probe import tactics as tactic_probe

    units: list[str] = []
    real = tactic_probe._run
    monkeypatch.setattr(tactic_probe, "_run", lambda nvcc, unit, *rest: units.append(unit) or real(nvcc, unit, *rest))
    scan = json.loads(CliRunner().invoke(cli, ["scan", str(tree), "--target", "sm_120a", "--format", "json",
                                               "--select", "AL204", "--compile-probe"]).output)
    moe = [(f["line"], f["properties"]["tactic"]) for f in scan["findings"]
           if f["symbol"] == "generate_sm120_grouped_gemm_operations" and f["properties"].get("measured") == "nvcc"]
    assert len(moe) == 4 and len(set(moe)) == 4
    assert units and len(units) == len(set(units))  # the gates' units are alike: each compiled once


def test_a_unit_two_jobs_make_alike_is_compiled_once(tmp_path: Path, monkeypatch):
    from archlint.probe import tactics as tactic_probe

    units: list[str] = []
    monkeypatch.setattr(tactic_probe, "_run", lambda nvcc, unit, copies, flags, timeout: units.append(unit) or f"out {unit}")
    made = [tactic_probe.Compile(key, unit, (), ("-arch=sm_120a",)) for key, unit in [("k1", "a"), ("k1", "a"), ("k2", "b")]]
    settings = tactic_probe.ProbeSettings(root=str(tmp_path), jobs=4, cache_dir=str(tmp_path / "probe"))
    assert tactic_probe.compile_all(made, settings, "nvcc") == {"k1": "out a", "k2": "out b"}
    assert sorted(units) == ["a", "b"]
    # cached by key: a second probe compiles nothing
    assert tactic_probe.compile_all(made, settings, "nvcc") == {"k1": "out a", "k2": "out b"} and len(units) == 2
