"""Kernels and traps in the shapes that hide them: a unit that only includes another `.cu`, a
`__brkpt()`, a trap behind a function-like macro, and an `#else` of a feature macro that an arch
test defines (fixtures/gate-hidden-traps). A gate over such code is POLICY only where the kernel
builds with its body; where the body is the trap branch it is EMPTY ("only traps")."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from click.testing import CliRunner

from archlint.cli.commands import cli
from archlint.engine import scan
from archlint.extract.cuda.facts import extract_cuda
from archlint.lang.cpp.traps import false_arguments, trap_macro
from archlint.link.cuda import build_index
from archlint.model.cuda import BodyLine
from archlint.model.findings import EvidenceKind
from archlint.model.scan import ScanOptions

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "gate-hidden-traps"
QUANT = "flashinfer/jit/quant.py"
CSRC = "flashinfer/data/csrc"


@lru_cache(maxsize=1)
def _scan():
    return scan(ScanOptions(paths=(str(FIXTURE),), use_cache=False, jobs=1))


def _verdicts(line: int):
    gate = next(g for g in _scan().gates if g.location.path == QUANT and g.location.line == line)
    return {v.target: v for v in gate.verdicts}


def _rules(line: int) -> set[str]:
    return {f.rule for f in _scan().findings if f.location.path == QUANT and f.location.line == line}


def _said(verdict, kind: EvidenceKind):
    return next(hop for hop in verdict.evidence if hop.kind is kind)


def test_a_unit_that_only_includes_a_source_compiles_its_kernels():
    """fp8_quant_sm89.cu is `#include "fp8_quant.cu"`: the included host launcher instantiates the
    template kernel, so the unit has a kernel (POLICY where the body builds, not UNKNOWN)."""
    verdicts = _verdicts(10)
    assert verdicts["sm_89"].verdict == "POLICY" and verdicts["sm_110a"].verdict == "POLICY"
    assert "no kernel" not in verdicts["sm_89"].reason


def test_else_of_a_feature_macro_defined_under_an_arch_test_is_the_trap_branch():
    """`#ifdef FLASHINFER_FP8_ENABLED ... #else FLASHINFER_DEVICE_ASSERT(false)`, the macro defined
    under `__CUDA_ARCH__ >= 890`: built for sm_80 the kernel only traps."""
    sm80 = _verdicts(10)["sm_80"]
    assert sm80.verdict == "EMPTY"
    assert "kernel `per_token_fp8_quant_kernel` (line 6) only traps for sm_80" in sm80.reason
    assert "`defined(FLASHINFER_FP8_ENABLED)` is false for sm_80" in sm80.reason
    hop = _said(sm80, EvidenceKind.TRAP_KERNEL)
    assert (hop.location.path, hop.location.line) == (f"{CSRC}/fp8_quant.cu", 7)
    includes = _said(sm80, EvidenceKind.INCLUDE)
    assert (includes.location.path, includes.location.line) == (f"{CSRC}/fp8_quant_sm89.cu", 1)
    assert _rules(10) == {"AL101", "AL103"}


def test_brkpt_is_a_trap():
    verdicts = _verdicts(17)
    for target in ("sm_80", "sm_89"):
        assert verdicts[target].verdict == "EMPTY"
        assert f"kernel `mla_decode_kernel` (line 3) only traps for {target}" in verdicts[target].reason
        hop = _said(verdicts[target], EvidenceKind.TRAP_KERNEL)
        assert (hop.location.path, hop.location.line) == (f"{CSRC}/mla_sm90.cu", 4)
    assert {verdicts[t].verdict for t in ("sm_110a", "sm_120a", "sm_121a")} == {"POLICY"}
    assert _rules(17) == {"AL101", "AL103"}


def test_an_arch_fallback_that_traps_through_a_macro_makes_its_callers_trap():
    verdicts = _verdicts(24)
    for target in ("sm_80", "sm_89", "sm_90a"):
        assert verdicts[target].verdict == "EMPTY"
        assert f"`fp32_vec_to_e2m1` (line 7) traps for {target}" in verdicts[target].reason
        hop = _said(verdicts[target], EvidenceKind.TRAP_CALL)
        assert (hop.location.path, hop.location.line) == (f"{CSRC}/nvfp4_quant.cu", 14)
    assert verdicts["sm_110a"].verdict == "POLICY"
    assert _rules(24) == {"AL101", "AL103"}


def test_sarif_and_exit_code(tmp_path):
    output = tmp_path / "out.sarif"
    result = CliRunner().invoke(cli, ["scan", str(FIXTURE), "--format", "sarif", "-o", str(output), "--no-cache",
                                      "--select", "AL103"])
    assert result.exit_code == 0  # AL103 is a note
    sarif = json.loads(output.read_text())
    results = [r for r in sarif["runs"][0]["results"] if r["ruleId"] == "AL103"]
    lines = {r["locations"][0]["physicalLocation"]["region"]["startLine"] for r in results
             if r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].endswith(QUANT)}
    assert lines == {10, 17, 24}


def test_trap_macros_are_told_from_their_bodies():
    assert trap_macro("__trap()") is True
    assert trap_macro('asm volatile("trap;")') is True
    assert trap_macro("__brkpt()") is True
    assert trap_macro("do { if (!(cond)) { __trap(); } } while (0)") is False
    assert trap_macro("((cond) ? (void)0 : __trap())") is False
    assert trap_macro("printf(\"%d\", x)") is None
    assert false_arguments(b"false") and false_arguments(b"0, \"msg\"") and not false_arguments(b"n > 0")


def _index(files: dict[str, bytes]):
    return build_index([extract_cuda(path, data) for path, data in files.items()])


def test_a_macro_call_traps_only_as_its_definition_says():
    """`X_ASSERT(false)` traps; `X_ASSERT(n > 0)` is a check, not a trap; an unconditional macro
    traps whatever its argument; a wrapper of a trapping macro traps for `false`."""
    index = _index({"a.cuh": b"#define X_ASSERT(c) do { if (!(c)) __trap(); } while (0)\n"
                             b"#define X_UNREACHABLE(msg) __trap()\n"
                             b"#define Y_CHECK(c) X_ASSERT(c)\n"})
    assert index.traps(BodyLine(0, False, "X_ASSERT", True))
    assert not index.traps(BodyLine(0, False, "X_ASSERT", False))
    assert index.traps(BodyLine(0, False, "X_UNREACHABLE", False))
    assert index.traps(BodyLine(0, False, "Y_CHECK", True)) and not index.traps(BodyLine(0, False, "Y_CHECK", False))
    assert not index.traps(BodyLine(0, False, "do_work", True))


def test_device_function_keeps_the_macro_call_of_its_fallback():
    data = (b"__device__ int f(int x) {\n#if __CUDA_ARCH__ >= 1000\n  return x + 1;\n#else\n"
            b"  X_UNREACHABLE(\"needs sm_100\");\n  return 0;\n#endif\n}\n")
    function = extract_cuda("f.cu", data).functions[0]
    calls = [line for line in function.body if line.call]
    assert [(line.call, line.false_arg) for line in calls] == [("X_UNREACHABLE", False)]


def test_a_gate_that_admits_a_target_where_its_only_kernel_traps_is_al105():
    """[8] admits sm_80, where the unit's only kernel compiles to its trap, and sm_89, where it has
    its body: the gate lets a crash through on sm_80."""
    found = [f for f in _scan().findings if f.rule == "AL105" and f.location.path == QUANT]
    assert [(f.location.line, f.targets) for f in found] == [(32, ("sm_80",))]
    assert "admits sm_80, but kernel `per_token_fp8_quant_kernel`, the only kernel it guards, only traps there" in found[0].message
    said = found[0].evidence[-1]
    assert said.kind is EvidenceKind.TRAP_KERNEL and (said.location.path, said.location.line) == (f"{CSRC}/fp8_quant.cu", 7)
    assert _rules(32) == {"AL101", "AL105"}


def test_al105_is_an_error_exit(tmp_path):
    result = CliRunner().invoke(cli, ["scan", str(FIXTURE), "--no-cache", "--select", "AL105"])
    assert result.exit_code == 1 and "AL105" in result.output


def test_cutes_invalid_control_path_always_traps():
    """`assert(0 && x); printf(x); __brkpt()`: the `&&` is inside an assertion that always fails."""
    assert trap_macro('assert(0 && x); printf(x); __brkpt()') is True
    assert trap_macro('assert(false && "unreachable")') is True
    assert trap_macro("assert(x && y)") is None
    assert trap_macro('do { if (!(c)) assert(0 && "m"); } while (0)') is False
