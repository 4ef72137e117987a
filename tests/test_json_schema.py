"""The JSON Schema shipped for `--format json`: the reports of real fixtures validate against it,
it catches a report that breaks it, and it is a package resource (so it is in the wheel)."""

from __future__ import annotations

import copy
import json
import zipfile
from importlib import resources
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from archlint.cli import cli
from archlint.report.json import SCHEMA_FILE, schema

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SNAPSHOTS = sorted((FIXTURES / "snapshots").glob("*.json"))


def validator(definition: str | None = None) -> jsonschema.Draft202012Validator:
    full = schema()
    jsonschema.Draft202012Validator.check_schema(full)
    chosen = full if definition is None else {"$ref": f"#/$defs/{definition}", "$defs": full["$defs"]}
    return jsonschema.Draft202012Validator(chosen, format_checker=jsonschema.FormatChecker())


def snapshot_report(path: Path) -> dict:
    """A snapshot is the report followed by a `# exit N` line."""
    text = path.read_text(encoding="utf-8")
    return json.loads(text[: text.rindex("# exit")])


def invoke(*args: str) -> dict:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.output)


@pytest.mark.parametrize("path", SNAPSHOTS, ids=[p.stem for p in SNAPSHOTS])
def test_every_fixture_report_validates(path):
    validator().validate(snapshot_report(path))


def test_a_fresh_scan_validates():
    report = invoke("scan", str(FIXTURES / "gate-flashinfer"), "--no-cache", "--format", "json")
    assert report["gates"] and report["findings"]
    validator().validate(report)


def test_a_broken_report_is_rejected():
    report = snapshot_report(FIXTURES / "snapshots" / "gate-flashinfer.json")
    wrong = copy.deepcopy(report)
    wrong["gates"][0]["verdicts"][0]["verdict"] = "MAYBE"
    assert not validator().is_valid(wrong)
    missing = copy.deepcopy(report)
    del missing["findings"][0]["fingerprint"]
    assert not validator().is_valid(missing)
    extra = copy.deepcopy(report)
    extra["gates"][0]["undocumented"] = 1
    assert not validator().is_valid(extra)


def test_gates_and_rules_documents_validate():
    gates = invoke("gates", str(FIXTURES / "gate-flashinfer"), "--no-cache", "--format", "json")
    assert len(gates["gates"]) == 7
    validator("gates_report").validate(gates)
    rules = invoke("rules", "--format", "json")
    assert [rule["id"] for rule in rules["rules"]][:5] == ["AL101", "AL102", "AL103", "AL104", "AL105"]
    validator("rules_report").validate(rules)


def test_schema_is_a_package_resource():
    resource = resources.files("archlint.report").joinpath(SCHEMA_FILE)
    assert resource.is_file()
    assert json.loads(resource.read_text(encoding="utf-8"))["title"].startswith("archlint JSON report")


def test_schema_and_rule_data_are_in_a_built_wheel(tmp_path, monkeypatch):
    build = pytest.importorskip("hatchling.build")  # the build backend pyproject.toml names
    monkeypatch.chdir(FIXTURES.parent)
    wheel = tmp_path / build.build_wheel(str(tmp_path))
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    assert f"archlint/report/{SCHEMA_FILE}" in names
    assert "archlint/_rules/AL105.toml" in names and "archlint/_rules/kb/instructions.toml" in names
