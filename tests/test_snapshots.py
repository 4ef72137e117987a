"""Every fixture's whole report, text and JSON, compared with the copy kept in fixtures/snapshots/.

A behaviour change shows as a diff of those files. Refresh them after an intended change with

    python -m pytest -q -p no:cacheprovider tests/test_snapshots.py --update-snapshots

and review the diff before committing it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import inside_fixture

from archlint.cli.commands import cli

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
SNAPSHOTS = FIXTURES / "snapshots"
CASES = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir() and p.name != "snapshots")
FORMATS = {"text": "txt", "json": "json"}


def report(case: str, fmt: str) -> str:
    """The report `archlint scan . --format FMT` prints from inside the fixture, with its exit code."""
    with inside_fixture(FIXTURES / case):
        result = CliRunner().invoke(cli, ["scan", ".", "--format", fmt, "--no-cache", "--jobs", "1"])
    assert result.exit_code in (0, 1), result.output
    return f"{result.output}# exit {result.exit_code}\n"


@pytest.mark.parametrize("fmt", sorted(FORMATS))
@pytest.mark.parametrize("case", CASES)
def test_report_matches_snapshot(case: str, fmt: str, request: pytest.FixtureRequest) -> None:
    stored = SNAPSHOTS / f"{case}.{FORMATS[fmt]}"
    actual = report(case, fmt)
    if request.config.getoption("--update-snapshots"):
        SNAPSHOTS.mkdir(exist_ok=True)
        stored.write_text(actual)
        return
    assert stored.is_file(), f"no snapshot for {case}: run with --update-snapshots"
    assert actual == stored.read_text(), f"{case} {fmt} report differs from {stored}"
