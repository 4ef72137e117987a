"""The stored report: a scan whose result is the one the last report was rendered from prints that
report again, after an edit too, and renders anew wherever a line the report quotes changed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import archlint.report
from archlint.cli.commands import cli
from conftest import settle, settled_copy

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"

SAMPLING = """\
// Exact-arch branch, in the shape of SGLang's sampling kernels.
#pragma once

__device__ __forceinline__ float fast_exp2(float x) {
  float y;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ == 900
  // the fast path
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
#else
  y = exp2f(x);
#endif
  return y;
}
"""


@pytest.fixture
def tree(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("ARCHLINT_CACHE_DIR", str(tmp_path / "cache"))
    root = tmp_path / "kernels"
    root.mkdir()
    (root / "sampling.cuh").write_text(SAMPLING)
    settle(root / "sampling.cuh", 3600)
    return root


def _sarif(root: Path, *options: str) -> dict:
    result = CliRunner().invoke(cli, ["scan", str(root), "--format", "sarif", "--jobs", "1", *options])
    assert result.exit_code == 1, result.output  # AL203 is a warning
    return json.loads(result.stdout)


def _line_hash(log: dict) -> str:
    (finding,) = log["runs"][0]["results"]
    assert (finding["ruleId"], finding["locations"][0]["physicalLocation"]["region"]["startLine"]) == ("AL203", 6)
    return finding["partialFingerprints"]["primaryLocationLineHash"]


def _renders(monkeypatch) -> list[str]:
    """The formats the report was rendered in from here on."""
    calls: list[str] = []
    render = archlint.report.render

    def counted(fmt, report):
        calls.append(fmt)
        return render(fmt, report)

    monkeypatch.setattr(archlint.report, "render", counted)
    return calls


def test_an_edit_that_leaves_the_result_prints_the_stored_report(tmp_path, monkeypatch):
    """The first scan is a full one, the next two start from its state: the result each gives is
    the same, though made of other objects (a full scan's findings share their rule ids, a
    re-scan's are partly loaded from the stored state)."""
    monkeypatch.setenv("ARCHLINT_CACHE_DIR", str(tmp_path / "cache"))
    root = settled_copy(FIXTURES / "gate-flashinfer", tmp_path / "gate-flashinfer")
    first = _sarif(root)
    source = root / "flashinfer" / "data" / "csrc" / "xqa_trap.cu"  # AL203 on its line 5
    renders = _renders(monkeypatch)
    for age, note in ((600, "// end of the trap kernel\n"), (500, "// and of the file\n")):
        source.write_text(source.read_text() + note)
        settle(source, age)
        assert _sarif(root) == first
    assert renders == []  # the result is the one rendered before: its report is printed again
    assert _sarif(root, "--no-cache") == first


@pytest.mark.parametrize("settled", [True, False], ids=["settled", "just-saved"])
def test_an_edit_of_a_quoted_line_renders_the_report_anew(tree, monkeypatch, settled):
    """The comment under the finding's line is inside the 100 characters its line hash covers: the
    scan's result is as before, its SARIF is not."""
    first = _sarif(tree)
    source = tree / "sampling.cuh"
    source.write_text(SAMPLING.replace("// the fast path", "// the Hopper path"))
    if settled:
        settle(source, 600)
    renders = _renders(monkeypatch)
    edited = _sarif(tree)
    assert renders == ["sarif"]
    assert _line_hash(edited) != _line_hash(first)
    assert edited == _sarif(tree, "--no-cache")


def test_reports_in_two_formats_are_kept_side_by_side(tree, monkeypatch):
    """A hook's text report between two SARIF uploads: after an edit that leaves the result, each
    format's report is printed as stored."""
    sarif = _sarif(tree)
    text = CliRunner().invoke(cli, ["scan", str(tree), "--jobs", "1"])
    assert text.exit_code == 1 and "AL203" in text.stdout
    source = tree / "sampling.cuh"
    source.write_text(SAMPLING + "// end of the sampling helpers\n")
    settle(source, 600)
    renders = _renders(monkeypatch)
    assert _sarif(tree) == sarif
    assert CliRunner().invoke(cli, ["scan", str(tree), "--jobs", "1"]).stdout == text.stdout
    assert renders == []


def test_the_newest_four_reports_are_kept(tree, tmp_path):
    for fmt in ("text", "json", "sarif", "markdown", "github", "html"):
        CliRunner().invoke(cli, ["scan", str(tree), "--jobs", "1", "--format", fmt, "-o", str(tmp_path / f"report.{fmt}")])
    stored = list((tmp_path / "cache").rglob("*-report-*.pkl"))
    assert len(stored) == 4
