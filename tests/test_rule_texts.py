"""What `archlint explain` and SARIF rule help tell a user: every placeholder rendered, every file
they cite present in what archlint ships."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from archlint.cli import cli
from archlint.knowledge.resources import rules_dir
from archlint.knowledge.rules import load_rules
from archlint.report import Report, render

REPO = Path(__file__).resolve().parents[1]
REPO_URL = "https://github.com/archlint/archlint/blob/main/"
PLACEHOLDER = re.compile(r"\{[a-z_]+\}")
URL = re.compile(r"https?://[^\s)>\"']+")
# a citation of a document or of shipped data: any *.md name, or a path under rules/ or docs/
CITED = re.compile(r"(?<![\w/.-])((?:rules|docs)/[\w./-]*[\w/]|[\w./-]*\w\.md)\b")


def explain(rule_id: str) -> str:
    result = CliRunner().invoke(cli, ["explain", rule_id])
    assert result.exit_code == 0, result.output
    return result.output


def sarif_help() -> dict[str, str]:
    log = json.loads(render("sarif", Report(root=str(REPO), findings=(), rules=load_rules(), version="0")))
    return {rule["id"]: rule["help"]["text"] + "\n" + rule["help"]["markdown"] for rule in log["runs"][0]["tool"]["driver"]["rules"]}


def texts() -> list[tuple[str, str]]:
    helps = sarif_help()
    assert set(helps) == set(load_rules())
    return [(f"explain {rule_id}", explain(rule_id)) for rule_id in load_rules()] + \
           [(f"SARIF help {rule_id}", text) for rule_id, text in helps.items()]


@pytest.fixture(scope="module")
def all_texts() -> list[tuple[str, str]]:
    return texts()


def test_no_placeholder_is_left_unrendered(all_texts):
    left = [(where, found) for where, text in all_texts for found in PLACEHOLDER.findall(text)]
    assert left == []


def test_every_cited_file_ships(all_texts):
    shipped = rules_dir()  # archlint/_rules in a wheel: the rules/ folder
    missing = []
    for where, text in all_texts:
        for url in URL.findall(text):
            if url.startswith(REPO_URL) and not (REPO / url.removeprefix(REPO_URL).split("#")[0]).is_file():
                missing.append((where, url))
        for cited in CITED.findall(URL.sub("", text)):
            inside = cited.removeprefix("rules/") if cited.startswith("rules/") else None
            if inside is None or not (shipped / inside).exists():
                missing.append((where, cited))
    assert missing == []


def test_the_unshipped_design_notes_are_never_cited(all_texts):
    assert [where for where, text in all_texts if "DESIGN.md" in text or "FACTS.md" in text] == []


def test_a_cited_file_outside_the_wheel_is_caught():
    """The check above can fail: a made-up citation of a repository-only file is reported."""
    text = "see DESIGN.md and rules/kb/instructions.toml and rules/kb/nowhere.toml"
    found = CITED.findall(text)
    assert found == ["DESIGN.md", "rules/kb/instructions.toml", "rules/kb/nowhere.toml"]
    assert not (rules_dir() / "kb/nowhere.toml").exists() and (rules_dir() / "kb/instructions.toml").exists()
