"""Build blocks whose sources the build writes or fetches (vLLM's shape): units a generator script
writes from its templates, CUTLASS collectives picked in the unit while CUTLASS itself is fetched,
CUTLASS's toolkit macros decided without its headers, and trees fetched with FetchContent."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from archlint.extract.cmake.facts import extract_cmake
from archlint.extract.python.generator import generator_templates, unit_text
from archlint.engine import scan
from archlint.link.cuda import build_index
from archlint.extract.cuda.facts import extract_cuda
from archlint.link.generators import fetched_content, named_scripts, writer_of
from archlint.model.findings import Verdict
from archlint.model.scan import ScanOptions

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "gate-cmake-generated"


@lru_cache(maxsize=2)
def _scan(target: str = "sm_120a"):
    return scan(ScanOptions(paths=(str(FIXTURE),), targets=(target,), use_cache=False, jobs=1))


def _verdict(variable: str, target: str = "sm_120a"):
    (report,) = [g for g in _scan(target).gates if f"({variable} " in g.text]
    (verdict,) = [v for v in report.verdicts if v.target == target]
    return verdict


def test_generated_turing_units_are_judged_from_the_generator_templates() -> None:
    verdict = _verdict("GEMV_SM75_ARCHS")
    assert verdict.verdict is Verdict.POLICY
    path = verdict.reached.path  # what the walk behind the POLICY verdict checked
    messages = [hop.message for hop in path]
    assert any("csrc/gemv/generate_kernels.py writes at build time" in m for m in messages)
    assert any(m == "kernel `Gemv`" for m in messages)
    assert any(hop.location.path.endswith("csrc/gemv/gemv_template.h") and "m16n8k16" in hop.message for hop in path)


def test_generated_units_include_relative_to_the_folder_they_are_written_to() -> None:
    verdict = _verdict("MIXED_ARCHS")
    assert verdict.verdict is Verdict.GENUINE
    assert "[cutlass-arch-sm90-mainloop]" in verdict.reason and "`MixedKernel`" in verdict.reason
    paths = [hop.location.path.removeprefix("fixtures/gate-cmake-generated/") for hop in verdict.evidence]
    assert "csrc/mixed/generated/*.cu" in paths and "csrc/mixed/mixed_kernel.cuh" in paths


def test_arch_tag_beside_a_kernel_schedule_needs_no_cutlass_header() -> None:
    verdict = _verdict("MOE_SM90_ARCHS")
    assert verdict.verdict is Verdict.GENUINE
    assert verdict.reason.startswith("`Sm90`") and "[cutlass-arch-sm90-mainloop]" in verdict.reason
    assert verdict.evidence[-1].location.path.endswith("csrc/moe/grouped_gemm_sm90.cu")
    assert verdict.evidence[-1].location.line == 17


def test_cutlass_toolkit_macro_is_decided_without_the_header() -> None:
    verdict = _verdict("GROUPED_MX_ARCHS")
    assert verdict.verdict is Verdict.GENUINE
    assert "[cutlass-arch-sm100]" in verdict.reason and "which the unit instantiates" in verdict.reason


def test_fetched_sources_say_what_would_settle_them() -> None:
    verdict = _verdict("FASTATTN_ARCHS")
    assert verdict.verdict is Verdict.UNKNOWN
    assert "3 sources under the tree fetched at build time by FetchContent_Declare(fastattn) from " \
           "https://github.com/example-org/fastattn" in verdict.reason
    assert "scan that tree (`${fastattn_SOURCE_DIR}`)" in verdict.reason


def test_generated_unit_is_no_file_of_its_own_for_the_file_rules() -> None:
    found = {(f.location.path.removeprefix("fixtures/gate-cmake-generated/"), f.rule) for f in _scan().findings}
    assert not [path for path, _ in found if "*" in path]


def test_generator_templates_read_constants_without_running_the_script() -> None:
    script = b'''
import jinja2
HEAD_COMMENT = """
// generated
""".lstrip()
FILE_HEAD = HEAD_COMMENT + """#include "k.h"
namespace ns {
"""
TEMPLATE = ("template __global__ void K<" "{{t}}" ">( PARAMS );")
SUFFIX = "kernel_{}.cu"
LOCAL = open("x").read()
def f():
    INNER = "#include \\"other.h\\""
'''
    templates = generator_templates(script)
    assert templates == ('// generated\n#include "k.h"\nnamespace ns {\n', "template __global__ void K<{{t}}>( PARAMS );")
    assert unit_text(templates).endswith("( PARAMS );\n}\n")


def test_a_glob_is_written_by_the_named_script_beside_it_or_above_it() -> None:
    scripts = ("csrc/gemv/generate_kernels.py", "csrc/mixed/generate.py")
    assert writer_of("csrc/gemv/sm75_kernel_*.cu", scripts) == "csrc/gemv/generate_kernels.py"
    assert writer_of("csrc/mixed/generated/*.cu", scripts) == "csrc/mixed/generate.py"
    assert writer_of("csrc/other/*.cu", scripts) is None
    assert writer_of("csrc/gemv/x/*.cu", scripts + ("csrc/gemv/tune.py",)) is None  # two candidates: no guess
    lists = {"CMakeLists.txt": extract_cmake("CMakeLists.txt", (FIXTURE / "CMakeLists.txt").read_bytes())}
    python = ("csrc/gemv/generate_kernels.py", "csrc/mixed/generate.py", "csrc/gemv/tune.py", "setup.py")
    assert named_scripts(lists, python) == ("csrc/gemv/generate_kernels.py", "csrc/mixed/generate.py")


def test_fetched_content_names_each_tree_once() -> None:
    path = "cmake/external_projects/fastattn.cmake"
    facts = extract_cmake(path, (FIXTURE / path).read_bytes())
    assert fetched_content(facts) == (("fastattn", "https://github.com/example-org/fastattn"),)


def test_library_macros_only_where_the_library_is_included_and_not_held() -> None:
    unit = b'#include "cutlass/cutlass.h"\n#if defined(CUTLASS_ARCH_MMA_SM100_SUPPORTED)\nint x;\n#endif\n'
    index = build_index([extract_cuda("a.cu", unit)])
    assert "CUTLASS_ARCH_MMA_SM100_SUPPORTED" in index.bindings
    plain = build_index([extract_cuda("a.cu", unit.replace(b"cutlass/cutlass.h", b"mine.h"))])
    assert "CUTLASS_ARCH_MMA_SM100_SUPPORTED" not in plain.bindings
    held = b"#define CUTLASS_ARCH_MMA_SM100_SUPPORTED 1\n"
    both = build_index([extract_cuda("a.cu", unit), extract_cuda("cfg.h", held)])
    assert len(both.bindings["CUTLASS_ARCH_MMA_SM100_SUPPORTED"]) == 1
