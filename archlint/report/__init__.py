"""Reporters: one module per format, each a `render(report) -> str` over the same Report."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field

from archlint.model.binary import BinaryFacts
from archlint.model.findings import Diagnostic, Finding, Level
from archlint.model.gates import GateReport

FORMATS = ("text", "json", "sarif", "github", "html", "markdown")


@dataclass(frozen=True)
class Report:
    """What a reporter prints: the scan, after suppressions, config and baseline are applied."""

    root: str  # absolute; never printed, only used to read sources (SARIF line hashes)
    findings: tuple[Finding, ...]  # sorted; suppressed ones only when they are to be shown
    diagnostics: tuple[Diagnostic, ...] = ()
    gates: tuple[GateReport, ...] = ()
    rules: Mapping = field(default_factory=dict)  # rule id -> registry.RuleInfo
    levels: Mapping[str, Level] = field(default_factory=dict)  # rule id -> effective level
    targets: tuple[str, ...] = ()
    files_scanned: int = 0
    category: str = ""
    suppressed: int = 0  # findings silenced in source, shown or not
    baselined: int = 0  # findings matched by --baseline and left out
    colour: bool = False
    quiet: bool = False
    verbose: bool = False  # -v: list every gate, also those that exclude none of the targets
    targets_asked: bool = False  # the targets were asked for (--target or the config): lead with them
    version: str = ""
    binaries: tuple[BinaryFacts, ...] = ()  # the prebuilt extension modules scanned
    output_dir: str = ""  # absolute folder the report is written to, for the HTML's relative links; '' = the working directory


def render(fmt: str, report: Report) -> str:
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; choose from {', '.join(FORMATS)}")
    module = importlib.import_module(f"{__name__}.{fmt}")
    return module.render(report)


def sort_findings(findings) -> tuple[Finding, ...]:
    return tuple(sorted(findings, key=Finding.sort_key))
