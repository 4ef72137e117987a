"""GitHub Actions workflow commands: one `::error file=...,line=...::message` per finding."""

from __future__ import annotations

from archlint.model.findings import Level
from archlint.report import Report

_COMMAND = {Level.ERROR: "error", Level.WARNING: "warning", Level.NOTE: "notice"}


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def render(report: Report) -> str:
    lines = []
    for finding in report.findings:
        if finding.suppressed:
            continue
        loc = finding.location
        props = [f"file={_escape_property(loc.path)}", f"line={loc.line}", f"col={loc.col}"]
        if loc.end_line:
            props.append(f"endLine={loc.end_line}")
        props.append(f"title={_escape_property(finding.rule)}")
        lines.append(f"::{_COMMAND[finding.level]} {','.join(props)}::{_escape_data(finding.message)}")
    return "".join(line + "\n" for line in lines)
