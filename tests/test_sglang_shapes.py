"""SGLang's JIT shapes: header-only sources handed to a shared loader (fixtures/gate-sglang-jit)."""

from __future__ import annotations

from pathlib import Path

import pytest

from archlint.engine import scan
from archlint.model.scan import ScanOptions

ROOT = Path(__file__).resolve().parent.parent / "fixtures" / "gate-sglang-jit"


@pytest.fixture(scope="module")
def result():
    return scan(ScanOptions(paths=(str(ROOT),), use_cache=False, jobs=1))


def _verdicts(result, path: str, line: int) -> dict[str, tuple[str, str]]:
    gate = next(g for g in result.gates if (g.location.path, g.location.line) == (path, line))
    return {v.target: (v.verdict.value, v.reason) for v in gate.verdicts}


def test_shared_loader_files_are_not_the_gates_sources(result):
    verdicts = _verdicts(result, "sg/kernels/ops/elementwise.py", 22)
    assert {t: v for t, (v, _) in verdicts.items()} == {"sm_80": "POLICY", "sm_89": "POLICY", "sm_90a": "POLICY"}
    assert not any("compatible_wrapper" in reason for _, reason in verdicts.values())
    assert ("sg/kernels/ops/elementwise.py", 22, "AL101") in {(f.location.path, f.location.line, f.rule) for f in result.findings}


def test_capability_predicate_over_header_only_unit(result):
    verdicts = _verdicts(result, "sg/kernels/ops/kvcache.py", 26)
    assert {t: v for t, (v, _) in verdicts.items()} == {"sm_80": "GENUINE", "sm_89": "GENUINE"}
    assert "cp.async.bulk" in verdicts["sm_80"][1]


def test_project_arch_macro_is_the_targets_number(result):
    # -DSGL_CUDA_ARCH={major * 100 + minor * 10}: on sm_80 the bulk copy under `SGL_CUDA_ARCH >= 900`
    # is compiled out, so the gate is policy rather than undecidable.
    verdicts = _verdicts(result, "sg/kernels/ops/elementwise.py", 35)
    assert {t: v for t, (v, _) in verdicts.items()} == {"sm_80": "POLICY", "sm_89": "POLICY"}


def test_arch_formula_is_recognised_only_when_it_computes_cuda_arch():
    from archlint.gates.detect import _is_cuda_arch_formula
    from archlint.model.python import PyExpr

    def name(text):
        return PyExpr("name", text)

    def num(value):
        return PyExpr("int", str(value), value)

    good = PyExpr("binop", "+", None, (PyExpr("binop", "*", None, (name("self.major"), num(100))),
                                       PyExpr("binop", "*", None, (name("self.minor"), num(10)))))
    assert _is_cuda_arch_formula(good)
    assert not _is_cuda_arch_formula(PyExpr("binop", "*", None, (name("self.major"), num(10))))


def test_early_exit_in_the_spec_function_guards_the_sources_named_after_it(result):
    verdicts = _verdicts(result, "sg/kernels/ops/gemm.py", 9)
    assert set(verdicts) == {"sm_80", "sm_89", "sm_100a", "sm_103a", "sm_110a", "sm_120a", "sm_121a"}
    assert all(v == "GENUINE" for v, _ in verdicts.values())
    assert "wgmma.fence" in verdicts["sm_120a"][1]


def test_device_function_called_only_under_a_false_condition_is_not_compiled(result):
    verdicts = _verdicts(result, "sg/kernels/ops/kvcache.py", 54)
    assert {t: v for t, (v, _) in verdicts.items()} == {"sm_80": "EMPTY", "sm_89": "EMPTY"}


def test_a_macro_whose_every_definition_agrees_is_decided_under_an_undecided_guard(result):
    """SGLang's sgl_kernel/utils.cuh defines SGL_ARCH_HOPPER_OR_GREATER under `#if !defined(USE_ROCM)`
    as `SGL_CUDA_ARCH >= 900`, else `0`: 0 on sm_80 either way, so the kernel that calls the bulk copy
    only under it compiles empty (nvcc 13.0 builds SGLang 0.5.23's hicache_tma.cuh empty on sm_80 and
    sm_89)."""
    verdicts = _verdicts(result, "sg/kernels/ops/kvcache.py", 42)
    assert {t: v for t, (v, _) in verdicts.items()} == {"sm_80": "EMPTY", "sm_89": "EMPTY"}
    assert "`SGL_ARCH_HOPPER_OR_GREATER` is false for sm_80" in verdicts["sm_80"][1]


def test_blocker_reached_only_through_an_undecided_call_is_possible_not_genuine(result):
    verdicts = _verdicts(result, "sg/kernels/ops/kvcache.py", 66)
    assert {t: v for t, (v, _) in verdicts.items()} == {"sm_80": "UNKNOWN", "sm_89": "UNKNOWN"}
    assert "possible blocker" in verdicts["sm_80"][1]
