"""`static_assert`s on constants whose value depends on the target (SGLang's vector width limit).

nvcc 13.0 on fixtures/gate-arch-constant: norm_scale_shift.cu fails on sm_80 and sm_89 with
"static assertion failed" and builds for sm_100a and sm_120a; norm.cu builds everywhere.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from archlint.engine import scan
from archlint.extract.cuda.asserts import arch_constants, static_asserts
from archlint.lang.cpp.directives import scan_directives
from archlint.model.scan import ScanOptions

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "gate-arch-constant"


@lru_cache(maxsize=1)
def _verdicts():
    result = scan(ScanOptions(paths=(str(FIXTURE),), targets=("sm_80", "sm_89", "sm_100a", "sm_120a"),
                              use_cache=False, jobs=1))
    return {(g.location.path, g.location.line): {v.target: v for v in g.verdicts} for g in result.gates}


def test_an_assertion_on_a_constant_the_target_changes_is_a_possible_blocker():
    verdict = _verdicts()[("kd/jit/norm.py", 8)]["sm_89"]
    assert verdict.verdict == "UNKNOWN"
    assert "`kMaxVecBytes`" in verdict.reason and "16 for sm_89 and 32 on the admitted builds" in verdict.reason
    assert any(hop.location.path == "kd/include/kd/vec.cuh" and hop.location.line == 18 for hop in verdict.evidence)


def test_an_assertion_in_a_template_the_unit_does_not_use_is_not_compiled():
    assert {v.verdict for v in _verdicts()[("kd/jit/norm.py", 15)].values()} == {"POLICY"}


def test_constants_and_assertions_are_read_with_their_names():
    structure = scan_directives("v.cuh", b'''
inline constexpr std::size_t kMaxVecBytes = ARCH_BLACKWELL ? 32 : 16;
constexpr int kWarps = 4;
template <int N> struct V { static_assert(N * 4 <= kMaxVecBytes, "too wide"); };
''')
    (constant,) = arch_constants(structure)
    assert constant.name == "kMaxVecBytes" and constant.text == "ARCH_BLACKWELL ? 32 : 16"
    (assertion,) = static_asserts(structure, lambda line: "")
    assert assertion.names == ("N", "kMaxVecBytes") and assertion.line == 4


_WIDE_UNIT = '''
#if !defined(USE_ROCM)
#define ARCH_WIDE ((SGL_CUDA_ARCH >= 1000) && (CUDA_VERSION >= 12090))
#else
#define ARCH_WIDE 0
#endif
inline constexpr int kMaxVecBytes = ARCH_WIDE ? 32 : 16;
template <int N> struct Vec { static_assert(N <= kMaxVecBytes, "too wide"); float data[N / 4]; };
__global__ void wide_kernel(float* out) { Vec<WIDTH> v; out[0] = v.data[0]; }
'''


def _wide_verdicts(tmp_path, majors: str, targets: tuple[str, ...], width: int) -> dict:
    """SGLang's shape: the width macro sits under `#if !defined(USE_ROCM)`, which no build decides, and
    is made of `SGL_CUDA_ARCH`, which the project's flag code sets to each target's number."""
    (tmp_path / "pkg" / "csrc").mkdir(parents=True)
    (tmp_path / "pkg" / "arch.py").write_text(
        "class ArchInfo:\n    def jit_flag(self):\n"
        "        return f\"-DSGL_CUDA_ARCH={self.major * 100 + self.minor * 10}\"\n")
    (tmp_path / "pkg" / "spec.py").write_text(
        "def gen_wide(ctx):\n"
        f"    return build([\"csrc/wide.cu\"], extra_cuda_cflags=ctx.get_nvcc_flags_list(supported_major_versions={majors}))\n")
    (tmp_path / "pkg" / "csrc" / "wide.cu").write_text(_WIDE_UNIT.replace("WIDTH", str(width)))
    (gate,) = scan(ScanOptions(paths=(str(tmp_path),), targets=targets, use_cache=False, jobs=1)).gates
    return {v.target: v for v in gate.verdicts}


def test_a_macro_no_build_decides_is_compared_the_same_way_on_every_build(tmp_path):
    """Passed or not, USE_ROCM is the same on every build: 16 on sm_89 against 32 on sm_100a; 32 on
    sm_120a as on sm_100a."""
    verdicts = _wide_verdicts(tmp_path, "[10]", ("sm_89", "sm_100a", "sm_120a"), width=32)
    assert verdicts["sm_89"].verdict == "UNKNOWN" and "`kMaxVecBytes`" in verdicts["sm_89"].reason
    assert verdicts["sm_120a"].verdict == "POLICY"


def test_a_value_one_admitted_build_has_is_no_blocker(tmp_path):
    """A 16-byte vector, admitted on 9.0 where the limit is 16, as on sm_89: the assertion that holds
    there holds here."""
    verdicts = _wide_verdicts(tmp_path, "[9, 10]", ("sm_89", "sm_90a", "sm_100a"), width=16)
    assert verdicts["sm_89"].verdict == "POLICY"


def test_the_names_an_initializer_spells_are_read_through_every_operator():
    from archlint.judge.asserts import _expr_names
    from archlint.lang.cpp.expr import parse_condition

    expr = parse_condition("defined(ARCH_WIDE) && (SGL_CUDA_ARCH >= 1000 ? kWide : VEC_BYTES(kNarrow))")
    assert set(_expr_names(expr)) >= {"ARCH_WIDE", "SGL_CUDA_ARCH", "kWide", "VEC_BYTES"}
