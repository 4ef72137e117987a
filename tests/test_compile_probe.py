"""The compile probe with the real nvcc on tiny fixtures, plus its PTX reader and error sorting."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from archlint.runtime.compile_probe import (
    ProbeOptions,
    ProbeResult,
    arch_traps,
    body_kind,
    classify_failure,
    find_nvcc,
    probe_unit,
    probe_units,
    ptx_entries,
    unmatched_traps,
)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "runtime-probe"
needs_nvcc = pytest.mark.skipif(find_nvcc() is None, reason="nvcc is not installed here; the compile probe runs it")


@pytest.fixture
def options(tmp_path):
    return ProbeOptions(cache_dir=str(tmp_path / "cache"), include_dirs=(str(FIXTURES / "include"),))


@needs_nvcc
def test_range_gate_without_else_builds_empty_on_sm120(options):
    result = probe_unit(FIXTURES / "empty_on_sm120.cu", "sm_120", options)
    assert result.outcome == "built-empty"
    assert [name.split("(")[0] for name in result.empty_kernels] == ["lamport_like_kernel"]
    assert result.kernels == 2 and "1 of 2 kernels" in result.message


@needs_nvcc
def test_same_unit_builds_for_hopper(options):
    assert probe_unit(FIXTURES / "empty_on_sm120.cu", "sm_90a", options).outcome == "built"


@needs_nvcc
def test_wgmma_is_an_arch_error_on_sm120a(options):
    result = probe_unit(FIXTURES / "wgmma_sm90.cu", "sm_120a", options)
    assert result.outcome == "arch-error"
    assert "Instruction 'wgmma.fence' not supported on .target 'sm_120a'" in result.message
    assert result.message.startswith("ptxas error")


@needs_nvcc
def test_plain_trap_and_header_units(options):
    results = probe_units(
        [FIXTURES / "plain.cu", FIXTURES / "trap_fallback.cu", FIXTURES / "uses_header.cu"], "sm_120", options
    )
    assert [r.outcome for r in results] == ["built", "built-trap", "built-empty"]
    assert results[1].trap_kernels[0].startswith("hopper_or_trap")
    assert results[2].empty_kernels[0].startswith("header_gated_kernel")


@needs_nvcc
def test_a_trap_where_the_admitted_build_has_the_instruction(options):
    # Alone, the sm_80 build looks like any kernel with a body; beside the sm_100a build, the trap
    # stands where that build converts.
    alone = probe_unit(FIXTURES / "helper_trap.cu", "sm_80", options)
    assert alone.outcome == "built" and [count for _, count in alone.trap_sites] == [1]
    admitted = probe_unit(FIXTURES / "helper_trap.cu", "sm_100a", options)
    assert admitted.outcome == "built" and [count for _, count in admitted.trap_sites] == [0]
    assert [name.split("(")[0] for name in arch_traps(alone, admitted)] == ["quantize_kernel"]
    checked = probe_unit(FIXTURES / "helper_trap.cu", "sm_80", ProbeOptions(
        cache_dir=str(Path(options.cache_dir) / "baseline"), baseline_target="sm_100a"))
    assert checked.outcome == "built-trap"
    assert "trap where the sm_100a build has instructions: quantize_kernel" in checked.message
    # a trap both builds hold (an error path) is not the target's doing
    assert probe_unit(FIXTURES / "plain.cu", "sm_80", replace(options, baseline_target="sm_90a")).outcome == "built"


def test_arch_traps_compares_kernels_both_builds_have():
    def built(target, sites):
        return ProbeResult("u.cu", target, "built", (), "built", 1.0, kernels=len(sites), trap_sites=sites)

    here = built("sm_80", (("k1", 2), ("k2", 1), ("only_here", 3)))
    admitted = built("sm_100a", (("k1", 0), ("k2", 1)))
    assert arch_traps(here, admitted) == ("k1",)
    assert arch_traps(here, replace(admitted, trap_sites=None)) == ()  # an older cache entry: not measured
    assert arch_traps(here, replace(admitted, outcome="arch-error")) == ()


def test_traps_in_a_kernel_no_admitted_build_names_are_not_compared():
    here = ProbeResult("u.cu", "sm_120a", "built", (), "built", 1.0, kernels=2,
                       trap_sites=(("k1(int)", 3), ("k_sm120_only(int)", 5)))
    admitted = ProbeResult("u.cu", "sm_100a", "built", (), "built", 1.0, kernels=1, trap_sites=(("k1(int)", 3),))
    assert unmatched_traps(here, [admitted]) == ("k_sm120_only(int)",)
    assert unmatched_traps(replace(here, trap_sites=(("k1(int)", 3),)), [admitted]) == ()


def test_arch_traps_matches_names_whatever_demangler_spelled_them():
    """cu++filt writes `(bool)1, (int)128` and the parameter types as declared; c++filt writes
    `true, 128` and spells the parameter types out: the same kernel either way."""
    def built(target, sites):
        return ProbeResult("u.cu", target, "built", (), "built", 1.0, kernels=len(sites), trap_sites=sites)

    cu = "void fi::Prefill<fi::Traits<(bool)1, (int)128, cutlass::half_t>, (bool)0>(T1::Params, T2::Params)"
    gnu = "void fi::Prefill<fi::Traits<true, 128, cutlass::half_t>, false>(fi::Traits<true, 128, cutlass::half_t>::Params, fi::Epi::Params)"
    assert arch_traps(built("sm_103a", ((gnu, 52),)), built("sm_90a", ((cu, 0),))) == (gnu,)
    assert arch_traps(built("sm_103a", ((gnu, 0),)), built("sm_90a", ((cu, 0),))) == ()


@needs_nvcc
def test_inconclusive_outcomes_say_why(options, tmp_path):
    torch = probe_unit(FIXTURES / "needs_torch.cu", "sm_120", options)
    assert (torch.outcome, torch.message) == ("inconclusive", "missing header torch/extension.h (add its include folder with -I)")
    toolkit = probe_unit(FIXTURES / "toolkit_error.cu", "sm_120", options)
    assert toolkit.outcome == "inconclusive" and toolkit.message.startswith("#error about the toolkit")
    no_include = probe_unit(FIXTURES / "uses_header.cu", "sm_120", ProbeOptions(cache_dir=str(tmp_path / "c2")))
    assert no_include.outcome == "inconclusive" and "gated_body.cuh" in no_include.message
    slow = probe_unit(FIXTURES / "plain.cu", "sm_120", ProbeOptions(use_cache=False, timeout_s=0.001))
    assert (slow.outcome, slow.message) == ("inconclusive", "nvcc timed out after 0.001 s")
    missing = probe_unit(FIXTURES / "plain.cu", "sm_120", ProbeOptions(use_cache=False, nvcc="/nonexistent/nvcc"))
    assert missing.outcome == "inconclusive" and missing.message.startswith("nvcc could not run")


@needs_nvcc
def test_baseline_separates_arch_errors_from_broken_builds(options):
    alone = probe_unit(FIXTURES / "static_assert_sm120.cu", "sm_120", options)
    assert alone.outcome == "inconclusive" and "not tied to the target" in alone.message
    with_base = ProbeOptions(cache_dir=options.cache_dir + "-b", baseline_target="sm_90a")
    result = probe_unit(FIXTURES / "static_assert_sm120.cu", "sm_120", with_base)
    assert result.outcome == "arch-error" and result.message.startswith("builds for sm_90a, not for sm_120")
    assert "tile does not fit" in result.message


@needs_nvcc
def test_cache_hits_and_header_changes_invalidate(tmp_path):
    tree = tmp_path / "tree"
    shutil.copytree(FIXTURES, tree)
    opts = ProbeOptions(cache_dir=str(tmp_path / "cache"), include_dirs=(str(tree / "include"),))
    first = probe_unit(tree / "uses_header.cu", "sm_120", opts)
    again = probe_unit(tree / "uses_header.cu", "sm_120", opts)
    assert (first.cached, again.cached, again.outcome) == (False, True, "built-empty")
    header = tree / "include" / "gated_body.cuh"
    header.write_text(header.read_text().replace(" && (__CUDA_ARCH__ < 1200)", ""))
    widened = probe_unit(tree / "uses_header.cu", "sm_120", opts)
    assert (widened.cached, widened.outcome) == (False, "built")


@needs_nvcc
def test_a_stored_build_without_trap_counts_is_done_again(tmp_path):
    from archlint.runtime.compile_probe import cache_key, cache_store

    opts = ProbeOptions(cache_dir=str(tmp_path / "cache"))
    unit = (FIXTURES / "helper_trap.cu").resolve()
    stale = ProbeResult(str(unit), "sm_80", "built", (), "built; 1 kernel, none empty", 1.0, kernels=1)
    cache_store(tmp_path / "cache", cache_key(unit, "sm_80", opts, find_nvcc()), stale, [str(unit)])
    result = probe_unit(unit, "sm_80", opts)
    assert result.cached is False and [count for _, count in result.trap_sites] == [1]
    assert probe_unit(unit, "sm_80", opts).cached is True


@needs_nvcc
def test_cache_dir_from_environment_and_tree_untouched(tmp_path, monkeypatch):
    monkeypatch.setenv("ARCHLINT_CACHE_DIR", str(tmp_path / "envcache"))
    before = sorted(p.name for p in FIXTURES.rglob("*"))
    probe_unit(FIXTURES / "plain.cu", "sm_120", ProbeOptions())
    assert sorted(p.name for p in FIXTURES.rglob("*")) == before
    assert list((tmp_path / "envcache" / "probe").glob("*.json"))


# ---------------------------------------------------------------- PTX reading and error sorting, no nvcc

PTX = """
.version 9.0
.target sm_120
.visible .entry _Z5emptyPi(
	.param .u64 .ptr .align 1 _Z5emptyPi_param_0
)
{
	ret;
}
.visible .entry trapper(
	.param .u32 trapper_param_0
)
.maxntid 128, 1, 1
{
	// begin inline asm
	trap;
	// end inline asm
	ret;
}
.visible .entry worker()
{
	.reg .b32 %r<2>;
	mov.u32 %r1, %tid.x;
$L__BB2_1:
	ret;
}
.visible .entry reporter(
	.param .u64 reporter_param_0
)
{
	.local .align 8 .b8 	__local_depot0[8];
	.reg .b64 	%SP;
	.reg .b64 	%SPL;
	.reg .pred 	%p<2>;
	.reg .b32 	%r<6>;
	.reg .b64 	%rd<5>;
	mov.u64 	%SPL, __local_depot0;
	cvta.local.u64 	%SP, %SPL;
	mov.u32 	%r1, %ctaid.x;
	mov.u32 	%r2, %tid.x;
	or.b32  	%r3, %r2, %r1;
	setp.ne.s32 	%p1, %r3, 0;
	@%p1 bra 	$L__BB3_2;
	add.u64 	%rd1, %SP, 0;
	add.u64 	%rd2, %SPL, 0;
	st.local.u32 	[%rd2], %r4;
	mov.u64 	%rd3, $str;
	cvta.global.u64 	%rd4, %rd3;
	{ // callseq 0, 0
	.param .b64 param0;
	st.param.b64 	[param0+0], %rd4;
	.param .b64 param1;
	st.param.b64 	[param1+0], %rd1;
	.param .b32 retval0;
	call.uni (retval0),
	vprintf,
	(
	param0,
	param1
	);
	ld.param.b32 	%r5, [retval0+0];
	} // callseq 0
	// begin inline asm
	trap;
	// end inline asm
$L__BB3_2:
	ret;
}
.visible .entry invalid_path(
	.param .align 128 .b8 invalid_path_param_0[896]
)
{
	.reg .b32 	%r<2>;
	.reg .b64 	%rd<9>;
	mov.u64 	%rd1, $str$17;
	cvta.global.u64 	%rd2, %rd1;
	{ // callseq 0, 0
	.reg .b32 temp_param_reg;
	.param .b64 param0;
	st.param.b64 	[param0+0], %rd2;
	.param .b32 param2;
	st.param.b32 	[param2+0], 280;
	call.uni
	__assertfail,
	(
	param0,
	param2
	);
	} // callseq 0
	mov.u64 	%rd7, $str$19;
	cvta.global.u64 	%rd8, %rd7;
	{ // callseq 1, 0
	.param .b64 param0;
	st.param.b64 	[param0+0], %rd8;
	.param .b32 retval0;
	call.uni (retval0),
	vprintf,
	(
	param0
	);
	ld.param.b32 	%r1, [retval0+0];
	} // callseq 1
	// begin inline asm
	brkpt;
	// end inline asm
	ret;
}
.visible .entry checker(
	.param .u64 checker_param_0
)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<3>;
	.reg .b64 	%rd<3>;
	ld.param.u64 	%rd1, [checker_param_0];
	mov.u32 	%r1, %tid.x;
	setp.gt.u32 	%p1, %r1, 31;
	@%p1 bra 	$L__BB4_2;
	cvta.to.global.u64 	%rd2, %rd1;
	st.global.u32 	[%rd2], %r1;
	ret;
$L__BB4_2:
	trap;
}
"""


def test_ptx_entries_and_body_kinds():
    kinds = {name: body_kind(body) for name, body in ptx_entries(PTX).items()}
    # A kernel that prints a message and traps writes nothing anyone reads: a trap; one that stores
    # its result on some paths and traps on others computes something. CuTe's CUTE_INVALID_CONTROL_PATH
    # without NDEBUG (a CUTLASS kernel's body on a target it is not built for) fails an assert, prints
    # and breaks: a trap too.
    assert kinds == {"_Z5emptyPi": "empty", "trapper": "trap", "worker": "code", "reporter": "trap",
                     "invalid_path": "trap", "checker": "code"}


@given(
    st.lists(st.sampled_from(["", ".reg .b32 %r<4>;", "$L__BB0_1:", "// note", "\n", "\t"]), max_size=6),
    st.sampled_from(["ret;", "exit;", ""]),
)
def test_bodies_of_declarations_labels_and_ret_are_empty(noise, end):
    assert body_kind("\n".join(noise) + "\n" + end) == "empty"


@pytest.mark.parametrize(
    "stderr,outcome,fragment",
    [
        ("ptxas /tmp/s/x.ptx, line 25; error   : Instruction 'wgmma.fence' not supported on .target 'sm_120a'\n",
         "arch-error", "ptxas error (PTX line 25): Instruction 'wgmma.fence'"),
        ("x.cu(3): error: __cluster_dims__ is not supported for this GPU architecture\n", "arch-error", "__cluster_dims__"),
        ('x.cu(1): catastrophic error: cannot open source file "tvm/ffi/function.h"\n', "inconclusive", "missing header tvm/ffi/function.h"),
        ('x.cu:2:2: error: #error "needs sm_90 or newer"\n', "arch-error", "#error for this architecture"),
        ('x.cu:2:2: error: #error "CUDA 12.8 required"\n', "inconclusive", "#error about the toolkit"),
        ("nvcc fatal   : Unsupported gpu architecture 'sm_101'\n", "inconclusive", "this nvcc cannot build the target"),
        ("x.cu(1): error: expected an expression\n", "inconclusive", "not tied to the target: x.cu(1): error: expected"),
    ],
)
def test_classify_failure(stderr, outcome, fragment):
    got, message = classify_failure(stderr, "/tmp/s")
    assert got == outcome and fragment in message
