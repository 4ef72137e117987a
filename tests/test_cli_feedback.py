"""What the command line says about what it did, on the stream a user reads it on: a baseline
written, a report written to a file, a path holding nothing archlint reads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import archlint.engine
from archlint.cli.commands import cli
from archlint.model.findings import Finding, Level, Location
from archlint.model.scan import ScanResult


def policy_finding(path: str = "pkg/jit.py") -> Finding:
    return Finding(rule="AL101", level=Level.WARNING, message="Gate `get_nvcc_flags_list([9, 10])` excludes sm_120a",
                   location=Location(path, 2, 13), targets=("sm_120a",), symbol="gen_comm_module",
                   snippet="flags = get_nvcc_flags_list(supported_major_versions=[9, 10])")


class FakeEngine:
    """Stands in for archlint.engine.scan: two files scanned, the findings given."""

    def __init__(self, root: Path, findings=()):
        self.root, self.findings = root, tuple(findings)

    def __call__(self, options):
        return ScanResult(root=str(self.root), findings=self.findings, diagnostics=(), files_scanned=2,
                          targets=("sm_90a", "sm_120a"))


def run(args, engine, monkeypatch):
    monkeypatch.setattr(archlint.engine, "scan", engine)
    return CliRunner().invoke(cli, [str(a) for a in args])


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ARCHLINT_CACHE_DIR", str(tmp_path / "cache"))


def test_write_baseline_writes_the_file_says_so_and_exits_0(tmp_path, monkeypatch):
    baseline = tmp_path / "baseline.json"
    engine = FakeEngine(tmp_path, [policy_finding(), policy_finding(path="pkg/b.py")])
    result = run(["scan", tmp_path, "--write-baseline", baseline], engine, monkeypatch)
    assert result.exit_code == 0
    assert result.stdout == ""  # no report: the baseline is the output
    assert result.stderr == f"archlint: wrote baseline of 2 findings to {baseline}\n"
    assert [f["path"] for f in json.loads(baseline.read_text())["findings"]] == ["pkg/b.py", "pkg/jit.py"]


def test_write_baseline_of_one_finding_with_a_report_file(tmp_path, monkeypatch):
    baseline, report = tmp_path / "baseline.sarif", tmp_path / "report.json"
    result = run(["scan", tmp_path, "--write-baseline", baseline, "-o", report], FakeEngine(tmp_path, [policy_finding()]), monkeypatch)
    assert result.exit_code == 0 and result.stdout == ""
    assert result.stderr == f"archlint: wrote baseline of 1 finding to {baseline}\n"
    assert len(json.loads(baseline.read_text())["runs"][0]["results"]) == 1
    assert json.loads(report.read_text())["summary"]["findings"] == 1


@pytest.mark.parametrize("name", ["report.json", "report.sarif", "report.txt"])
def test_report_to_a_file_leaves_the_summary_on_the_terminal(tmp_path, monkeypatch, name):
    out = tmp_path / name
    result = run(["scan", tmp_path, "-o", out], FakeEngine(tmp_path, [policy_finding()]), monkeypatch)
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.splitlines() == ["archlint: 1 finding (1 warning) in 2 files; 0 gates", f"archlint: wrote {out}"]
    assert out.stat().st_size > 0


def test_report_on_stdout_is_all_stdout_holds(tmp_path, monkeypatch):
    result = run(["scan", tmp_path, "--format", "json"], FakeEngine(tmp_path, [policy_finding()]), monkeypatch)
    assert json.loads(result.stdout)["summary"]["findings"] == 1
    assert result.stderr == ""


def test_quiet_report_to_a_file_prints_nothing(tmp_path, monkeypatch):
    result = run(["scan", tmp_path, "-q", "-o", tmp_path / "r.json"], FakeEngine(tmp_path, [policy_finding()]), monkeypatch)
    assert result.exit_code == 1 and result.output == ""


@pytest.mark.parametrize("files", [(), ("README.md", "setup.cfg")])
def test_a_folder_without_sources_says_so_instead_of_a_clean_report(tmp_path, cache, files):
    tree = tmp_path / "tree"
    tree.mkdir()
    for name in files:
        (tree / name).write_text("nothing archlint reads\n")
    result = CliRunner().invoke(cli, ["scan", str(tree)])
    assert result.exit_code == 0
    assert result.stdout == ""
    assert result.stderr == f"archlint: no CUDA or Python sources under {tree}\n"
    gates = CliRunner().invoke(cli, ["gates", str(tree)])
    assert gates.exit_code == 0 and gates.stderr == f"archlint: no CUDA or Python sources under {tree}\n"


def test_a_folder_without_sources_still_writes_a_machine_report(tmp_path, cache):
    """A CI job uploading the SARIF file finds it (with no results), and the log says why it is empty."""
    (tmp_path / "tree").mkdir()
    out = tmp_path / "archlint.sarif"
    result = CliRunner().invoke(cli, ["scan", str(tmp_path / "tree"), "-o", str(out)])
    assert result.exit_code == 0
    assert result.stderr.splitlines()[0] == f"archlint: no CUDA or Python sources under {tmp_path / 'tree'}"
    assert json.loads(out.read_text())["runs"][0]["results"] == []


def test_unreadable_input_points_at_the_first_line_in_every_format(tmp_path, cache):
    """AL902 about a whole file (binary here) names line 1: `path:0:` is out of range for editors,
    and a SARIF region's startLine must be at least 1."""
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "blob.cu").write_bytes(b"\x00\x01binary\x00")
    (tree / "ok.py").write_text("x = 1\n")
    text = CliRunner().invoke(cli, ["scan", str(tree)]).stdout
    assert "blob.cu:1: AL902 binary content (NUL bytes); skipped" in text.splitlines()
    (diagnostic,) = json.loads(CliRunner().invoke(cli, ["scan", str(tree), "--format", "json"]).stdout)["diagnostics"]
    assert diagnostic["line"] == 1
    sarif = json.loads(CliRunner().invoke(cli, ["scan", str(tree), "--format", "sarif"]).stdout)
    (note,) = sarif["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    location = note["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"].endswith("blob.cu")
    assert location.get("region", {"startLine": 1})["startLine"] >= 1
