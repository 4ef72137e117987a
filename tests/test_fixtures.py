"""Every fixture case: the set of (file, line, rule) found equals the inline `expect:` annotations.

An annotation names the rule(s) expected on the next line that is not itself an annotation:
`// expect: AL201` or `# expect: AL101, AL103`. `ok:` marks a negative case (nothing of that
rule there); `todo-expect:` a known false negative. Cases named `al2xx-*` run with that rule
only; `gate-*` cases run with the gate rules AL101-AL108.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from archlint.engine import scan
from archlint.model.scan import ScanOptions

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
ANNOTATION = re.compile(r"^\s*(?://|#)\s*(expect|ok|todo-expect):\s*([A-Z0-9, ]+)")
GATE_RULES = ("AL101", "AL102", "AL103", "AL104", "AL105", "AL106", "AL107", "AL108")
CASES = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir() and re.match(r"^(al\d{3}|gate)-", p.name))


def expectations(case: Path) -> tuple[set[tuple[str, int, str]], set[tuple[str, int, str]]]:
    expected, negative = set(), set()
    for path in sorted(case.rglob("*")):
        if not path.is_file() or (path.suffix not in (".py", ".cu", ".cuh", ".h", ".hpp", ".cpp", ".cmake")
                                  and path.name != "CMakeLists.txt"):
            continue
        pending: list[tuple[str, str]] = []
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            match = ANNOTATION.match(line)
            if match:
                pending.extend((match.group(1), rule.strip()) for rule in match.group(2).split(",") if rule.strip())
                continue
            relative = path.relative_to(case).as_posix()
            for kind, rule in pending:
                (expected if kind == "expect" else negative).add((relative, number, rule))
            pending = []
    return expected, negative


def rules_for(case: str) -> tuple[str, ...]:
    if case.startswith("gate-"):
        return GATE_RULES
    return (case.split("-")[0].upper(),)


@pytest.mark.parametrize("case", CASES)
def test_fixture(case: str) -> None:
    root = FIXTURES / case
    rules = rules_for(case)
    result = scan(ScanOptions(paths=(str(root),), select=rules, use_cache=False, jobs=1))
    found = {(f.location.path, f.location.line, f.rule) for f in result.findings}
    expected, negative = expectations(root)
    expected = {e for e in expected if e[2] in rules}
    assert found == expected
    assert not (found & negative)


SUPPRESS_CASES = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir() and p.name.startswith("suppress-"))


@pytest.mark.parametrize("case", SUPPRESS_CASES)
def test_suppressed_fixture(case: str) -> None:
    """Through the CLI, which applies suppressions: suppressed findings are gone, the rest stay."""
    import json

    from click.testing import CliRunner

    from archlint.cli.commands import cli

    root = FIXTURES / case
    result = CliRunner().invoke(cli, ["scan", str(root), "--format", "json", "--no-cache", "--jobs", "1"])
    assert result.exit_code in (0, 1), result.output
    data = json.loads(result.output)
    # paths are from the repository's top (this checkout), the expectations from the fixture's folder
    found = {(f["path"].removeprefix(f"fixtures/{case}/"), f["line"], f["rule"]) for f in data["findings"]}
    expected, negative = expectations(root)
    assert expected <= found
    assert not (found & negative)
    shown = CliRunner().invoke(cli, ["scan", str(root), "--format", "json", "--no-cache", "--jobs", "1", "--no-suppress"])
    unsuppressed = {(f["path"].removeprefix(f"fixtures/{case}/"), f["line"], f["rule"])
                    for f in json.loads(shown.output)["findings"]}
    assert negative <= unsuppressed  # the suppressed findings exist; only the comment hides them
