"""--baseline reports only new findings, matching on (rule, file, symbol, snippet), never the line."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from click.testing import CliRunner

import archlint.engine
from archlint.cli.commands import cli
from archlint.model.findings import Finding, Level, Location
from archlint.model.scan import ScanResult
from archlint.postprocess.baseline import (
    BaselineError,
    filter_new,
    fingerprint,
    load_baseline,
)


def gate(line=2, symbol="gen_comm_module", snippet="flags = get_nvcc_flags_list(supported_major_versions=[9, 10])",
         path="pkg/jit.py", rule="AL101") -> Finding:
    return Finding(rule, Level.WARNING, "Gate excludes sm_120a", Location(path, line, 13), symbol=symbol, snippet=snippet)


def test_key_ignores_line_and_whitespace():
    assert fingerprint(gate(2)) == fingerprint(gate(40))
    assert fingerprint(gate(2)) == fingerprint(gate(2, snippet="flags =  get_nvcc_flags_list(supported_major_versions=[9,  10])"))
    assert fingerprint(gate()) != fingerprint(gate(symbol="other"))
    assert fingerprint(gate()) != fingerprint(gate(path="pkg/other.py"))
    assert fingerprint(gate()) != fingerprint(gate(rule="AL102"))
    assert fingerprint(gate()) != fingerprint(gate(snippet="flags = get_nvcc_flags_list(supported_major_versions=[9])"))


def test_each_baseline_entry_matches_once():
    new, matched = filter_new([gate(2), gate(9)], Counter({fingerprint(gate()): 1}))
    assert matched == 1 and [f.location.line for f in new] == [9]


def fake_engine(root, findings):
    def scan(options):
        return ScanResult(root=str(root), findings=tuple(findings), diagnostics=(), files_scanned=1)

    return scan


@pytest.mark.parametrize("name", ["baseline.json", "baseline.sarif"])
def test_moved_finding_keeps_its_baseline_match(tmp_path, monkeypatch, name):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "jit.py").write_text("x = 1\n" * 50)
    baseline = tmp_path / name
    monkeypatch.setattr(archlint.engine, "scan", fake_engine(tmp_path, [gate(2)]))
    first = CliRunner().invoke(cli, ["scan", str(tmp_path), "--write-baseline", str(baseline)])
    assert first.exit_code == 0 and baseline.is_file()

    # Lines were added above the gate: same finding, new line number.
    monkeypatch.setattr(archlint.engine, "scan", fake_engine(tmp_path, [gate(30)]))
    again = CliRunner().invoke(cli, ["scan", str(tmp_path), "--baseline", str(baseline)])
    assert again.exit_code == 0
    assert "AL101" not in again.output and "1 in baseline" in again.output

    # A genuinely new finding is still reported.
    monkeypatch.setattr(archlint.engine, "scan", fake_engine(tmp_path, [gate(30), gate(45, symbol="gen_other")]))
    new = CliRunner().invoke(cli, ["scan", str(tmp_path), "--baseline", str(baseline)])
    assert new.exit_code == 1
    assert "pkg/jit.py:45:13: AL101" in new.output and "pkg/jit.py:30:13" not in new.output


def test_baseline_written_in_the_format_its_suffix_names(tmp_path, monkeypatch):
    monkeypatch.setattr(archlint.engine, "scan", fake_engine(tmp_path, [gate()]))
    CliRunner().invoke(cli, ["scan", str(tmp_path), "--write-baseline", str(tmp_path / "b.sarif")])
    CliRunner().invoke(cli, ["scan", str(tmp_path), "--write-baseline", str(tmp_path / "b.json")])
    sarif = json.loads((tmp_path / "b.sarif").read_text())
    assert sarif["runs"][0]["results"][0]["partialFingerprints"]["archlint/v1"] == fingerprint(gate())
    assert json.loads((tmp_path / "b.json").read_text())["findings"][0]["fingerprint"] == fingerprint(gate())


def test_unreadable_baseline_is_a_usage_error(tmp_path, monkeypatch):
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    with pytest.raises(BaselineError):
        load_baseline(bad)
    monkeypatch.setattr(archlint.engine, "scan", fake_engine(tmp_path, [gate()]))
    result = CliRunner().invoke(cli, ["scan", str(tmp_path), "--baseline", str(bad)])
    assert result.exit_code == 2 and "not an archlint report" in result.output
