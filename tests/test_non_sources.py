"""Strings that are not sources: toolkit headers named for the include search, bytes labels."""

from __future__ import annotations

from pathlib import Path

import pytest

from archlint.engine import scan
from archlint.extract.python.facts import extract_python
from archlint.knowledge.headers import is_external_header
from archlint.model.findings import Verdict
from archlint.model.scan import ScanOptions

CASE = Path(__file__).resolve().parent.parent / "fixtures" / "gate-non-sources"


@pytest.mark.parametrize("name", ["cuda.h", "cuda_bf16.h", "crt/host_config.h", "cuda/std/tuple", "vector"])
def test_toolkit_headers_are_external(name: str) -> None:
    assert is_external_header(name)


@pytest.mark.parametrize("name", ["cuda_ops.cu", "cuda_kernels.cpp", "fmha_kernel.cu", "flashinfer/vec_dtypes.cuh",
                                  "./cuda.h", "sampling.cuh"])
def test_units_and_project_headers_are_not(name: str) -> None:
    assert not is_external_header(name)


def test_bytes_literal_is_no_source() -> None:
    code = b'def f(src):\n    nvrtcCreateProgram(src, b"probe.cu", 0, [], [])\n    return load(["kernel.cu"])\n'
    facts = extract_python("m.py", code)
    assert [ref.name for ref in facts.sources] == ["kernel.cu"]


@pytest.fixture(scope="module")
def result():
    return scan(ScanOptions(paths=(str(CASE),), use_cache=False, jobs=1))


def test_a_path_only_tested_for_existence_is_no_source() -> None:
    """FlashInfer's experimental JITs locate their include folders by probing for marker headers."""
    code = b"""import os
def include_dirs(installed, source, root):
    if (installed[0] / "tvm_ffi_utils.h").is_file() and (installed[1] / "flashinfer/layout.cuh").exists():
        return installed
    if os.path.exists(os.path.join(root, "flashinfer", "vec_dtypes.cuh")):
        return source
    return [root / "csrc" / "norm.cu"]
"""
    assert [ref.text for ref in extract_python("fi/jit/paths.py", code).sources] == ['root / "csrc" / "norm.cu"']


def test_marker_headers_leave_the_gate_decisive(result) -> None:
    (report,) = [g for g in result.gates if g.location.path == "cake/fmha.py"]
    assert report.location.line == 46
    verdicts = {v.target: v for v in report.verdicts}
    assert verdicts["sm_120a"].verdict is Verdict.POLICY
    assert "crt/host_config.h" not in " ".join(v.reason for v in report.verdicts)
    policy = [f for f in result.findings if f.rule == "AL101"]
    assert [(f.location.path, f.location.line) for f in policy] == [("cake/fmha.py", 46), ("cake/gemm_runner.py", 25)]


def test_probe_named_by_a_bytes_label_guards_nothing(result) -> None:
    assert not [g for g in result.gates if g.location.path == "cake/probe.py"]
    assert not [f for f in result.findings if f.location.path == "cake/probe.py"]


def test_a_string_a_str_method_edits_or_tests_text_with_is_no_source() -> None:
    """FlashInfer's SM120 Sage attention names its module after the source: `removesuffix("_kernel.cu")`."""
    code = b"""MODULES = {(0, 0): "sage_c214204e_kernel.cu", (0, 1): "sage_0f9c7da2_kernel.cu"}
def gen_module(key, root):
    source = MODULES[key]
    name = source.removesuffix("_kernel.cu")
    if not source.endswith(".cu") or source.startswith("legacy_"):
        raise ValueError(name)
    return gen_jit_spec(name, [root / source, root / "sage_binding.cu"])
"""
    names = sorted(ref.name for ref in extract_python("fi/jit/sage.py", code).sources)
    assert names == ["sage_0f9c7da2_kernel.cu", "sage_binding.cu", "sage_c214204e_kernel.cu"]


def test_a_header_the_build_downloads_is_no_unresolved_source(result) -> None:
    """FlashInfer 0.6's low-latency GEMM fetches `f"{include_path}/{header_name}.h"` as an artifact:
    a header is no unit nvcc compiles, so it does not leave the gate UNKNOWN."""
    gate = next(g for g in result.gates if g.location.path == "cake/gemm_runner.py")
    verdicts = {v.target: v for v in gate.verdicts}
    assert verdicts["sm_120a"].verdict is Verdict.POLICY
    assert all("could not be resolved" not in v.reason for v in gate.verdicts)
