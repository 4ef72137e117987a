"""The CUDA-side rules on the CUDA files no gate builds, where before such a file got no CUDA-side
finding at all: it is checked for every scan target where its own conditions select targets (an
unguarded instruction may be built for the one target that has it). A scan reads in full only those
of them where a file rule can report something; the rest stay read for their directives."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import archlint.engine.linking as linking
import archlint.engine.pipeline as pipeline
import archlint.extract.cuda.facts as cuda_facts
from archlint.engine import scan
from archlint.model.scan import ScanOptions
from conftest import settle

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
FIXTURE = FIXTURES / "gate-unbuilt-sources"
CSRC = "flashinfer/data/csrc"
# no gate builds it: an arch-guarded kernel body with no #else, an exact-arch test, an unguarded
# griddepcontrol and a wgmma under `__CUDA_ARCH__ >= 900`
FREE = f"{CSRC}/topk_sm90.cu"
PLAIN = """// No gate builds this file either, and nothing in it depends on the target.
#pragma once
#if defined(USE_FAST_MATH)
#define SCALE_FACTOR 0.5f
#endif
__device__ __forceinline__ float halve(float x) { return x * 0.5f; }
"""


@pytest.fixture
def tree(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("ARCHLINT_CACHE_DIR", str(tmp_path / "cache"))
    root = tmp_path / "tree"
    shutil.copytree(FIXTURE, root)
    (root / CSRC / "plain.cuh").write_text(PLAIN)
    for path in [root, *root.rglob("*")]:
        settle(path)
    return root


def _scan(root: Path, **options):
    return scan(ScanOptions(paths=(str(root),), jobs=1, **options))


def _file_findings(result, path: str) -> set[tuple[str, int, tuple[str, ...]]]:
    return {(f.rule, f.location.line, f.targets) for f in result.findings if f.location.path == path}


def test_a_file_no_gate_builds_gets_the_cuda_side_rules(tree):
    found = _file_findings(_scan(tree, use_cache=False), FREE)
    assert found == {
        ("AL203", 7, ("sm_100", "sm_103", "sm_110", "sm_120", "sm_121")),
        ("AL202", 16, ("sm_80", "sm_89")),
        ("AL201", 35, ("sm_100a", "sm_103a", "sm_110a", "sm_120a", "sm_121a")),
    }
    # as the file scanned alone (a scan without gates: every target builds all of it) reports it,
    # less the unguarded griddepcontrol that nothing says is built for sm_80 or sm_89
    alone = scan(ScanOptions(paths=(str(tree / FREE),), jobs=1, use_cache=False))
    assert {(f.rule, f.location.line, f.targets) for f in alone.findings} == found | {("AL201", 28, ("sm_80", "sm_89"))}


def test_only_files_a_rule_can_report_on_are_read_in_full(tree):
    linked = linking.link(ScanOptions(paths=(str(tree),), jobs=1, use_cache=False), eager=False)
    assert f"{CSRC}/plain.cuh" in linked.shallow  # no kernel, no construct, no target-dependent condition
    assert FREE not in linked.shallow  # a kernel and a condition false for some targets (AL202)
    assert linked.context.free == {FREE, f"{CSRC}/plain.cuh"}
    assert pipeline.run(ScanOptions(paths=(str(tree),), jobs=1, use_cache=False)) == \
        pipeline.run(ScanOptions(paths=(str(tree),), jobs=1, use_cache=False), eager=True)


def test_the_targets_narrow_the_findings_of_a_free_file(tree):
    """Built for Hopper and Blackwell only, the kernel is never empty and the exact test admits one
    of them: the AL202 goes, the AL203 stays."""
    found = _file_findings(_scan(tree, use_cache=False, targets=("sm_90a", "sm_100a")), FREE)
    assert found == {("AL203", 7, ("sm_100", "sm_103", "sm_110", "sm_120", "sm_121")), ("AL201", 35, ("sm_100a",))}


def _rewrite(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))
    settle(path, age=600)


def test_editing_a_free_file_rescans_it_in_part(tree, monkeypatch):
    _scan(tree)
    full_scans: list[tuple] = []
    real = pipeline._full_scan
    monkeypatch.setattr(pipeline, "_full_scan", lambda *a: full_scans.append(a) or real(*a))
    _rewrite(tree / FREE, "__CUDA_ARCH__ == 900", "__CUDA_ARCH__ >= 900")
    partial = _scan(tree)
    assert not full_scans
    assert {rule for rule, _, _ in _file_findings(partial, FREE)} == {"AL201", "AL202"}
    assert partial == _scan(tree, use_cache=False)


def test_a_free_file_a_unit_starts_including_takes_the_gates_builds(tree):
    """Once the gate's unit includes it, the file is compiled by the gate's admitted builds only
    (sm_90a, sm_100a, sm_103a): the kernel is empty on none of them, and no AL202 is left."""
    _scan(tree)
    _rewrite(tree / CSRC / "quant.cu", "#include <cuda_runtime.h>", '#include <cuda_runtime.h>\n#include "topk_sm90.cu"')
    partial = _scan(tree)
    assert "AL202" not in {rule for rule, _, _ in _file_findings(partial, FREE)}
    assert partial == _scan(tree, use_cache=False)
    assert partial == pipeline.run(ScanOptions(paths=(str(tree),), jobs=1, use_cache=False), eager=True)


def test_narrowing_the_targets_reads_no_file_in_full(tree, monkeypatch):
    """A --target subset re-runs the file rules on the files they reported on, among them a file no
    gate builds that was read for its directives only (its AL203 needs no more): it stays so."""
    shutil.copy(FIXTURES / "al203-exact-arch" / "sampling.cuh", tree / CSRC / "sampling.cuh")
    settle(tree / CSRC / "sampling.cuh")
    settle(tree / CSRC)
    assert ("AL203", 7, ("sm_100", "sm_103", "sm_110", "sm_120", "sm_121")) in _file_findings(_scan(tree), f"{CSRC}/sampling.cuh")

    def refused(*args, **kwargs):
        raise AssertionError("a file was read in full, or the tree scanned again")

    with monkeypatch.context() as patched:
        patched.setattr(cuda_facts, "extract_cuda", refused)
        patched.setattr(pipeline, "_full_scan", refused)
        narrowed = _scan(tree, targets=("sm_90a", "sm_120a"))
    assert narrowed == _scan(tree, use_cache=False, targets=("sm_90a", "sm_120a"))
    assert _file_findings(narrowed, f"{CSRC}/sampling.cuh")
