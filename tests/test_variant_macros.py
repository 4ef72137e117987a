"""Builds of the same sources told apart by the -D flags their specs pass (`-DFI_MAMBA_ENABLE_SM90`)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import pytest

from archlint.engine import scan
from archlint.extract.python.facts import extract_python
from archlint.model.scan import ScanOptions

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "gate-variant-macros"


def _flags(source: bytes):
    return [(f.function, f.values, f.complete) for f in extract_python("spec.py", source).flags]


def test_added_flags_are_read_and_a_list_read_whole_is_complete():
    source = b'''
def gen_sm90(ctx):
    nvcc_flags = ctx.get_nvcc_flags_list(supported_major_versions=[9])
    nvcc_flags += ["-DENABLE_SM90"]
    return build(extra_cuda_cflags=nvcc_flags + ["-O3"])
'''
    assert _flags(source) == [("gen_sm90", ("-DENABLE_SM90", "-O3"), True)]


@pytest.mark.parametrize("body", [
    b"    flags = ctx.get_nvcc_flags_list([9])\n    if fast:\n        flags += ['-DFAST']\n",  # added on some paths
    b"    flags = ctx.get_nvcc_flags_list([9]) + extra\n",  # a parameter: what callers pass is unknown
    b"    flags = ctx.get_nvcc_flags_list([9]) + user_flags()\n",  # a call other than the arch flags
])
def test_flags_not_read_whole_leave_the_list_open(body):
    source = b"def gen(ctx, fast, extra):\n" + body + b"    return build(extra_cuda_cflags=flags)\n"
    assert not any(complete for _, _, complete in _flags(source))
    assert all("-DFAST" not in values for _, values, _ in _flags(source))


def test_options_splat_or_unread_flag_keyword_leave_the_build_open():
    source = b'''
def gen(ctx, options):
    flags = ctx.get_nvcc_flags_list([9])
    return build(extra_cuda_cflags=flags, extra_cuda_cflags_by_source={"a.cu": ["-DX"]})
'''
    assert False in [complete for _, _, complete in _flags(source)]
    splat = b"def gen(ctx, options):\n    flags = ctx.get_nvcc_flags_list([9])\n" \
            b"    return build(extra_cuda_cflags=flags, **options)\n"
    assert False in [complete for _, _, complete in _flags(splat)]


@lru_cache(maxsize=1)
def _verdicts():
    result = scan(ScanOptions(paths=(str(FIXTURE),), use_cache=False, jobs=1))
    return {(g.location.path, g.location.line): {v.target: v for v in g.verdicts} for g in result.gates}


def test_the_plain_build_lacks_the_variants_sibling_specs_pass():
    """No -DFI_MAMBA_ENABLE_SM90/SM100 in the [8] build: the TMA and parity-spin kernels are not in it."""
    verdicts = _verdicts()[("fi/jit/mamba.py", 15)]
    assert {v.verdict for v in verdicts.values()} == {"POLICY"}
    assert "sm_120a" in verdicts and "sm_90a" in verdicts


def test_a_variant_build_is_judged_with_its_macros():
    sm90 = _verdicts()[("fi/jit/mamba.py", 22)]
    assert sm90["sm_80"].verdict == "GENUINE"
    assert "[libcudacxx-fence-proxy-async]" in sm90["sm_80"].reason
    assert sm90["sm_120a"].verdict == "POLICY"
    sm100 = _verdicts()[("fi/jit/mamba.py", 30)]
    assert sm100["sm_89"].verdict == "GENUINE" and sm100["sm_90a"].verdict == "POLICY"


def test_a_build_with_flags_from_its_caller_keeps_the_variants_undecided():
    custom = _verdicts()[("fi/jit/mamba.py", 39)]
    assert custom["sm_80"].verdict == "UNKNOWN" and "cannot decide" in custom["sm_80"].reason


def test_a_project_function_named_like_a_library_one_is_judged_by_its_body():
    """async_ops.cuh's `cp_async_bulk_commit_group` compiles to nothing below sm_90 (nvcc builds the
    unit for sm_80), unlike libcu++'s function of that name."""
    verdicts = _verdicts()[("fi/jit/comm.py", 8)]
    assert verdicts["sm_80"].verdict == "POLICY"


def test_a_macro_a_shared_builder_may_add_is_no_variant():
    """`_gen` adds -DV_SM100 on some paths: a build whose own flags lack it may still get it."""
    from archlint.gates.detect import find_gates
    from archlint.gates.variants import variant_macros
    from archlint.link.python import link_python

    source = b'''
def _gen(uri, sm100, extra_cuda_cflags=None):
    flags = list(extra_cuda_cflags)
    if sm100:
        flags += ["-DV_SM100"]
    return build(uri, extra_cuda_cflags=flags)


def gen_sm90(ctx):
    nvcc_flags = ctx.get_nvcc_flags_list(supported_major_versions=[9])
    nvcc_flags += ["-DV_SM90"]
    return _gen("a", False, extra_cuda_cflags=nvcc_flags)


def gen_sm100(ctx):
    nvcc_flags = ctx.get_nvcc_flags_list(supported_major_versions=[10])
    nvcc_flags += ["-DV_SM90", "-DV_SM100"]
    return _gen("b", True, extra_cuda_cflags=nvcc_flags)
'''
    index = link_python([extract_python("pkg/spec.py", source)], ["pkg"], {"pkg/spec.py", "pkg/__init__.py"})
    module = index.module_of_path["pkg/spec.py"]
    assert [flags.maybe for flags in index.modules[module].flags if flags.function == "_gen"] == [("-DV_SM100",)]
    assert variant_macros(index, find_gates(index)) == frozenset({"V_SM90"})


def test_a_spec_read_whole_passes_no_macro_no_scanned_build_passes():
    from archlint.knowledge.arch import parse_target
    from archlint.lang.cpp.evaluate import PASSABLE, Evaluator
    from archlint.lang.cpp.expr import parse_condition

    closed = Evaluator(parse_target("sm_120a"), {}, {PASSABLE: frozenset({"ENABLE_FP8_BLOCK_SCALE"})})
    # FlashInfer's `#ifdef PLACEHOLDER_KERNELS`: no spec passes it, no header defines it
    assert closed.truth(parse_condition("defined(PLACEHOLDER_KERNELS)")) == 0
    assert closed.truth(parse_condition("!defined(PLACEHOLDER_KERNELS)")) == 1
    # passed by some scanned spec (on some path): still the build's choice
    assert closed.truth(parse_condition("defined(ENABLE_FP8_BLOCK_SCALE)")) is None
    # a reserved name may come from the compiler or the framework's flags
    assert closed.truth(parse_condition("defined(__CUDA_NO_HALF_OPERATORS__)")) is None
    # a spec whose flags are not all read: nothing is known
    assert Evaluator(parse_target("sm_120a")).truth(parse_condition("defined(PLACEHOLDER_KERNELS)")) is None
