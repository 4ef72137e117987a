"""Declaration reach: a specialisation or template no compiled code names is not compiled.

Shapes from CUTLASS: one `CollectiveBuilder` specialisation per arch tag, each naming its own MMA
atoms; a kernel that names `arch::Sm100` compiles only the SM100 one. nvcc 13.0 (PTX of
fixtures/gate-cutlass-builders): gemm_sm100.cu keeps its tcgen05 and no trap on sm_110a, traps on
sm_120a; gemm_sm120.cu traps on sm_100a and sm_110a; tma_prefetch.cu builds with no trap on sm_80,
sm_100a, sm_110a and sm_120a; tma_2sm_load.cu traps on sm_80 and sm_120a, not on sm_100a or sm_110a.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from archlint.engine import scan
from archlint.extract.cuda.facts import extract_cuda
from archlint.lang.cpp.declarations import read_declarations
from archlint.lang.cpp.directives import scan_directives
from archlint.model.scan import ScanOptions

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "gate-cutlass-builders"
TARGETS = ("sm_80", "sm_100a", "sm_110a", "sm_120a")


@lru_cache(maxsize=2)
def _verdicts(targets: tuple[str, ...] = TARGETS):
    result = scan(ScanOptions(paths=(str(FIXTURE),), targets=targets, use_cache=False, jobs=1))
    return {(g.location.path, g.location.line): {v.target: v for v in g.verdicts} for g in result.gates}


def _declarations(source: bytes):
    structure = scan_directives("x.hpp", source)
    return read_declarations(structure.masked, structure.line_starts)


def test_a_builder_for_another_arch_tag_is_not_compiled():
    """The [10] gate's unit names only `arch::Sm100`: the SM120 builder and its atoms stay out."""
    verdicts = _verdicts()[("gm/jit/gemm.py", 8)]
    assert verdicts["sm_110a"].verdict == "POLICY"


def test_the_arch_tag_a_unit_builds_with_decides_and_the_chosen_builders_atoms_still_count():
    sm100 = _verdicts()[("gm/jit/gemm.py", 8)]
    assert sm100["sm_120a"].verdict == "GENUINE"
    assert "`Sm100`" in sm100["sm_120a"].reason and "[cutlass-arch-sm100]" in sm100["sm_120a"].reason
    hop = sm100["sm_120a"].evidence[-1]
    assert (hop.location.path, hop.location.line) == ("gm/csrc/gemm_sm100.cu", 3)
    sm120 = _verdicts()[("gm/jit/gemm.py", 15)]
    assert sm120["sm_110a"].verdict == "GENUINE" and "`Sm120`" in sm120["sm_110a"].reason


def test_an_arch_tag_in_a_macro_the_unit_invokes_is_certain_and_one_for_simt_is_not():
    launch = _verdicts()[("gm/jit/gemm.py", 57)]["sm_120a"]
    assert launch.verdict == "GENUINE"
    assert "in macro `INSTANTIATE_GEMM_LAUNCHER` (which the unit invokes)" in launch.reason
    hop = launch.evidence[-1]
    assert (hop.location.path, hop.location.line) == ("gm/include/mini/launchers/gemm_launcher_sm100.h", 17)
    simt = _verdicts()[("gm/jit/gemm.py", 64)]["sm_120a"]
    assert simt.verdict != "GENUINE"
    # the SIMT macro's `Sm100` (line 30, no tensor-op class beside it) is no construct at all
    header = FIXTURE / "gm" / "include" / "mini" / "launchers" / "gemm_launcher_sm100.h"
    tags = [(c.name, c.line) for c in extract_cuda("launcher.h", header.read_bytes()).constructs]
    assert tags == [("Sm100", 17)]


def test_an_arch_tag_in_a_launcher_template_the_unit_instantiates_is_certain():
    bf16 = _verdicts()[("gm/jit/gemm.py", 71)]["sm_120a"]
    assert bf16.verdict == "GENUINE"
    assert "`Sm100` in `bf16GemmLauncherSm100` (which the unit instantiates)" in bf16.reason
    hop = bf16.evidence[-1]
    assert (hop.location.path, hop.location.line) == ("gm/include/mini/launchers/bf16_launcher_sm100.h", 12)


def test_an_explicit_instantiation_compiles_what_it_names():
    verdicts = _verdicts()[("gm/jit/gemm.py", 22)]
    assert verdicts["sm_110a"].verdict == "UNKNOWN"
    assert "SM120_16x8x32_TN" in verdicts["sm_110a"].reason


def test_specialisation_keys_come_from_arguments_and_enable_if_tests():
    found = _declarations(b'''
namespace ns {
template <class ArchTag, class Sched>
struct [[deprecated("old")]] Builder<ArchTag, arch::OpClassTensorOp, Int<1>{},
    cute::enable_if_t<cute::is_same_v<ArchTag, arch::Sm103> &&
                      (cute::is_base_of_v<KernelScheduleSm103, Sched> || cute::is_same_v<KernelScheduleAuto, Sched>) &&
                      not cute::is_same_v<Sched, KernelPingpong>>> {
  using X = int;
};
}
''')
    (builder,) = found.items
    assert builder.names == ("Builder",)
    assert builder.keys == (("arch",), ("OpClassTensorOp",), ("Sm103",), ("KernelScheduleSm103", "KernelScheduleAuto"))


def test_a_disjunction_with_an_untested_branch_adds_no_key():
    found = _declarations(b"template <class A> struct B<A, std::enable_if_t<std::is_same_v<A, Sm90> || (sizeof(A) > 2)>> {};\n")
    assert found.items[0].keys == ()


def test_tests_and_patterns_name_nothing():
    """`is_same_v<T, arch::Sm120>` compares; `struct IsX<MainloopSm120<...>>` matches: neither instantiates."""
    found = _declarations(b'''
template <class P>
struct Kernel {
  static constexpr bool sm120 = cute::is_same_v<typename P::Arch, arch::Sm120>;
  template <class T> struct IsBlockScaled : false_type {};
  template <int S> struct IsBlockScaled<MainloopSm120BlockScaled<S>> : true_type {};
};
''')
    uses = found.items[0].uses
    assert "Sm120" not in uses and "MainloopSm120BlockScaled" not in uses and "IsBlockScaled" in uses


def test_code_outside_definitions_is_always_compiled():
    found = _declarations(b"template struct Builder<arch::Sm120>;\nusing Alias = Builder<arch::Sm90>;\n")
    assert "Sm120" in found.loose and "Sm90" not in found.loose
    assert found.items[0].names == ("Alias",)


def test_a_file_whose_braces_do_not_balance_counts_as_compiled_whole():
    found = _declarations(b"template <class T> struct A { void f() { SM120_X x; }\n")
    assert not found.read and found.items == () and "SM120_X" in found.loose


def test_a_macro_before_a_definition_leaves_it_compiled():
    """`CUTE_REGISTER(Sm120)` may expand to anything: what follows it is not filed under the macro's name."""
    found = _declarations(b"CUTE_REGISTER(Sm120)\ntemplate <class T> struct Builder<T, SM120_X> { using A = SM120_Y; };\n")
    assert found.items == () and "SM120_Y" in found.loose


def test_a_type_whose_name_holds_or_is_still_a_key():
    found = _declarations(b"template <class A> struct B<A, std::enable_if_t<std::is_same_v<A, OpClassTensorOp>>> {};\n")
    assert found.items[0].keys == (("OpClassTensorOp",),)


def test_a_negated_group_adds_no_key():
    """`not (is_same_v<A, Sm120>)` holds for every other tag: it needs no name."""
    found = _declarations(b"template <class A> struct B<A, std::enable_if_t<not (std::is_same_v<A, arch::Sm120>)>> {};\n")
    assert found.items[0].keys == ()


def test_a_using_declaration_compiles_nothing_until_its_name_is_used():
    found = _declarations(b"namespace mini {\nusing SM100::TMEM::LOAD::SM100_TMEM_LOAD_16dp256b1x;\nusing namespace detail;\n}\n")
    assert [item.names for item in found.items] == [("SM100_TMEM_LOAD_16dp256b1x",)]
    assert "SM100_TMEM_LOAD_16dp256b1x" not in found.loose and "detail" in found.loose


def test_a_unit_that_only_includes_the_atoms_can_be_widened():
    """fmha_reduction.cu includes the SM100 copy atoms (re-exported by a using-declaration) and uses
    none: the gate is policy on every target, sm_120a included."""
    verdicts = _verdicts()[("gm/jit/gemm.py", 29)]
    assert {target: v.verdict for target, v in verdicts.items()} == {t: "POLICY" for t in ("sm_80", "sm_110a", "sm_120a")}


def test_a_kernel_that_loads_through_the_re_exported_atom_still_counts_it():
    verdicts = _verdicts()[("gm/jit/gemm.py", 36)]
    assert verdicts["sm_110a"].verdict == "POLICY"
    assert verdicts["sm_120a"].verdict == "UNKNOWN" and "SM100_TMEM_LOAD_16dp256b1x" in verdicts["sm_120a"].reason


def test_an_overload_for_another_atoms_traits_is_not_compiled():
    """`copy(Copy_Traits<SM100_TMA_2SM_LOAD> const&, ...)` is chosen only where something names the atom."""
    found = _declarations(b"template <class... Args, class T, class L>\nvoid copy(Copy_Traits<cute::SM100_TMA_2SM_LOAD, Args...> const& t, Tensor<T, L>& dst) {}\n")
    assert found.items[0].names == ("copy",)
    assert found.items[0].keys == (("cute",), ("SM100_TMA_2SM_LOAD",))


def test_a_nested_tag_needs_its_enclosing_atom():
    found = _declarations(b"template <class N>\nstruct Copy_Traits<SM100_TMA_LOAD_2D_GATHER4_OP::PREFETCH, N> {};\n")
    assert found.items[0].keys == (("SM100_TMA_LOAD_2D_GATHER4_OP",), ("PREFETCH",))


def test_a_base_class_test_names_nothing():
    found = _declarations(b"template <class Op>\nconstexpr bool is_tma() { return cute::is_base_of_v<cute::SM100_TMA_2SM_LOAD, Op>; }\n")
    assert "SM100_TMA_2SM_LOAD" not in found.items[0].uses


def test_a_unit_that_copies_through_its_own_traits_can_be_widened():
    """tma_prefetch.cu's headers hold the SM100 TMA atoms, an overload and traits for them and a test
    against them; it copies through its own traits: POLICY everywhere (nvcc 13.0 builds it for
    sm_120a with no trap)."""
    verdicts = _verdicts()[("gm/jit/gemm.py", 43)]
    assert {target: v.verdict for target, v in verdicts.items()} == {t: "POLICY" for t in ("sm_80", "sm_110a", "sm_120a")}


def test_a_unit_that_loads_through_the_2sm_atom_still_counts_it():
    verdicts = _verdicts()[("gm/jit/gemm.py", 50)]
    assert verdicts["sm_110a"].verdict == "POLICY"
    assert verdicts["sm_120a"].verdict == "UNKNOWN" and "SM100_TMA_2SM_LOAD" in verdicts["sm_120a"].reason


def test_an_atom_a_surely_instantiated_class_names_is_certain_and_one_in_an_uncalled_member_is_not():
    attention = _verdicts()[("gm/jit/gemm.py", 78)]
    verdict = attention["sm_120a"]
    assert verdict.verdict == "GENUINE"
    assert "`SM100_MMA_F16BF16_SS` in `AttentionMainloopSm100` (which the unit instantiates)" in verdict.reason
    assert "more)" not in verdict.reason  # the 2-SM load in `load_pair`, which nothing calls, is no blocker
    hop = verdict.evidence[-1]
    assert (hop.location.path, hop.location.line) == ("gm/include/mini/attention/attention_sm100.cuh", 11)
    assert attention["sm_110a"].verdict == "POLICY"


def test_an_atom_every_alternative_of_a_selector_chain_needs_is_certain_and_one_with_a_fallback_is_not():
    every = _verdicts()[("gm/jit/gemm.py", 85)]["sm_120a"]
    assert every.verdict == "GENUINE"
    assert "in `ss_op_selector` (which the unit instantiates)" in every.reason
    assert "every alternative needs the same" in every.reason
    hop = every.evidence[-1]
    assert (hop.location.path, hop.location.line) == ("gm/include/mini/atom/mma_sm90_gmma.hpp", 38)
    fallback = _verdicts()[("gm/jit/gemm.py", 92)]["sm_120a"]
    assert fallback.verdict == "UNKNOWN" and "ss_op_selector_or_fma" in fallback.reason


def test_the_sm90_tag_beside_a_tensor_op_mainloop_builder_is_certain_when_the_other_branch_only_errors():
    """FlashInfer's group GEMM: `if constexpr (fp8 and row-major) FLASHINFER_ERROR(...); else` builds
    a CUTLASS SM90 mainloop. Whichever instantiation does the work needs GMMA (sm_90a)."""
    grouped = _verdicts()[("gm/jit/gemm.py", 99)]
    for target in ("sm_80", "sm_120a"):
        verdict = grouped[target]
        assert verdict.verdict == "GENUINE"
        assert "`Sm90` in `CutlassSegmentGEMMSM90Run` (which the unit instantiates)" in verdict.reason
        assert "[cutlass-arch-sm90-mainloop]" in verdict.reason
        hop = verdict.evidence[-1]
        assert (hop.location.path, hop.location.line) == ("gm/include/mini/gemm/group_gemm_sm90.cuh", 35)


def test_the_sm90_tag_of_an_epilogue_beside_a_simt_mainloop_needs_nothing():
    simt = _verdicts()[("gm/jit/gemm.py", 106)]["sm_120a"]
    assert simt.verdict != "GENUINE"
    assert "cutlass-arch-sm90-mainloop" not in simt.reason


def test_traits_every_head_dimension_branch_names_are_instantiated_and_their_selector_atom_is_certain():
    """FA3's dispatcher: one traits choice per head dimension, an error code for mismatched dims.
    Whichever branch the instantiation takes names `AttentionKernelTraits`, whose MMA comes from
    the GMMA selector."""
    prefill = _verdicts()[("gm/jit/gemm.py", 113)]
    for target in ("sm_80", "sm_120a"):
        verdict = prefill[target]
        assert verdict.verdict == "GENUINE"
        assert "in `ss_op_selector` (which the unit instantiates)" in verdict.reason
        hop = verdict.evidence[-1]
        assert (hop.location.path, hop.location.line) == ("gm/include/mini/atom/mma_sm90_gmma.hpp", 38)


def test_explicit_instantiations_are_read_and_extern_ones_are_not():
    declarations = _declarations(b"""namespace flashinfer {
template cudaError_t BatchPrefillWithPagedKVCacheDispatched
    <128, 128, PagedParams>(PagedParams& params, bool enable_pdl, cudaStream_t stream);
extern template void run_tactic<Tactic1Config>(void* out);
template struct Holder<float>;
template <typename T> void later(T) {}
}
""")
    assert {"BatchPrefillWithPagedKVCacheDispatched", "PagedParams", "Holder"} <= declarations.instantiated
    assert "run_tactic" not in declarations.instantiated and "later" not in declarations.instantiated


def test_a_member_that_shares_a_templates_name_does_not_reach_it():
    """gemm_sm120_adapter.cu builds the SM120 mainloop; its kernel keeps it as a member `Mma`, which the
    adapter reads as `GemmKernel::Mma`. The warp-level `arch::Mma` specialisations (tagged `Sm90`, whose
    builder picks GMMA atoms) are not what those names find: nvcc 13.0 builds the unit for sm_121a with
    its fma and no trap, and compiles no wgmma."""
    adapter = _verdicts(TARGETS + ("sm_121a",))[("gm/jit/gemm.py", 118)]
    assert adapter["sm_121a"].verdict == "POLICY"
    assert "GMMA" not in adapter["sm_121a"].reason
    # the atoms the unit does name still count where the target lacks them
    assert adapter["sm_110a"].verdict == "GENUINE" and "`Sm120`" in adapter["sm_110a"].reason


def test_member_names_are_told_from_namespace_scope_names():
    found = _declarations(b'''
namespace cutlass::gemm::kernel {
template <class Mma_>
struct GemmUniversal {
  using Mma = Mma_;
  using Shape = typename Mma::Shape;
};
}
namespace cutlass::gemm::device {
template <class GemmKernel>
struct GemmUniversalAdapter {
  using ThreadblockShape = typename GemmKernel::Mma::Shape;
  using ArchMma = cutlass::arch::Mma<int>;
};
using Shape = typename Traits::Mma::Shape;
}
''')
    kernel, adapter, direct = found.items
    assert "Mma" not in kernel.uses  # only its own member alias
    # `GemmKernel::Mma` is a member of a template parameter; `arch::Mma` is left to the reach, which
    # knows whether `arch` is a namespace of the unit's files
    assert "Mma" in adapter.uses and ("Mma", "arch") in adapter.qualified
    assert not any(qualifier == "GemmKernel" for _, qualifier in adapter.qualified)
    assert ("Mma", "Traits") in direct.qualified
    assert {"cutlass", "gemm", "kernel", "device"} <= found.namespaces


def test_a_name_after_a_class_is_its_member_and_after_an_unknown_qualifier_may_be_a_namespaces():
    from archlint.judge.reach import unreached_declarations

    header = (b"struct Traits { using Mma = int; };\n"
              b"template <class T> struct Mma { using Atom = SM90_TMA_LOAD; };\n"
              b"NAMESPACE_BEGIN(nsm)\n"
              b"template <class T> struct Picker { using Atom = SM90_TMA_LOAD_2D; };\n"
              b"NAMESPACE_END(nsm)\n")
    unit = b'#include "h.h"\nvoid run() { Traits::Mma x; nsm::Picker<int> y; }\n'
    files = {"u.cu": extract_cuda("u.cu", unit), "h.h": extract_cuda("h.h", header)}
    reach = unreached_declarations(files, "u.cu", ["u.cu", "h.h"])
    assert reach.covers("h.h", 2, 30)  # `Traits::Mma` is Traits's member: the `Mma` template stays out
    # `nsm` is opened by a macro, so no file says it is a namespace: `Picker` counts as named
    assert not reach.covers("h.h", 4, 30)
