"""The command line as a user meets it: output lines, exit codes, flags, optional commands."""

from __future__ import annotations

import importlib.machinery
import json
import subprocess
import sys
import types
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

import archlint.engine
from archlint.cli.commands import cli
from archlint.model.findings import (
    Evidence,
    EvidenceKind,
    Finding,
    Fix,
    Level,
    Location,
    Suppression,
    Verdict,
)
from archlint.model.gates import GateReport, TargetVerdict
from archlint.model.scan import ScanResult

GATE_LINE = "    flags = get_nvcc_flags_list(supported_major_versions=[9, 10])\n"


def policy_finding(line: int = 2, path: str = "pkg/jit.py") -> Finding:
    return Finding(
        rule="AL101",
        level=Level.WARNING,
        message="Gate `get_nvcc_flags_list([9, 10])` excludes sm_120a, but nothing it guards depends on what sm_120a lacks",
        location=Location(path, line, 13),
        targets=("sm_120a",),
        evidence=(Evidence(Location("csrc/comm.cu", 4), "compiled by the gated JIT spec", EvidenceKind.COMPILES, source="csrc/comm.cu"),),
        symbol="gen_comm_module",
        snippet=GATE_LINE.strip(),
        fixes=(Fix(Location(path, line, 58, line, 65), "[9, 10, 12]", "add 12 to the gate's list"),),
    )


def gate_report(line: int = 2) -> GateReport:
    return GateReport(
        gate_id="pkg/jit.py:gen_comm_module",
        text="get_nvcc_flags_list(supported_major_versions=[9, 10])",
        location=Location("pkg/jit.py", line, 13),
        admits=("sm_90a", "sm_100a"),
        verdicts=(
            TargetVerdict("sm_120a", Verdict.POLICY, "nothing guarded depends on sm_120a",
                          (Evidence(Location("pkg/jit.py", line), "gate", EvidenceKind.GATE),
                           Evidence(Location("csrc/comm.cu", 4), "source", EvidenceKind.COMPILES, source="csrc/comm.cu"))),
            TargetVerdict("sm_80", Verdict.GENUINE, "cp.async.bulk needs sm_90",
                          (Evidence(Location("include/comm.cuh", 40), "cp.async.bulk", EvidenceKind.CONSTRUCT, name="cp.async.bulk"),)),
        ),
        function="gen_comm_module",
    )


def make_tree(root: Path, gate_line: int = 2) -> None:
    (root / "pkg").mkdir(parents=True, exist_ok=True)
    (root / "csrc").mkdir(exist_ok=True)
    lines = ["def gen_comm_module():\n"] + ["\n"] * (gate_line - 2) + [GATE_LINE, "    return flags\n"]
    (root / "pkg" / "jit.py").write_text("".join(lines))
    (root / "csrc" / "comm.cu").write_text("__global__ void k() {}\n")


class FakeEngine:
    """Stands in for archlint.engine.scan: records the options, returns a hand-built result."""

    def __init__(self, root: Path, findings=(), suppressions=(), gates=(), diagnostics=()):
        self.root, self.findings, self.suppressions = root, tuple(findings), tuple(suppressions)
        self.gates, self.diagnostics, self.calls = tuple(gates), tuple(diagnostics), []

    def __call__(self, options):
        self.calls.append(options)
        return ScanResult(root=str(self.root), findings=self.findings, diagnostics=self.diagnostics,
                          gates=self.gates, files_scanned=2, targets=("sm_90a", "sm_120a"),
                          suppressions=self.suppressions)


@pytest.fixture
def tree(tmp_path):
    make_tree(tmp_path)
    return tmp_path


def run(args, engine=None, monkeypatch=None):
    if engine is not None:
        monkeypatch.setattr(archlint.engine, "scan", engine)
    return CliRunner().invoke(cli, [str(a) for a in args])


def test_finding_fails_at_default_warning_level(tree, monkeypatch):
    result = run(["scan", tree], FakeEngine(tree, [policy_finding()]), monkeypatch)
    assert result.exit_code == 1
    first = result.output.splitlines()[0]
    assert first.startswith("pkg/jit.py:2:13: AL101 Gate `get_nvcc_flags_list([9, 10])` excludes sm_120a")
    assert "    csrc/comm.cu:4: compiled by the gated JIT spec" in result.output


@pytest.mark.parametrize("fail_on, code", [("error", 0), ("warning", 1), ("note", 1), ("none", 0)])
def test_fail_on(tree, monkeypatch, fail_on, code):
    result = run(["scan", tree, "--fail-on", fail_on], FakeEngine(tree, [policy_finding()]), monkeypatch)
    assert result.exit_code == code


def test_clean_tree_exits_zero(tree, monkeypatch):
    result = run(["scan", tree], FakeEngine(tree), monkeypatch)
    assert result.exit_code == 0
    assert "0 findings in 2 files" in result.output


def test_gate_block_lists_each_excluded_target_with_chain(tree, monkeypatch):
    result = run(["scan", tree], FakeEngine(tree, [policy_finding()], gates=[gate_report()]), monkeypatch)
    out = result.output
    lines = out.splitlines()
    head = lines.index("`gen_comm_module` at pkg/jit.py:2: get_nvcc_flags_list(supported_major_versions=[9, 10]) (admits sm_90a, sm_100a)")
    # arch order: sm_80 before sm_120a (as strings, sm_120a sorts first)
    assert lines[head + 1:head + 5] == [
        "  sm_80  GENUINE  cp.async.bulk needs sm_90",
        "      include/comm.cuh:40",
        "  sm_120a  POLICY  nothing guarded depends on sm_120a",
        "      pkg/jit.py:2 -> csrc/comm.cu:4",
    ]
    assert "POLICY        1       1" in out and "GENUINE       1       1" in out


def test_quiet_prints_findings_only(tree, monkeypatch):
    result = run(["scan", tree, "--quiet"], FakeEngine(tree, [policy_finding()], gates=[gate_report()]), monkeypatch)
    assert [line for line in result.output.splitlines() if not line.startswith("    ")] == [
        policy_finding().location.path + ":2:13: AL101 " + policy_finding().message
    ]


def test_no_colour_when_not_a_tty(tree, monkeypatch):
    result = run(["scan", tree], FakeEngine(tree, [policy_finding()]), monkeypatch)
    assert "\x1b[" not in result.output


def test_select_and_ignore_by_name(tree, monkeypatch):
    engine = FakeEngine(tree, [policy_finding()])
    assert run(["scan", tree, "--ignore", "policy-gate"], engine, monkeypatch).exit_code == 0
    assert run(["scan", tree, "--select", "AL2"], engine, monkeypatch).exit_code == 0
    assert run(["scan", tree, "--select", "AL1,AL2"], engine, monkeypatch).exit_code == 1
    assert engine.calls[-1].select[:1] == ("AL101",)


def test_unknown_rule_is_a_usage_error(tree, monkeypatch):
    result = run(["scan", tree, "--select", "AL999"], FakeEngine(tree), monkeypatch)
    assert result.exit_code == 2
    assert "unknown rule 'AL999'" in result.output
    assert "Traceback" not in result.output


def test_bad_target_is_a_usage_error(tree, monkeypatch):
    result = run(["scan", tree, "--target", "sm_12"], FakeEngine(tree), monkeypatch)
    assert result.exit_code == 2 and "sm_12" in result.output


def test_targets_and_options_reach_the_engine(tree, monkeypatch):
    engine = FakeEngine(tree)
    run(["scan", tree, "--target", "sm_120a,sm_90a", "--no-cache", "--jobs", "3", "--include-dir", tree / "csrc"], engine, monkeypatch)
    options = engine.calls[0]
    assert options.targets == ("sm_120a", "sm_90a")
    assert options.use_cache is False and options.jobs == 3
    assert options.include_dirs == (str((tree / "csrc").resolve()),)
    assert options.paths == (str(tree),)


def test_internal_error_is_one_line_exit_2(tree, monkeypatch):
    def broken(options):
        raise RuntimeError("boom")

    result = run(["scan", tree], broken, monkeypatch)
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == ["archlint: internal error: RuntimeError: boom"]
    debug = run(["scan", tree, "--debug"], broken, monkeypatch)
    assert debug.exit_code == 2 and "Traceback" in debug.output


def test_interrupt_exits_130_and_leaves_no_output_file(tree, monkeypatch):
    def interrupted(options):
        raise KeyboardInterrupt

    out = tree / "report.sarif"
    result = run(["scan", tree, "-o", out], interrupted, monkeypatch)
    assert result.exit_code == 130
    assert not out.exists()


def test_output_file_written_whole(tree, monkeypatch):
    out = tree / "out" / "report.json"
    out.parent.mkdir()
    result = run(["scan", tree, "--format", "json", "-o", out], FakeEngine(tree, [policy_finding()]), monkeypatch)
    assert result.exit_code == 1 and result.stdout == ""
    data = json.loads(out.read_text())
    assert data["version"] == 1
    assert [(f["rule"], f["path"], f["line"], f["level"]) for f in data["findings"]] == [("AL101", "pkg/jit.py", 2, "warning")]
    assert list(out.parent.iterdir()) == [out]  # no temporary file left behind


def test_json_is_sorted_and_deterministic(tree, monkeypatch):
    engine = FakeEngine(tree, [policy_finding(), policy_finding(path="pkg/a.py")], gates=[gate_report()])
    first = run(["scan", tree, "--format", "json"], engine, monkeypatch).output
    engine.findings = engine.findings[::-1]
    assert run(["scan", tree, "--format", "json"], engine, monkeypatch).output == first
    data = json.loads(first)
    assert list(data) == sorted(data)
    assert [f["path"] for f in data["findings"]] == ["pkg/a.py", "pkg/jit.py"]
    assert [v["target"] for v in data["gates"][0]["verdicts"]] == ["sm_80", "sm_120a"]  # arch order
    assert data["gates"][0]["function"] == "gen_comm_module"
    assert data["gates"][0]["verdicts"][1] == {
        "target": "sm_120a", "verdict": "POLICY", "reason": "nothing guarded depends on sm_120a",
        "evidence": [{"path": "pkg/jit.py", "line": 2, "col": 1, "message": "gate"},
                     {"path": "csrc/comm.cu", "line": 4, "col": 1, "message": "source"}],
        "empty_kernels": [],
    }


def test_github_workflow_commands(tree, monkeypatch):
    result = run(["scan", tree, "--format", "github"], FakeEngine(tree, [policy_finding()]), monkeypatch)
    assert result.output == (
        "::warning file=pkg/jit.py,line=2,col=13,title=AL101::" + policy_finding().message + "\n"
    )


def test_suppressed_finding_hidden_unless_asked(tree, monkeypatch):
    sup = (("pkg/jit.py", (Suppression(2, ("policy-gate",), False, 2),)),)
    engine = FakeEngine(tree, [policy_finding()], suppressions=sup)
    hidden = run(["scan", tree], engine, monkeypatch)
    assert hidden.exit_code == 0 and "AL101" not in hidden.output and "1 suppressed" in hidden.output
    shown = run(["scan", tree, "--show-suppressed"], engine, monkeypatch)
    assert shown.exit_code == 0 and "AL101" in shown.output and "[suppressed]" in shown.output
    ignored = run(["scan", tree, "--no-suppress"], engine, monkeypatch)
    assert ignored.exit_code == 1 and "[suppressed]" not in ignored.output


def test_unused_and_unknown_suppressions_reported(tree, monkeypatch):
    sup = (("pkg/jit.py", (Suppression(9, ("AL201", "AL2O1"), False, 8),)),)
    result = run(["scan", tree], FakeEngine(tree, suppressions=sup), monkeypatch)
    assert result.exit_code == 1
    assert "pkg/jit.py:8:1: AL900 Unused suppression" in result.output
    assert "pkg/jit.py:8:1: AL901 Unknown rule `AL2O1`" in result.output
    assert run(["scan", tree, "--no-suppress"], FakeEngine(tree, suppressions=sup), monkeypatch).exit_code == 0


def git_init(root: Path) -> None:
    subprocess.run(["git", "init", "-q", str(root)], check=True)


def test_explicit_files_in_git_repo_scan_root_report_files(tree, monkeypatch):
    git_init(tree)
    other = policy_finding(path="pkg/other.py")
    engine = FakeEngine(tree, [policy_finding(), other])
    monkeypatch.chdir(tree)
    result = run(["scan", "pkg/jit.py"], engine, monkeypatch)
    options = engine.calls[0]
    assert options.paths == (str(tree.resolve()),)
    assert options.report_paths == ("pkg/jit.py",)
    assert "pkg/jit.py:2:13: AL101" in result.output and "pkg/other.py" not in result.output


def test_diff_prints_the_gate_fix(tree, monkeypatch):
    result = run(["scan", tree, "--diff"], FakeEngine(tree, [policy_finding()]), monkeypatch)
    assert result.exit_code == 1
    assert "--- a/pkg/jit.py\n+++ b/pkg/jit.py\n" in result.output
    assert "+    flags = get_nvcc_flags_list(supported_major_versions=[9, 10, 12])" in result.output
    assert (tree / "pkg" / "jit.py").read_text().count("[9, 10]") == 1  # --diff writes nothing


def test_fix_applies_in_git_tree_then_rescans(tree, monkeypatch):
    git_init(tree)
    engine = FakeEngine(tree, [policy_finding()])

    def rescan(options):
        result = engine(options)
        if "[9, 10, 12]" in (tree / "pkg" / "jit.py").read_text():
            return ScanResult(root=result.root, findings=(), diagnostics=(), files_scanned=2)
        return result

    result = run(["scan", tree, "--fix"], rescan, monkeypatch)
    assert "supported_major_versions=[9, 10, 12]" in (tree / "pkg" / "jit.py").read_text()
    assert result.exit_code == 0 and len(engine.calls) == 2


def test_fix_refused_outside_git(tree, monkeypatch):
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tree.parent))
    result = run(["scan", tree, "--fix"], FakeEngine(tree, [policy_finding()]), monkeypatch)
    assert "not inside a git work tree" in result.output
    assert "[9, 10, 12]" not in (tree / "pkg" / "jit.py").read_text()
    assert result.exit_code == 1


def test_explain_by_id_and_name():
    by_id = CliRunner().invoke(cli, ["explain", "AL103"])
    by_name = CliRunner().invoke(cli, ["explain", "empty-kernel-gate"])
    assert by_id.exit_code == 0 and by_id.output == by_name.output
    assert by_id.output.startswith("# AL103 empty-kernel-gate")
    assert "## Why is this bad?" in by_id.output
    unknown = CliRunner().invoke(cli, ["explain", "nope"])
    assert unknown.exit_code == 2 and "unknown rule" in unknown.output


def test_rules_lists_id_name_level_status():
    result = CliRunner().invoke(cli, ["rules"])
    assert result.exit_code == 0
    assert "AL101  policy-gate" in result.output
    line = next(line for line in result.output.splitlines() if line.startswith("AL301"))
    assert line.split() == ["AL301", "device-excluded-by-policy", "warning", "preview"]


def test_version_imports_nothing_heavy():
    code = (
        "import sys; from archlint.cli import main\n"
        "try:\n    main(['--version'])\nexcept SystemExit as e:\n    assert e.code == 0\n"
        "heavy = [m for m in ('tree_sitter', 'networkx', 'sarif_om', 'archlint.engine', 'archlint.engine.pipeline') if m in sys.modules]\n"
        "print('HEAVY', heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == ["archlint 0.1.0", "HEAVY []"]


def test_optional_command_registered_when_importable(monkeypatch):
    module = types.ModuleType("archlint.cli.graph")
    module.__spec__ = importlib.machinery.ModuleSpec("archlint.cli.graph", None)
    module.graph_command = click.Command("graph", callback=lambda: click.echo("graph ran"))
    monkeypatch.setitem(sys.modules, "archlint.cli.graph", module)
    result = CliRunner().invoke(cli, ["graph"])
    assert result.exit_code == 0 and result.output == "graph ran\n"
    assert "graph" in CliRunner().invoke(cli, ["--help"]).output


def test_optional_command_absent_is_skipped(monkeypatch):
    monkeypatch.setitem(sys.modules, "archlint.cli.graph", None)  # import fails
    result = CliRunner().invoke(cli, ["--help"])
    assert result.exit_code == 0 and "  graph" not in result.output


def test_python_dash_m_entry_point():
    out = subprocess.run([sys.executable, "-m", "archlint", "--version"], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "archlint 0.1.0"


def test_colour_only_on_a_terminal_without_no_color(monkeypatch):
    import archlint.cli.scanning as cli_module
    from archlint.knowledge.rules import load_rules
    from archlint.report import Report, render

    monkeypatch.setattr(sys.stdout, "isatty", lambda: True, raising=False)
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert cli_module.use_colour(None, "text") is True
    assert cli_module.use_colour(Path("out.txt"), "text") is False
    assert cli_module.use_colour(None, "json") is False
    monkeypatch.setenv("NO_COLOR", "1")
    assert cli_module.use_colour(None, "text") is False
    coloured = render("text", Report(root="", findings=(policy_finding(),), rules=load_rules(), colour=True))
    assert "\x1b[33mAL101\x1b[0m" in coloured
