"""Flag lists read from module constants and `*(...)` items, conditional flags kept apart from the sure
ones, and toolkit-version tests (`is_cuda_version_at_least("12.8")`) decided per target (FlashInfer's
fp8_blockscale_gemm shape: DeepGEMM's sm_90a-only run-time build behind `#ifdef ENABLE_FP8_BLOCK_SCALE`)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import pytest

from archlint.engine import scan
from archlint.extract.python.facts import extract_python
from archlint.gates.detect import flag_lists_of
from archlint.knowledge.arch import parse_target
from archlint.link.python import link_python
from archlint.model.python import VersionedFlag
from archlint.model.scan import ScanOptions

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "gate-version-flags"
BLOCKSCALE = "vf/jit/gemm/fp8_blockscale.py"


def _flags(source: bytes):
    (flags,) = [f for f in extract_python("spec.py", source).flags if f.keyword == "extra_cuda_cflags"]
    return flags


def test_a_splat_item_under_a_toolkit_version_test_is_versioned_not_sure():
    flags = _flags(b'''
def gen():
    nvcc_flags = ["-DENABLE_FP8", *(("-DENABLE_FP8_BLOCK_SCALE",) if is_cuda_version_at_least("12.8") else ())]
    return build(extra_cuda_cflags=nvcc_flags)
''')
    assert flags.values == ("-DENABLE_FP8",)
    assert flags.maybe == ("-DENABLE_FP8_BLOCK_SCALE",)
    assert flags.versioned == (VersionedFlag("-DENABLE_FP8_BLOCK_SCALE", "12.8", True),)
    assert flags.complete


@pytest.mark.parametrize("item", [
    b'*(("-DX",) if use_x else ())',
    b'"-DX" if use_x else ""',
    b'*(["-DX"] if use_x else [])',
])
def test_a_flag_under_an_undecided_condition_is_maybe(item):
    flags = _flags(b"def gen(use_x):\n    return build(extra_cuda_cflags=['-O3', " + item + b"])\n")
    assert "-DX" not in flags.values and "-DX" in flags.maybe
    assert flags.versioned == ()
    assert flags.complete


def test_a_macro_both_branches_pass_is_sure_with_either_value():
    flags = _flags(b"def gen(big):\n    return build(extra_cuda_cflags=['-DTILE=128'] if big else ['-DTILE=64', '-DSMALL'])\n")
    assert flags.values == ("-DTILE=128", "-DTILE=64")
    assert flags.maybe == ("-DSMALL",)


def test_the_negated_test_and_a_conditional_addition_are_decided_by_the_toolkit():
    flags = _flags(b'''
def gen():
    flags = ["-O3", "-DLEGACY_FP8" if not is_cuda_version_at_least("12.8") else "-DNEW_FP8"]
    if is_cuda_version_at_least("12.9"):
        flags += ["-DFAMILY_TARGETS"]
    return build(extra_cuda_cflags=flags)
''')
    assert set(flags.versioned) == {VersionedFlag("-DLEGACY_FP8", "12.8", False), VersionedFlag("-DNEW_FP8", "12.8", True),
                                    VersionedFlag("-DFAMILY_TARGETS", "12.9", True)}
    assert flags.values == ("-O3",)
    assert flags.complete


def test_a_parameter_extended_in_place_leaves_the_list_open():
    flags = _flags(b"def gen(flags):\n    flags += ['-DX']\n    return build(extra_cuda_cflags=flags)\n")
    assert not flags.complete


def test_a_version_test_decides_only_targets_no_older_toolkit_builds_for():
    flag = VersionedFlag("-DX", "12.8", True)
    assert flag.passed_with(parse_target("sm_120a").first_cuda()) is True
    assert flag.passed_with(parse_target("sm_100a").first_cuda()) is True
    assert flag.passed_with(parse_target("sm_90a").first_cuda()) is None
    assert flag.passed_with(parse_target("sm_80").first_cuda()) is None
    assert VersionedFlag("-DX", "12.8", False).passed_with(parse_target("sm_121a").first_cuda()) is False
    assert parse_target("sm_121a").first_cuda() == (12, 9) and parse_target("sm_110a").first_cuda() == (13, 0)


def _index(modules: dict[str, bytes]):
    facts = [extract_python(path, source) for path, source in modules.items()]
    return link_python(facts, ["pkg"], list(modules))


def test_an_imported_module_constant_is_read_from_its_value():
    index = _index({
        "pkg/__init__.py": b"",
        "pkg/jit/__init__.py": b"",
        "pkg/jit/core.py": b'common = ["-DCOMMON"]\nsm90a_flags = ["-gencode=arch=compute_90a,code=sm_90a"] + common\n',
        "pkg/jit/gemm/__init__.py": b"",
        "pkg/jit/gemm/spec.py": b'from ..core import sm90a_flags\n\n'
                                b'def gen():\n    return build(extra_cuda_cflags=sm90a_flags + ["-DOWN"])\n',
    })
    extracted = index.modules["pkg.jit.gemm.spec"].flags[0]
    assert extracted.names == ("sm90a_flags",) and extracted.values == ("-DOWN",)
    (flags,) = flag_lists_of(index, "pkg.jit.gemm.spec", "pkg.jit.gemm.spec.gen")
    assert flags.values == ("-DOWN", "-gencode=arch=compute_90a,code=sm_90a", "-DCOMMON")
    assert flags.complete and flags.names == ()


@pytest.mark.parametrize("core", [
    b'flags = ["-DA"]\nflags = ["-DB"]\n',  # assigned twice
    b'flags = ["-DA"]\nflags += extra()\n',  # added to at module scope
    b'import os\nif os.environ.get("X"):\n    flags = ["-DA"]\n',  # assigned under a condition
    b'flags = ["-DA"] + user_flags\n',  # a name no module binds
])
def test_a_constant_not_read_whole_leaves_the_list_open(core):
    index = _index({"pkg/__init__.py": b"", "pkg/core.py": core,
                    "pkg/spec.py": b"from .core import flags\n\ndef gen():\n    return build(extra_cuda_cflags=flags)\n"})
    (flags,) = flag_lists_of(index, "pkg.spec", "pkg.spec.gen")
    assert not flags.complete


@lru_cache(maxsize=1)
def _gates():
    result = scan(ScanOptions(paths=(str(FIXTURE),), use_cache=False, jobs=1))
    return {(g.location.path, g.location.line): {v.target: v for v in g.verdicts} for g in result.gates}


@pytest.mark.parametrize("gate", [(BLOCKSCALE, 15), ("vf/gemm.py", 9)])
def test_a_build_every_toolkit_for_the_target_makes_with_the_block_scale_define_is_genuine(gate):
    verdicts = _gates()[gate]
    for target in ("sm_100a", "sm_103a", "sm_110a", "sm_120a", "sm_121a"):
        verdict = verdicts[target]
        assert verdict.verdict.value == "GENUINE"
        assert f"kernels compiled at run time for `sm_90a` only (a run-time compiler option): `sm_90a` code runs " \
               f"only on compute capability 9.0, not on {target}" in verdict.reason
        hop = verdict.evidence[-1]
        assert (hop.location.path, hop.location.line) == ("vf/csrc/deep_gemm/compiler.cuh", 15)
        include = [e for e in verdict.evidence if e.location.path == "vf/csrc/fp8_blockscale_gemm.cu"][-1]
        assert include.location.line == 6  # the `#include` under `#ifdef ENABLE_FP8_BLOCK_SCALE`


def test_a_target_an_older_toolkit_builds_for_stays_undecided():
    for target in ("sm_80", "sm_89"):
        verdict = _gates()[(BLOCKSCALE, 15)][target]
        assert verdict.verdict.value == "UNKNOWN"
        assert verdict.reason.startswith(f"possible blocker under a condition archlint cannot decide for {target}")


def test_a_condition_that_is_no_toolkit_test_stays_undecided():
    verdicts = _gates()[(BLOCKSCALE, 30)]
    assert {v.verdict.value for v in verdicts.values()} == {"UNKNOWN"}
    assert "cannot decide for sm_120a: kernels compiled at run time for `sm_90a` only" in verdicts["sm_120a"].reason


def test_a_flag_a_list_method_adds_is_maybe():
    flags = _flags(b'''
def gen(prebuilt, folder):
    nvcc_flags = ["-DENABLE_FP8"]
    if prebuilt:
        nvcc_flags.append("-DPREBUILT_D_DESCRIPTOR=1")
    nvcc_flags.extend([f"-I{folder}", "-Wno-deprecated-gpu-targets"])
    return build(extra_cuda_cflags=nvcc_flags)
''')
    assert flags.values == ("-DENABLE_FP8",)
    assert flags.maybe == ("-DPREBUILT_D_DESCRIPTOR=1", "-Wno-deprecated-gpu-targets")
    assert flags.complete  # every flag it may pass is read, or is no -D flag


@pytest.mark.parametrize("added", [b"nvcc_flags.append(extra)", b'nvcc_flags.append(f"-D{name}=1")',
                                   b"nvcc_flags.remove('-DENABLE_FP8')"])
def test_a_list_method_whose_flags_are_not_read_leaves_the_list_open(added):
    flags = _flags(b"def gen(extra, name):\n    nvcc_flags = ['-DENABLE_FP8']\n    " + added
                   + b"\n    return build(extra_cuda_cflags=nvcc_flags)\n")
    assert not flags.complete


def test_a_list_method_under_a_toolkit_version_test_is_decided_by_it():
    flags = _flags(b'''
def gen():
    nvcc_flags = ["-DENABLE_FP8"]
    if is_cuda_version_at_least("12.8"):
        nvcc_flags.extend(["-DENABLE_FP8_BLOCK_SCALE"])
    return build(extra_cuda_cflags=nvcc_flags)
''')
    assert flags.versioned == (VersionedFlag("-DENABLE_FP8_BLOCK_SCALE", "12.8", True),)
    assert flags.complete


def test_a_constant_a_list_method_changes_at_module_scope_leaves_the_list_open():
    index = _index({"pkg/__init__.py": b"", "pkg/core.py": b'flags = ["-DA"]\nflags.append(extra())\n',
                    "pkg/spec.py": b"from .core import flags\n\ndef gen():\n    return build(extra_cuda_cflags=flags)\n"})
    (flags,) = flag_lists_of(index, "pkg.spec", "pkg.spec.gen")
    assert flags.values == ("-DA",) and not flags.complete


def test_a_compared_toolkit_version_call_is_a_version_test():
    flags = _flags(b'''
def gen():
    return build(extra_cuda_cflags=["-DSM120F"] if _jit_cuda_version() >= (12, 9) else ["-DSM120A"])
''')
    assert set(flags.versioned) == {VersionedFlag("-DSM120F", "12.9", True), VersionedFlag("-DSM120A", "12.9", False)}
