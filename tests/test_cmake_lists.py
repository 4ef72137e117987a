"""CMake build lists as gates (vLLM's shape): `cuda_archs_loose_intersection(X_ARCHS "SRC" "${CUDA_ARCHS}")`
evaluated with vLLM's own semantics, the `if(X_ARCHS)` block followed to its sources and -D flags,
and those sources judged per target as a JIT spec's sources are."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import pytest
from click.testing import CliRunner

from archlint.cli.commands import cli
from archlint.engine import scan
from archlint.extract.cmake.facts import extract_cmake
from archlint.lang.cmake.archs import arch_of, cc_of, loose_intersection
from archlint.lang.cmake.condition import Condition, Word
from archlint.lang.cmake.interpret import Interpreter, assigned_names
from archlint.lang.cmake.values import UNKNOWN, version_compare
from archlint.model.findings import Verdict
from archlint.model.scan import ScanOptions

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "gate-cmake-lists"
LISTS = FIXTURE / "CMakeLists.txt"


def _line_of(text: str) -> int:
    return next(n for n, line in enumerate(LISTS.read_text().splitlines(), 1) if text in line)


@lru_cache(maxsize=4)
def _scan(target: str = "sm_120a", toolkit: str = ""):
    return scan(ScanOptions(paths=(str(FIXTURE),), targets=(target,), use_cache=False, jobs=1, toolkit=toolkit))


def _gate(result, variable: str):
    (report,) = [g for g in result.gates if f"({variable} " in g.text]
    return report


# ---------------------------------------------------------------- vLLM's loose intersection


@pytest.mark.parametrize(("src", "tgt", "out"), [
    # +PTX: matched as its base, serves later majors, and the suffix is put back
    ("8.0+PTX", "9.0", "8.0+PTX"),
    ("8.0+PTX;9.0+PTX", "12.0a", "9.0+PTX"),
    ("7.5;8.0;8.7;8.9+PTX", "12.0a", "8.9+PTX"),
    # without +PTX a source arch only serves its own major
    ("8.0;8.6;8.9;9.0", "12.0a", ""),
    ("7.5", "12.0a", ""),
    # the highest source arch of the same major, not above the target
    ("8.0;8.6;8.9", "8.7", "8.6"),
    ("7.5;8.0;8.6;8.7;8.9;9.0;10.0;11.0;12.0", "12.1a", "12.0"),
    # a/f suffixes: kept when the target lists the base, else the target's own spelling
    ("9.0a", "9.0", "9.0a"),
    ("9.0a", "12.0a", ""),
    ("12.0f", "12.0a", "12.0a"),
    ("12.0f", "12.1a", "12.1a"),  # family: the first target of the same major
    ("10.0f;11.0f", "10.3a", "10.3a"),
    ("10.0f;11.0f", "12.0a", ""),
    ("10.0a;10.1a;10.3a", "10.0", "10.0a"),
    # a suffixed target whose base the source lists keeps its suffix
    ("8.9;12.0;12.1", "12.0a", "12.0a"),
    # what vLLM's code does (its comment's example predates the a/f handling)
    ("7.5;8.0;8.6;9.0;9.0a", "8.0;8.9;9.0", "9.0a;8.0;8.6"),
])
def test_loose_intersection_matches_vllm_utils_cmake(src: str, tgt: str, out: str) -> None:
    assert ";".join(loose_intersection(src.split(";"), tgt.split(";"))) == out


def test_cmake_versions_compare_by_numeric_components_ignoring_suffixes() -> None:
    assert version_compare("12.0a", "12.0") == 0
    assert version_compare("9.0", "12.0") < 0
    assert version_compare("13.0", "12.8") > 0
    assert arch_of("sm_120a") == "12.0a" and arch_of("sm_90") == "9.0"
    assert cc_of("8.9+PTX") == 89 and cc_of("10.0f") == 100


def test_conditions_are_three_valued_and_decide_toolkit_branches() -> None:
    env = {"CMAKE_CUDA_COMPILER_VERSION": "12.8", "X_ARCHS": "9.0a", "EMPTY": ""}

    def cond(*words: str) -> bool | None:
        lookup = lambda name: env.get(name, UNKNOWN if name == "FROM_CACHE" else None)  # noqa: E731
        return Condition(lookup).evaluate([Word(w.strip('"'), w.startswith('"')) for w in words])

    assert cond("CMAKE_CUDA_COMPILER_VERSION", "VERSION_GREATER_EQUAL", "12.8") is True
    assert cond("CMAKE_CUDA_COMPILER_VERSION", "VERSION_GREATER_EQUAL", "13.0") is False
    assert cond("CMAKE_CUDA_COMPILER_VERSION", "VERSION_GREATER_EQUAL", "12.8", "AND", "X_ARCHS") is True
    assert cond("CMAKE_CUDA_COMPILER_VERSION", "VERSION_GREATER_EQUAL", "12.8", "AND", "EMPTY") is False
    assert cond("NOT", "EMPTY") is True
    assert cond("FROM_CACHE") is None
    assert cond("FROM_CACHE", "OR", "X_ARCHS") is True
    assert cond("FROM_CACHE", "AND", "EMPTY") is False
    assert cond("(", "X_ARCHS", "OR", "EMPTY", ")", "AND", "NOT", "EMPTY") is True


def _run(text: str, preset: dict[str, str]) -> dict[str, str]:
    facts = {"CMakeLists.txt": extract_cmake("CMakeLists.txt", text.encode())}
    return Interpreter(facts, assigned_names(facts), preset).run_file("CMakeLists.txt")


def test_the_interpreter_follows_set_list_and_toolkit_branches() -> None:
    text = """
set(ARCHS)
if(${CMAKE_CUDA_COMPILER_VERSION} VERSION_GREATER_EQUAL 12.3)
  list(APPEND ARCHS "9.0a")
endif()
if(${CMAKE_CUDA_COMPILER_VERSION} VERSION_GREATER_EQUAL 12.9)
  list(APPEND ARCHS "10.0f")
elseif(${CMAKE_CUDA_COMPILER_VERSION} VERSION_GREATER_EQUAL 12.8)
  list(APPEND ARCHS "10.0a")
endif()
if(FROM_THE_COMMAND_LINE)
  set(MAYBE "on")
endif()
"""
    assert _run(text, {"CMAKE_CUDA_COMPILER_VERSION": "13.0"})["ARCHS"] == "9.0a;10.0f"
    assert _run(text, {"CMAKE_CUDA_COMPILER_VERSION": "12.8"})["ARCHS"] == "9.0a;10.0a"
    # a variable no scanned command sets is unknown: both arms run, and what they leave differs
    assert _run(text, {"CMAKE_CUDA_COMPILER_VERSION": "13.0"})["MAYBE"] == UNKNOWN


# ---------------------------------------------------------------- what a user sees


def test_each_build_list_is_a_gate_at_its_call_line() -> None:
    result = _scan()
    kinds = {g.text.split("(")[1].split()[0]: g for g in result.gates if g.text.startswith("cuda_archs_loose_intersection")}
    assert set(kinds) == {"HOPPER_GEMM_ARCHS", "BLACKWELL_MMA_ARCHS", "ROW_NORM_ARCHS", "SCAN_ARCHS"}
    hopper = kinds["HOPPER_GEMM_ARCHS"]
    assert hopper.location.path == "CMakeLists.txt"
    assert hopper.location.line == _line_of('cuda_archs_loose_intersection(HOPPER_GEMM_ARCHS "9.0a"')
    assert hopper.text == 'cuda_archs_loose_intersection(HOPPER_GEMM_ARCHS "9.0a" "${CUDA_ARCHS}")'
    assert hopper.sources == ("csrc/hopper/gemm_sm90.cu",)
    # the global filter CUDA_ARCHS = supported ∩ CUDA_ARCHS is the build's list, not a gate
    assert not any("(CUDA_ARCHS" in g.text for g in result.gates)


def test_verdicts_for_sm_120a() -> None:
    result = _scan()
    hopper = _gate(result, "HOPPER_GEMM_ARCHS").verdicts[0]
    assert (hopper.target, hopper.verdict) == ("sm_120a", Verdict.GENUINE)
    assert "wgmma" in hopper.reason
    blackwell = _gate(result, "BLACKWELL_MMA_ARCHS").verdicts[0]
    assert blackwell.verdict is Verdict.GENUINE and "tcgen05" in blackwell.reason
    # row_norm.cu's kernel sits under `#if defined(ENABLE_ROW_NORM)`: the block's own -D flag makes it compile
    norm = _gate(result, "ROW_NORM_ARCHS").verdicts[0]
    assert norm.verdict is Verdict.POLICY
    assert "ENABLE_ROW_NORM" in " ".join(hop.message for hop in norm.reached.path)
    # 8.0+PTX serves 12.0: admitted, nothing to judge
    scan_gate = _gate(result, "SCAN_ARCHS")
    assert "sm_120a" in scan_gate.admits and scan_gate.verdicts == ()


def test_the_toolkit_decides_which_call_is_the_gate() -> None:
    newest = _gate(_scan(), "BLACKWELL_MMA_ARCHS")
    older = _gate(_scan(toolkit="12.8"), "BLACKWELL_MMA_ARCHS")
    assert '"10.0f;11.0f"' in newest.text
    assert '"10.0a;10.1a"' in older.text
    assert older.location.line == _line_of('"10.0a;10.1a"')
    # CUDA 13 supports 11.0 and its 10.0f;11.0f list takes sm_110a; CUDA 12.8's supported list has no 11.x
    assert "sm_110a" in _gate(_scan("sm_110a"), "BLACKWELL_MMA_ARCHS").admits
    older_110 = _gate(_scan("sm_110a", "12.8"), "BLACKWELL_MMA_ARCHS")
    assert "sm_110a" not in older_110.admits and older_110.verdicts[0].target == "sm_110a"


def test_reports_show_the_cmake_gate() -> None:
    line = _line_of('cuda_archs_loose_intersection(ROW_NORM_ARCHS')
    runner = CliRunner()
    text = runner.invoke(cli, ["scan", str(FIXTURE), "--target", "sm_120a", "--no-cache", "--jobs", "1"])
    assert f"CMakeLists.txt:{line}" in text.output
    assert 'cuda_archs_loose_intersection(ROW_NORM_ARCHS "8.0;8.6;8.9;9.0" "${CUDA_ARCHS}")' in text.output
    sarif = runner.invoke(cli, ["scan", str(FIXTURE), "--target", "sm_120a", "--no-cache", "--jobs", "1",
                                "--format", "sarif"])
    results = json.loads(sarif.output)["runs"][0]["results"]
    policy = [r for r in results if r["ruleId"] == "AL101"]
    (where,) = [r["locations"][0]["physicalLocation"] for r in policy]
    assert where["artifactLocation"]["uri"].endswith("CMakeLists.txt")
    assert where["region"]["startLine"] == line
    data = json.loads(runner.invoke(cli, ["scan", str(FIXTURE), "--target", "sm_120a", "--no-cache", "--jobs", "1",
                                          "--format", "json"]).output)
    verdicts = {g["text"].split("(")[1].split()[0]: [v["verdict"] for v in g["verdicts"]] for g in data["gates"]}
    assert verdicts["ROW_NORM_ARCHS"] == ["POLICY"] and verdicts["HOPPER_GEMM_ARCHS"] == ["GENUINE"]


def test_sources_the_build_generates_or_fetches_leave_the_gate_unknown(tmp_path: Path) -> None:
    """A `file(GLOB)` that matches nothing (vLLM's generated Marlin kernels) and a source under a
    FetchContent folder (FlashMLA's) are not in the tree: the gate says so instead of judging the rest."""
    (tmp_path / "csrc").mkdir()
    (tmp_path / "csrc" / "ops.cu").write_text("__global__ void k(float* x) { x[0] = 1.f; }\n")
    (tmp_path / "CMakeLists.txt").write_text("""
cuda_archs_loose_intersection(GEN_ARCHS "7.5" "${CUDA_ARCHS}")
if(GEN_ARCHS)
  file(GLOB GEN_SRC "csrc/generated/sm75_kernel_*.cu")
  set_gencode_flags_for_srcs(SRCS "${GEN_SRC}" CUDA_ARCHS "${GEN_ARCHS}")
  set(SRCS "csrc/ops.cu")
  set_gencode_flags_for_srcs(SRCS "${SRCS}" CUDA_ARCHS "${GEN_ARCHS}")
endif()
FetchContent_MakeAvailable(flashmla)
cuda_archs_loose_intersection(MLA_ARCHS "9.0a" "${CUDA_ARCHS}")
if(MLA_ARCHS)
  set(MLA_SRC ${flashmla_SOURCE_DIR}/csrc/sm90/fwd.cu)
  set_gencode_flags_for_srcs(SRCS "${MLA_SRC}" CUDA_ARCHS "${MLA_ARCHS}")
endif()
""")
    result = scan(ScanOptions(paths=(str(tmp_path),), targets=("sm_120a",), use_cache=False, jobs=1))
    generated = _gate(result, "GEN_ARCHS").verdicts[0]
    assert generated.verdict is Verdict.UNKNOWN
    assert "csrc/generated/sm75_kernel_*.cu" in generated.reason and "generated at build time" in generated.reason
    fetched = _gate(result, "MLA_ARCHS").verdicts[0]
    assert fetched.verdict is Verdict.UNKNOWN and "${…}/csrc/sm90/fwd.cu" in fetched.reason


def test_a_cmake_comment_suppresses_the_gate_finding(tmp_path: Path) -> None:
    import shutil

    tree = tmp_path / "tree"
    shutil.copytree(FIXTURE, tree)
    lists = tree / "CMakeLists.txt"
    text = lists.read_text().replace(
        "# expect: AL101\n", "# archlint: ignore[policy-gate] -- only tested on these GPUs\n")
    lists.write_text(text)
    args = ["scan", str(tree), "--target", "sm_120a", "--no-cache", "--jobs", "1", "--format", "json"]
    data = json.loads(CliRunner().invoke(cli, args).output)
    assert not [f for f in data["findings"] if f["rule"] == "AL101"]
    shown = json.loads(CliRunner().invoke(cli, [*args, "--no-suppress"]).output)
    assert [f["line"] for f in shown["findings"] if f["rule"] == "AL101"] == [_line_of("(ROW_NORM_ARCHS")]
