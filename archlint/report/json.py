"""The JSON report, schema version 1 (documented in docs/cli.md). Sorted keys, stable order."""

from __future__ import annotations

import json
from importlib import resources
from collections import Counter
from collections.abc import Mapping

from archlint.knowledge.arch import arch_order
from archlint.knowledge.rules import RuleInfo
from archlint.model.findings import Diagnostic, Evidence, Finding, Fix, Location
from archlint.model.gates import CheckedConstruct, GateReport, Reached, TargetVerdict
from archlint.postprocess.baseline import fingerprint
from archlint.report import Report
from archlint.report.extensions import extension_dict

SCHEMA_VERSION = 1
SCHEMA_FILE = "schema/scan.schema.json"  # JSON Schema of these documents, shipped in this package


def schema() -> dict:
    """The JSON Schema of `--format json` (its $defs describe the gates and rules documents too)."""
    return json.loads(resources.files(__package__).joinpath(SCHEMA_FILE).read_text(encoding="utf-8"))


def render(report: Report) -> str:
    document = {
        **_head(report),
        "findings": [finding_dict(f, report) for f in report.findings],
        "diagnostics": [diagnostic_dict(d) for d in sorted(report.diagnostics, key=_diagnostic_key)],
        "summary": _summary(report),
    }
    if report.binaries:
        document["extensions"] = [extension_dict(facts, report.targets) for facts in report.binaries]
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def _head(report: Report) -> dict:
    """What both documents open with: the format, the tool, the targets, the files and the gates."""
    return {
        "version": SCHEMA_VERSION,
        "tool": {"name": "archlint", "version": report.version},
        "targets": list(report.targets),
        "files_scanned": report.files_scanned,
        "gates": [gate_dict(g) for g in sorted(report.gates, key=lambda g: (g.location, g.gate_id))],
    }


def render_gates(report: Report) -> str:
    """`archlint gates --format json`: the gates and their verdicts, as in the scan report."""
    document = {**_head(report), "verdicts": dict(Counter(v.verdict.value for g in report.gates for v in g.verdicts))}
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def rules_document(rules: Mapping[str, RuleInfo]) -> str:
    """`archlint rules --format json`: every rule, in id order."""
    document = {"version": SCHEMA_VERSION, "rules": [rule_dict(info) for info in rules.values()]}
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def rule_dict(info: RuleInfo) -> dict:
    return {
        "id": info.id,
        "name": info.name,
        "level": info.severity.value,
        "confidence": info.confidence,
        "status": info.status,
        "since": info.since,
        "languages": list(info.languages),
        "tags": list(info.tags),
        "message_template": info.message,
        "help": info.help,
        "description": info.description,
        "url": info.url,
    }


def location_dict(location: Location) -> dict:
    out = {"path": location.path, "line": location.line, "col": location.col}
    if location.end_line:
        out.update(end_line=location.end_line, end_col=location.end_col)
    return out


def evidence_dict(hop: Evidence) -> dict:
    return {**location_dict(hop.location), "message": hop.message}


def fix_dict(fix: Fix) -> dict:
    return {**location_dict(fix.location), "replacement": fix.replacement, "description": fix.description}


def finding_dict(finding: Finding, report: Report) -> dict:
    info = report.rules.get(finding.rule)
    return {
        "rule": finding.rule,
        "name": info.name if info else "",
        "level": finding.level.value,
        "message": finding.message,
        **location_dict(finding.location),
        "symbol": finding.symbol,
        "snippet": finding.snippet,
        "targets": list(finding.targets),
        "evidence": [evidence_dict(hop) for hop in finding.evidence],
        "fixes": [fix_dict(fix) for fix in finding.fixes],
        "properties": dict(finding.properties),
        "suppressed": finding.suppressed,
        "fingerprint": fingerprint(finding),
    }


def gate_dict(gate: GateReport) -> dict:
    return {
        "id": gate.gate_id,
        "text": gate.text,
        "function": gate.function,
        **location_dict(gate.location),
        "admits": list(gate.admits),
        "sources": list(gate.sources),
        "verdicts": [verdict_dict(v) for v in sorted(gate.verdicts, key=lambda v: arch_order(v.target))],
        **({"arch_test": {**location_dict(gate.arch_test.location), "text": gate.arch_test.name}}
           if gate.arch_test is not None else {}),
    }


def verdict_dict(verdict: TargetVerdict) -> dict:
    out: dict[str, object] = {
        "target": verdict.target,
        "verdict": verdict.verdict.value,
        "reason": verdict.reason,
        "evidence": [evidence_dict(hop) for hop in verdict.evidence],
        "empty_kernels": [hop.message for hop in verdict.empty_kernels],
    }
    if verdict.build:
        out["build"] = verdict.build
    if verdict.reached is not None:
        out["checked"] = checked_dict(verdict.reached)
    return out


def checked_dict(reached: Reached) -> dict:
    """Everything a POLICY verdict checked, in full (the text report shows the first few)."""
    return {
        "units": list(reached.units),
        "headers": list(reached.headers),
        "kernels": [{**location_dict(hop.location), "name": hop.name} for hop in reached.kernels],
        "constructs": [construct_dict(item) for item in reached.constructs],
    }


def construct_dict(item: CheckedConstruct) -> dict:
    return {
        **location_dict(item.hop.location),
        "name": item.hop.name,
        "guard": item.guard,
        "guard_line": item.guard_line,
        "holds": item.holds,
        "requirement": item.requirement,
        "needs": item.needs,
        "message": item.hop.message,
    }


def diagnostic_dict(diagnostic: Diagnostic) -> dict:
    return {"rule": diagnostic.rule, "path": diagnostic.path, "line": diagnostic.line, "message": diagnostic.message}


def _diagnostic_key(d: Diagnostic) -> tuple:
    return (d.path, d.line, d.rule, d.message)


def _summary(report: Report) -> dict:
    shown = [f for f in report.findings if not f.suppressed]
    verdicts = Counter(v.verdict.value for g in report.gates for v in g.verdicts)
    return {
        "findings": len(shown),
        "by_level": dict(Counter(f.level.value for f in shown)),
        "by_rule": dict(Counter(f.rule for f in shown)),
        "verdicts": dict(verdicts),
        "suppressed": report.suppressed,
        "baselined": report.baselined,
    }
