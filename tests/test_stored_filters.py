"""Options that only narrow what a scan judged are answered from the stored scan: --select,
--ignore, --fail-on, --baseline, --show-suppressed, --no-suppress and a --target list that is a
subset of the stored scan's targets. Each such run must print exactly what a scan with the same
options and no cache prints, and must not scan the tree again."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

import archlint.engine.pipeline as pipeline
from archlint.cli.commands import cli
from conftest import settled_copy

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
# gates with AL105 and file rules beside them, prebuilt kernels, a tree without gates (file rules
# only), suppressions, a file no gate builds (file rules for every target)
CASES = ["gate-flashinfer", "gate-hidden-traps", "runtime-major9", "gate-prebuilt", "al202-allreduce",
         "runtime-probe", "suppress-mixed", "gate-unbuilt-sources"]
FILTERS = [
    ("--target", "sm_120a"),
    ("--target", "sm_90a", "--target", "sm_80"),
    ("--target", "sm_89", "--target", "sm_121a", "--select", "AL1,AL202"),
    ("--target", "sm_100a", "--ignore", "AL101", "--fail-on", "error"),
    ("--select", "AL101"),
    ("--ignore", "AL2", "--fail-on", "note"),
    ("--no-suppress", "--fail-on", "none"),
    ("--show-suppressed",),
]


def _settled_copy(case: str, tmp_path: Path) -> Path:
    """The fixture, back-dated past the racy window so that its scan is stored."""
    return settled_copy(FIXTURES / case, tmp_path / case)


def _run(tree: Path, *args: str) -> str:
    previous = Path.cwd()
    os.chdir(tree)
    try:
        result = CliRunner().invoke(cli, ["scan", ".", "--jobs", "1", *args])
    finally:
        os.chdir(previous)
    assert result.exit_code in (0, 1), result.output
    return f"{result.output}# exit {result.exit_code}\n"


@pytest.fixture
def full_scans(tmp_path, monkeypatch):
    """The full scans run with the cache (in a folder of the test's own); --no-cache ones aside."""
    monkeypatch.setenv("ARCHLINT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("NO_COLOR", "1")
    calls: list[tuple] = []
    real = pipeline._full_scan
    monkeypatch.setattr(pipeline, "_full_scan", lambda *a: (calls.append(a) if a[2] is not None else None) or real(*a))
    return calls


@pytest.mark.parametrize("case", CASES)
def test_a_filter_after_a_full_scan_prints_what_a_fresh_scan_prints(case, tmp_path, full_scans):
    tree = _settled_copy(case, tmp_path)
    _run(tree, "--format", "json")
    assert len(full_scans) == 1
    for options in FILTERS:
        for fmt in ("json", "text"):
            stored = _run(tree, "--format", fmt, *options)
            assert len(full_scans) == 1, f"{options}: the tree was scanned again"
            assert stored == _run(tree, "--format", fmt, "--no-cache", *options), f"{case} {fmt} {options}"


def test_a_target_subset_drops_a_finding_the_full_scan_had(tmp_path, full_scans):
    """AL202 reports a kernel empty on some of the targets but not all: for the targets it is empty
    on alone, there is nothing to report (and the stored scan's AL202 must not leak through)."""
    tree = _settled_copy("al202-allreduce", tmp_path)
    assert "AL202" in _run(tree)
    narrowed = _run(tree, "--target", "sm_80", "--target", "sm_89")
    assert "AL202" not in narrowed
    assert narrowed == _run(tree, "--no-cache", "--target", "sm_80", "--target", "sm_89")
    assert len(full_scans) == 1


def test_the_stage_report_shows_no_linking_for_a_target_subset(tmp_path, full_scans):
    tree = _settled_copy("gate-flashinfer", tmp_path)
    first = _run(tree, "-v")
    assert "stage pylink" in first
    narrowed = _run(tree, "-v", "--target", "sm_120a")
    assert "stage pylink" not in narrowed and "stage verdicts" in narrowed
    assert "stage verdicts" not in _run(tree, "-v", "--target", "sm_120a")  # now stored as it is


def test_a_wider_target_list_is_judged(tmp_path, full_scans):
    tree = _settled_copy("gate-flashinfer", tmp_path)
    _run(tree, "--target", "sm_90a", "--target", "sm_120a")
    _run(tree, "--target", "sm_120a")
    assert len(full_scans) == 1  # a subset of the stored targets
    wider = _run(tree, "--target", "sm_90a", "--target", "sm_120a", "--target", "sm_80")
    assert len(full_scans) == 2  # not a subset: judged
    assert wider == _run(tree, "--no-cache", "--target", "sm_80", "--target", "sm_90a", "--target", "sm_120a")


def test_a_baseline_is_applied_to_the_stored_scan(tmp_path, full_scans):
    tree = _settled_copy("gate-flashinfer", tmp_path)
    baseline = tmp_path / "baseline.json"
    _run(tree, "--no-cache", "--target", "sm_120a", "--select", "AL1", "--write-baseline", str(baseline))
    _run(tree)
    options = ("--baseline", str(baseline), "--format", "json")
    stored = _run(tree, *options)
    assert len(full_scans) == 1
    assert stored == _run(tree, "--no-cache", *options)
    assert '"baselined": ' in stored


def test_an_edit_after_a_wider_scan_is_rescanned_in_part_for_the_subset(tmp_path, full_scans):
    tree = _settled_copy("gate-flashinfer", tmp_path)
    _run(tree)
    unit = tree / "flashinfer/data/csrc/vec_dequant.cu"
    unit.write_text(unit.read_text() + "\n// edited\n")
    stamp = time.time() - 600
    os.utime(unit, (stamp, stamp))
    narrowed = _run(tree, "--target", "sm_100a", "--format", "json")
    assert len(full_scans) == 1
    assert narrowed == _run(tree, "--no-cache", "--target", "sm_100a", "--format", "json")


def test_the_same_options_again_print_the_stored_report(tmp_path, full_scans, monkeypatch):
    """A scan of an unchanged tree with the options of the last one prints the report the stored
    scan kept, without rendering it again; any other option, or an edited file, renders anew."""
    import archlint.cli.scanning as scanning

    renders: list[int] = []
    real = scanning.report_of
    monkeypatch.setattr(scanning, "report_of", lambda *a: renders.append(1) or real(*a))
    tree = _settled_copy("gate-flashinfer", tmp_path)
    sarif = tmp_path / "out" / "report.sarif"
    sarif.parent.mkdir()
    for options in [(), ("--format", "json"), ("--select", "AL101", "--fail-on", "error"), ("-o", str(sarif)), ()]:
        first = _run(tree, *options)
        written = sarif.read_bytes() if options[:1] == ("-o",) else b""
        count = len(renders)
        assert _run(tree, *options) == first and len(renders) == count, f"{options}: rendered again"
        if written:
            assert sarif.read_bytes() == written
        assert first == _run(tree, "--no-cache", *options)
    assert len(full_scans) == 1
    unit = tree / "flashinfer/data/csrc/vec_dequant.cu"
    unit.write_text(unit.read_text().replace("int i = blockIdx.x", "int i = blockIdx.x + 0"))
    stamp = time.time() - 600
    os.utime(unit, (stamp, stamp))
    count = len(renders)
    edited = _run(tree)
    assert len(renders) == count  # a kernel's body no rule reads: the result stands, and its report
    assert edited == _run(tree, "--no-cache")
    unit.write_text(unit.read_text().replace("__global__ void dequant_kernel(", "__global__ void dequant_kernel_v2("))
    os.utime(unit, (stamp + 1, stamp + 1))
    count = len(renders)
    edited = _run(tree)
    assert len(renders) == count + 1  # a renamed kernel: another result, rendered
    assert edited == _run(tree, "--no-cache")
