"""Edits that leave every changed file's facts as they were (a comment appended, a blank line at the
end): the stored result is this tree's too, carried over with no re-scan, and the next edit re-scans
in part from it. Where a byte-level read of the scan could see the edit (the C++ tiles, the words
that choose the host files read first), the re-scan decides, as before."""

from __future__ import annotations

from pathlib import Path

import pytest

import archlint.engine.pyrescan as pyrescan
import archlint.engine.rescan as rescan_module
from archlint.engine import scan
from archlint.model.scan import ScanOptions
from conftest import settle, settled_copy

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
UNIT = "flashinfer/data/csrc/vec_dequant.cu"
HEADER = "flashinfer/data/include/flashinfer/vec_dtypes.cuh"
VEC_GATE_LINE = 19  # jit/comm.py: the vec_dequant gate, POLICY for every target it excludes


def _scan(root: Path, **options):
    return scan(ScanOptions(paths=(str(root),), jobs=1, **options))


def _append(path: Path, text: str, age: float) -> None:
    path.write_text(path.read_text() + text)
    settle(path, age)


@pytest.fixture
def tree(tmp_path, monkeypatch):
    monkeypatch.setenv("ARCHLINT_CACHE_DIR", str(tmp_path / "cache"))
    return settled_copy(FIXTURES / "gate-flashinfer", tmp_path / "tree")


@pytest.fixture
def re_scans(monkeypatch):
    """The re-scans started, by kind; each still runs."""
    calls: list[str] = []
    for module, name in ((rescan_module, "rescan"), (pyrescan, "python_rescan")):
        real = getattr(module, name)
        monkeypatch.setattr(module, name, lambda *a, _real=real, _name=name: calls.append(_name) or _real(*a))
    return calls


@pytest.mark.parametrize("path", [UNIT, HEADER, "flashinfer/jit/comm.py"])
def test_a_comment_appended_carries_the_stored_result_over(tree, full_scans, re_scans, path):
    before = _scan(tree)
    _append(tree / path, "// a note at the end\n" if path.endswith((".cu", ".cuh")) else "# a note at the end\n", 600)
    after = _scan(tree)
    assert len(full_scans) == 1 and re_scans == []
    assert after == before == _scan(tree, use_cache=False)


def test_the_next_edit_re_scans_in_part_from_the_carried_state(tree, full_scans, re_scans):
    before = _scan(tree)
    assert {v.verdict.name for v in _gate(before).verdicts} == {"POLICY"}
    _append(tree / HEADER, "// a note at the end\n", 900)
    _scan(tree)
    header = tree / HEADER
    text = header.read_text()
    old = "{ return static_cast<float>(v) * scale; }"
    assert old in text
    header.write_text(text.replace(old, '{ asm volatile("wgmma.fence.sync.aligned;\\n" ::: "memory"); '
                                         "return static_cast<float>(v) * scale; }"))
    settle(header, 600)
    after = _scan(tree)
    assert len(full_scans) == 1 and re_scans == ["rescan"]  # the state carried over is the one started from
    assert {v.verdict.name for v in _gate(after).verdicts} == {"GENUINE"}
    assert after == _scan(tree, use_cache=False)


def test_a_file_the_cxx_tiles_read_is_left_to_the_re_scan(tmp_path, monkeypatch, full_scans, re_scans):
    monkeypatch.setenv("ARCHLINT_CACHE_DIR", str(tmp_path / "cache"))
    root = settled_copy(FIXTURES / "al204-cxx-tiles", tmp_path / "tree")
    before = _scan(root)
    header = root / "gemmkit/include/gemmkit/gemm/gemm_configs_sm120.h"
    assert b"Shape" in header.read_bytes()
    _append(header, "// a note at the end\n", 600)
    after = _scan(root)
    assert re_scans == ["rescan"] and len(full_scans) == 1
    assert after == before == _scan(root, use_cache=False)


CHECKED = """\
// A host check that reads no capability: the host files read first are those spelling a field.
#include <torch/all.h>

void check_inputs(const torch::Tensor& a) {
  TORCH_CHECK(a.is_contiguous(), "a must be contiguous");
}
"""


def test_a_comment_spelling_a_capability_field_in_a_host_file_is_left_to_the_re_scan(tmp_path, monkeypatch,
                                                                                  full_scans, re_scans):
    """`minor` is among the words that choose which host files a cold scan reads in full first
    (engine.linking._host_files): a file spelling it now where it did not may be read otherwise,
    whatever its facts. A plain comment in the same file is carried over."""
    monkeypatch.setenv("ARCHLINT_CACHE_DIR", str(tmp_path / "cache"))
    root = settled_copy(FIXTURES / "gate-host-ops", tmp_path / "tree")
    unit = root / "csrc/checks.cu"
    unit.write_text(CHECKED)
    settle(unit, 900)
    _scan(root)
    _append(unit, "// a note\n", 800)
    _scan(root)
    assert re_scans == []
    _append(unit, "// a minor fix\n", 600)
    after = _scan(root)
    assert re_scans and re_scans[0] == "rescan"
    assert after == _scan(root, use_cache=False)


def _gate(result):
    return next(g for g in result.gates if g.location.line == VEC_GATE_LINE and g.location.path.endswith("comm.py"))
