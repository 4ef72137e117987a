"""On-demand reading: a scan reads every CUDA file's directives but only the files its gates' units
can include in full. Its reports must equal those of a scan that reads every file in full
(`run(..., eager=True)`, ARCHLINT_EAGER=1), on every fixture and on a tree where most CUDA files
lie outside every gate's reach, and its stored state must keep partial re-scans equal to full ones."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

import archlint.engine.linking as linking
import archlint.engine.pipeline as pipeline
from archlint.cli.commands import cli
from archlint.engine import scan
from archlint.model.scan import ScanOptions
from conftest import settle

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
CASES = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir() and p.name != "snapshots")
INCLUDE = "flashinfer/data/include/flashinfer"

# Outside every unit's include closure: a header whose arch macro a unit's header tests, a file with
# a suppression, a stray #endif and a byte that is not UTF-8, and two fixtures' kernels.
ARCH_MACROS = """#pragma once
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define FI_VEC_FAST_PATH 1
#endif
"""
VEC_DTYPES = """#pragma once
namespace flashinfer {
__device__ __forceinline__ float scale_value(signed char v, float scale) {
#if defined(FI_VEC_FAST_PATH)
  asm volatile("wgmma.fence.sync.aligned;\\n" ::: "memory");
#endif
  return static_cast<float>(v) * scale;
}
}  // namespace flashinfer
"""
ODD = b"""// archlint: ignore[AL201]
__device__ void odd() {}
#endif
// caf\xe9
"""


def _report(tree: Path, fmt: str, eager: bool, monkeypatch) -> str:
    if eager:
        monkeypatch.setenv("ARCHLINT_EAGER", "1")
    else:
        monkeypatch.delenv("ARCHLINT_EAGER", raising=False)
    previous = Path.cwd()
    os.chdir(tree)
    try:
        result = CliRunner().invoke(cli, ["scan", ".", "--format", fmt, "--no-cache", "--jobs", "1"])
    finally:
        os.chdir(previous)
    assert result.exit_code in (0, 1), result.output
    return f"{result.output}# exit {result.exit_code}\n"


@pytest.mark.parametrize("case", CASES)
def test_on_demand_reports_equal_full_reading_on_every_fixture(case, monkeypatch):
    for fmt in ("json", "sarif"):
        assert _report(FIXTURES / case, fmt, False, monkeypatch) == _report(FIXTURES / case, fmt, True, monkeypatch), f"{case} {fmt}"


@pytest.fixture
def wide_tree(tmp_path, monkeypatch) -> Path:
    """gate-flashinfer plus CUDA files no gate's units include."""
    monkeypatch.setenv("ARCHLINT_CACHE_DIR", str(tmp_path / "cache"))
    root = tmp_path / "tree"
    shutil.copytree(FIXTURES / "gate-flashinfer", root)
    (root / INCLUDE / "arch_macros.cuh").write_text(ARCH_MACROS)
    (root / INCLUDE / "vec_dtypes.cuh").write_text(VEC_DTYPES)
    other = root / "flashinfer/data/csrc/other"
    other.mkdir()
    for source in [*(FIXTURES / "al201-wgmma").iterdir(), *(FIXTURES / "al203-exact-arch").iterdir()]:
        shutil.copy(source, other / source.name)
    (other / "odd.cu").write_bytes(ODD)
    for path in [root, *root.rglob("*")]:
        settle(path)
    return root


def test_files_outside_every_unit_are_read_for_directives_only(wide_tree):
    linked = linking.link(ScanOptions(paths=(str(wide_tree),), jobs=1, use_cache=False), eager=False)
    assert {f"{INCLUDE}/arch_macros.cuh", "flashinfer/data/csrc/other/sampling.cuh",
            "flashinfer/data/csrc/other/odd.cu"} <= linked.shallow
    assert f"{INCLUDE}/vec_dtypes.cuh" not in linked.shallow
    # no gate builds it, and it holds an unguarded wgmma the older targets lack (AL201): read in full
    assert "flashinfer/data/csrc/other/gemm_sm90.cuh" not in linked.shallow
    odd = next(f for f in linked.facts if f.file.path == "flashinfer/data/csrc/other/odd.cu")
    assert odd.cuda is not None and odd.cuda.suppressions and not odd.cuda.functions


@pytest.mark.parametrize("fmt", ["json", "sarif", "text"])
def test_on_demand_reports_equal_full_reading_beside_unreached_files(wide_tree, fmt, monkeypatch):
    demand = _report(wide_tree, fmt, False, monkeypatch)
    assert demand == _report(wide_tree, fmt, True, monkeypatch)
    assert "#endif without #if" in demand  # a diagnostic of a file read for its directives only
    # the file rules on files no gate builds: read in full (AL201) and for their directives (AL203)
    assert "csrc/other/gemm_sm90.cuh" in demand and "csrc/other/sampling.cuh" in demand
    if fmt == "text":  # the unit's wgmma sits under a macro only the unreached header defines
        assert "wgmma.fence" in demand


def _scan(root: Path, **options):
    return scan(ScanOptions(paths=(str(root),), jobs=1, **options))


def _rewrite(path: Path, text: str) -> None:
    path.write_text(text)
    settle(path, age=600)


def test_editing_an_unreached_file_rescans_in_part(wide_tree, monkeypatch):
    _scan(wide_tree)
    full_scans = []
    real = pipeline._full_scan
    monkeypatch.setattr(pipeline, "_full_scan", lambda *a: full_scans.append(a) or real(*a))
    sampling = wide_tree / "flashinfer/data/csrc/other/sampling.cuh"
    _rewrite(sampling, sampling.read_text() + "\n// edited\n")
    assert _scan(wide_tree) == _scan(wide_tree, use_cache=False)
    assert len(full_scans) == 1  # the no-cache scan only: the edit was re-scanned in part


def test_a_unit_that_starts_including_an_unreached_file_is_scanned_again_in_full(wide_tree):
    _scan(wide_tree)
    unit = wide_tree / "flashinfer/data/csrc/vec_dequant.cu"
    _rewrite(unit, unit.read_text().replace('#include "flashinfer/vec_dtypes.cuh"',
                                            '#include "flashinfer/vec_dtypes.cuh"\n#include "../csrc/other/gemm_sm90.cuh"'))
    partial = _scan(wide_tree)
    assert partial == _scan(wide_tree, use_cache=False)
    assert partial == pipeline.run(ScanOptions(paths=(str(wide_tree),), jobs=1, use_cache=False), eager=True)


class _Terminal:
    """A stand-in for stderr at a terminal: what was written, in order."""

    def __init__(self) -> None:
        self.text = ""

    def write(self, text: str) -> int:
        self.text += text
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return True


def test_a_terminal_sees_progress_and_a_hint_on_the_first_scan(wide_tree, monkeypatch):
    terminal = _Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    first = _scan(wide_tree)
    assert "first scan of this tree" in terminal.text
    assert "archlint: [2/9] facts " in terminal.text  # Python and templates, then the CUDA files' directives
    assert "archlint: [5/9] includes 15/15 files" in terminal.text
    # the units and what they include, and the two files no gate builds whose AL201 sites a target lacks
    assert "archlint: [6/9] unit facts 12/12 files" in terminal.text
    terminal.text = ""
    assert _scan(wide_tree) == first
    assert "first scan" not in terminal.text  # the stored result answers: no hint, no file read


def test_no_progress_when_stderr_is_not_a_terminal(wide_tree, capsys):
    _scan(wide_tree)
    assert capsys.readouterr().err == ""


# Python modules with no gate vocabulary: a capability helper's caller, reached only through the
# helper's name; a module nothing needs.
ARCH_HELPER = """import torch


def is_hopper(device=None):
    major, _ = torch.cuda.get_device_capability(device)
    return major == 9
"""
DISPATCH = """from .arch import is_hopper as hopper
from .jit.comm import gen_gemm_sm90_module


def gemm(a, b):
    if hopper():
        return gen_gemm_sm90_module()
    raise RuntimeError("no kernel for this GPU")
"""
CAPS = """import torch


class Caps:
    @staticmethod
    def major(device=None):
        return torch.cuda.get_device_capability(device)[0]

    @classmethod
    def is_blackwell(cls, device=None):
        return cls.major(device) == 10


def is_blackwell_device(device=None):
    return Caps.is_blackwell(device)
"""
BLACKWELL_DISPATCH = """from .caps import Caps
from .jit.comm import gen_gemm_sm90_module


def gemm_blackwell(a, b):
    if not Caps.is_blackwell(a.device):
        raise RuntimeError("needs an SM100 GPU")
    return gen_gemm_sm90_module()
"""
# Spells the method's name, but never as a member, and the function's name without its module's:
# no condition here can reach either.
NAMESAKE = """def describe(is_blackwell, is_blackwell_device):
    return "sm100" if is_blackwell or is_blackwell_device else "other"
"""
UNRELATED = """import math


def softmax_scale(head_dim):
    return 1.0 / math.sqrt(head_dim)
"""


@pytest.fixture
def python_tree(tmp_path) -> Path:
    """gate-flashinfer plus a capability test in a module that spells no gate vocabulary."""
    root = tmp_path / "tree"
    shutil.copytree(FIXTURES / "gate-flashinfer", root)
    (root / "flashinfer/arch.py").write_text(ARCH_HELPER)
    (root / "flashinfer/dispatch.py").write_text(DISPATCH)
    (root / "flashinfer/unrelated.py").write_text(UNRELATED)
    (root / "flashinfer/caps.py").write_text(CAPS)
    (root / "flashinfer/blackwell.py").write_text(BLACKWELL_DISPATCH)
    (root / "flashinfer/namesake.py").write_text(NAMESAKE)
    return root


def test_python_modules_are_read_in_full_only_where_linking_needs_them(python_tree):
    linked = linking.link(ScanOptions(paths=(str(python_tree),), jobs=1, use_cache=False), eager=False)
    read = {f.file.path for f in linked.facts if f.python is not None}
    # the path constants' module is read because the specs' source paths hang off it; the dispatcher
    # because it spells the name of a function that reads the capability
    assert {"flashinfer/jit/env.py", "flashinfer/dispatch.py", "flashinfer/arch.py"} <= read
    assert "flashinfer/unrelated.py" not in read
    gates = {(r.gate.path, r.gate.kind) for r in linked.context.gate_results}
    assert ("flashinfer/dispatch.py", "capability-compare") in gates or ("flashinfer/dispatch.py", "predicate-call") in gates


def test_a_capability_method_is_followed_where_it_is_spelled_as_a_member(python_tree):
    linked = linking.link(ScanOptions(paths=(str(python_tree),), jobs=1, use_cache=False), eager=False)
    read = {f.file.path for f in linked.facts if f.python is not None}
    assert {"flashinfer/caps.py", "flashinfer/blackwell.py"} <= read
    assert "flashinfer/namesake.py" not in read
    admits = {r.gate.path: r.gate.admits for r in linked.context.gate_results}
    assert admits["flashinfer/blackwell.py"] == (100, 103)


# Calls the spec generator the gate reaches (so it is among its callers) and a helper of a module
# nothing else needs: finding the callers resolves the generator's calls only.
WRAPPER = """from .jit.comm import gen_gemm_sm90_module
from .padding import pad_to_multiple


def gemm_padded(a, b):
    a = pad_to_multiple(a, 16)
    return gen_gemm_sm90_module().gemm(a, b)
"""
PADDING = """def pad_to_multiple(x, n):
    return x
"""


def test_finding_a_functions_callers_reads_no_module_only_its_other_calls_name(python_tree):
    (python_tree / "flashinfer/wrapper.py").write_text(WRAPPER)
    (python_tree / "flashinfer/padding.py").write_text(PADDING)
    linked = linking.link(ScanOptions(paths=(str(python_tree),), jobs=1, use_cache=False), eager=False)
    read = {f.file.path for f in linked.facts if f.python is not None}
    assert "flashinfer/wrapper.py" in read
    assert "flashinfer/padding.py" not in read
    assert "flashinfer.wrapper.gemm_padded" in linked.pyindex.callers("flashinfer.jit.comm.gen_gemm_sm90_module")


@pytest.mark.parametrize("fmt", ["json", "sarif", "text"])
def test_on_demand_python_reports_equal_full_reading(python_tree, fmt, monkeypatch):
    demand = _report(python_tree, fmt, False, monkeypatch)
    assert demand == _report(python_tree, fmt, True, monkeypatch)
    if fmt == "text":
        assert "flashinfer/dispatch.py" in demand
