"""Options that must not quietly do the wrong thing: the format an output file's name asks for,
`--diff` with options it cannot honour, `--config` with any file name, a `graph --gate` that
matches nothing, and click's usage errors in archlint's one-line form."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_cli import FakeEngine, make_tree, policy_finding

import archlint.engine
from archlint.cli.commands import cli

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


@pytest.fixture
def tree(tmp_path, monkeypatch):
    make_tree(tmp_path)
    monkeypatch.setattr(archlint.engine, "scan", FakeEngine(tmp_path, [policy_finding()]))
    return tmp_path


def invoke(*args) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize(("name", "check"), [
    ("report.sarif", lambda text: json.loads(text)["version"] == "2.1.0"),
    ("report.json", lambda text: json.loads(text)["version"] == 1),
    ("report.txt", lambda text: text.startswith("pkg/jit.py:2:13: AL101 ")),
])
def test_output_suffix_chooses_the_format(tree, name, check):
    code, stdout, _ = invoke("scan", tree, "-o", tree / name)
    assert code == 1 and stdout == ""
    assert check((tree / name).read_text())


def test_explicit_format_wins_over_the_suffix(tree):
    invoke("scan", tree, "--format", "json", "-o", tree / "report.sarif")
    assert json.loads((tree / "report.sarif").read_text())["version"] == 1


@pytest.mark.parametrize(("args", "says"), [
    (("--diff", "--fix"), "--diff and --fix cannot be combined"),
    (("--diff", "--format", "sarif"), "--diff prints a unified diff, not a sarif report"),
    (("--diff", "-o", "fixes.json"), "--diff prints a unified diff, not a json report"),
    (("--diff", "--write-baseline", "base.json"), "--diff and --write-baseline cannot be combined"),
])
def test_diff_refuses_what_it_cannot_honour(tree, args, says):
    code, stdout, stderr = invoke("scan", tree, *args)
    assert code == 2 and stdout == ""
    lines = stderr.splitlines()
    assert lines[0].startswith(f"archlint: error: {says}") and len(lines) <= 2, stderr
    assert "[9, 10, 12]" not in (tree / "pkg" / "jit.py").read_text()


def test_diff_to_a_file_writes_the_diff_there(tree):
    code, stdout, _ = invoke("scan", tree, "--diff", "-o", tree / "widen.patch")
    assert code == 1 and stdout == ""
    assert (tree / "widen.patch").read_text().startswith("--- a/pkg/jit.py\n+++ b/pkg/jit.py\n")


def test_usage_error_is_one_line_and_a_hint(tree):
    code, stdout, stderr = invoke("scan", tree, "--formt", "json")
    assert code == 2 and stdout == ""
    assert stderr.splitlines() == ["archlint: error: No such option '--formt'. Did you mean '--format'?",
                                   "Try 'archlint scan --help' for help."]
    code, _, stderr = invoke("scan", tree, "--format", "yaml")
    assert code == 2 and stderr.splitlines()[0].startswith("archlint: error: Invalid value for '--format': 'yaml'")
    assert len(stderr.splitlines()) == 2


@pytest.mark.parametrize("text", [
    '[project]\nname = "x"\n\n[tool.archlint]\ntargets = ["sm_89"]\n',  # pyproject-shaped, any name
    'targets = ["sm_89"]\n',  # archlint.toml-shaped, any name
])
def test_config_file_of_either_shape_whatever_its_name(tree, text):
    (tree / "ci-archlint.toml").write_text(text)
    engine = FakeEngine(tree)
    archlint.engine.scan = engine  # restored by the tree fixture's monkeypatch
    code, _, stderr = invoke("scan", tree, "--config", tree / "ci-archlint.toml")
    assert code == 0, stderr
    assert engine.calls[0].targets == ("sm_89",)


def test_config_file_with_another_tools_table_only_is_an_error(tree):
    (tree / "ci.toml").write_text('[tool.ruff]\nline-length = 100\n')
    code, _, stderr = invoke("scan", tree, "--config", tree / "ci.toml")
    assert code == 2 and "no [tool.archlint]" in stderr and len(stderr.splitlines()) == 1


def test_graph_gate_matching_nothing_is_an_error():
    code, stdout, stderr = invoke("graph", FIXTURES / "gate-flashinfer", "--no-cache", "--gate", "no_such_gate")
    assert code == 2 and stdout == ""
    assert stderr == "archlint: error: no gate's text or function contains 'no_such_gate'; `archlint graph PATH` draws them all\n"
