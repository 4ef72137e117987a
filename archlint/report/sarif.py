"""SARIF 2.1.0 for GitHub code scanning, written as plain data and dumped with sorted keys, so
the bytes are deterministic.

The document is what sarif_om objects serialised with jschema_to_python's `to_json` give, levels
written back: tests/sarif_om_reference.py keeps that construction and tests check both agree on
every field. Building objects to serialise them took most of a warm scan's time on a large tree.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from urllib.parse import quote

from archlint.model.findings import Diagnostic, Evidence, Finding, Fix, Level, Location
from archlint.postprocess.baseline import FINGERPRINT_KEY, LineHasher, decided_text, fingerprint
from archlint.report import Report
from archlint.report.jsontext import dumps_indented

SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
INFORMATION_URI = "https://github.com/archlint/archlint"
SRCROOT = "%SRCROOT%"
# GitHub code scanning's limits (see docs/github-code-scanning.md): 25,000 results per run is
# a hard limit; per result, GitHub keeps only 100 locations and 1,000 thread flow locations
# (hard limits 1,000 and 10,000), so longer evidence chains are cut to what it displays.
MAX_RESULTS = 25_000
MAX_LOCATIONS = 100
MAX_THREAD_FLOW_LOCATIONS = 1_000
MAX_TAGS = 20
_PRECISION = {"high": "high", "medium": "medium", "low": "low"}


def render(report: Report) -> str:
    return dumps_indented(document(report)) + "\n"


def document(report: Report) -> dict:
    """The SARIF log as plain data, as sarif_om with jschema_to_python's `to_json` would write it
    (tests check it does): a property that is None, or that equals the schema's default (a rule
    index of -1), is left out; levels are always written."""
    rule_ids = sorted(report.rules)
    findings = _capped(report.findings)
    hashes = _LineHashes(report.root, findings)
    index = {rule_id: i for i, rule_id in enumerate(rule_ids)}
    run = {
        "tool": {"driver": _driver(report, rule_ids)},
        "results": [_result(f, index, hashes) for f in findings],
        "invocations": [_invocation(report, len(report.findings) - len(findings))],
        "columnKind": "unicodeCodePoints",
        "originalUriBaseIds": {SRCROOT: {"uri": _root_uri(report.root)}},
    }
    if report.category:
        run["automationDetails"] = {"id": report.category if report.category.endswith("/") else f"{report.category}/"}
    return {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}


def _present(**properties) -> dict:
    return {name: value for name, value in properties.items() if value is not None}


# ---------------------------------------------------------------- tool and rules


def _driver(report: Report, rule_ids: list[str]) -> dict:
    return _present(name="archlint", version=report.version, semanticVersion=report.version, informationUri=INFORMATION_URI,
                    rules=[_rule(report.rules[rule_id], report) for rule_id in rule_ids])


def _rule(info, report: Report) -> dict:
    bag = {"tags": list(info.tags[:MAX_TAGS]), "precision": _PRECISION.get(info.confidence, "medium"), "status": info.status}
    return _present(
        id=info.id,
        name=info.name,
        shortDescription=_present(text=info.summary),
        fullDescription=_present(text=_section(info.description, "What it does")),
        help=_present(text=f"{info.help}\n\n{info.description}", markdown=info.description),
        helpUri=info.url,
        defaultConfiguration={"level": _level(report, info.id).value},
        properties=bag,
    )


def _section(markdown: str, heading: str) -> str:
    """The text under `## heading`, up to the next heading; whitespace collapsed."""
    body = markdown.split(f"## {heading}", 1)[-1].split("\n## ", 1)[0]
    return " ".join(body.split())


def _level(report: Report, rule_id: str) -> Level:
    return report.levels.get(rule_id) or report.rules[rule_id].severity


# ---------------------------------------------------------------- results


def _capped(findings) -> list[Finding]:
    ordered = sorted(findings, key=Finding.sort_key)
    if len(ordered) <= MAX_RESULTS:
        return ordered
    keep = sorted(ordered, key=lambda f: (-f.level.rank, f.sort_key()))[:MAX_RESULTS]
    return sorted(keep, key=Finding.sort_key)


def _artifact(path: str) -> dict:
    return {"uri": _uri(path), "uriBaseId": SRCROOT}


def _region(location: Location) -> dict:
    region = {"startLine": max(location.line, 1), "startColumn": max(location.col, 1)}
    if location.end_line:
        region["endLine"] = location.end_line
        region["endColumn"] = max(location.end_col, 1)
    return region


def _location(location: Location, message: str | None = None, ident: int | None = None) -> dict:
    loc: dict = {"physicalLocation": {"artifactLocation": _artifact(location.path), "region": _region(location)}}
    if message is not None:
        loc["message"] = _present(text=message)
    if ident is not None:
        loc["id"] = ident
    return loc


def _result(finding: Finding, rule_index: dict[str, int], hashes: "_LineHashes") -> dict:
    result = _present(
        ruleId=finding.rule,
        ruleIndex=rule_index.get(finding.rule),  # -1, the schema's default, is left out
        level=finding.level.value,
        message=_present(text=finding.message),
        locations=[_location(finding.location)],
        partialFingerprints=_fingerprints(finding, hashes),
    )
    hops = finding.evidence
    if hops:
        result["relatedLocations"] = [_location(hop.location, hop.message, i) for i, hop in enumerate(hops[:MAX_LOCATIONS], 1)]
        result["codeFlows"] = [_code_flow(finding, hops[:MAX_THREAD_FLOW_LOCATIONS - 1])]
    if finding.fixes:
        result["fixes"] = [_fix(fix) for fix in finding.fixes]
    if finding.suppressed:
        result["suppressions"] = [{"kind": "inSource"}]
    properties: dict[str, str | list[str]] = {
        name: list(value) if isinstance(value, (list, tuple)) else value for name, value in finding.properties}
    if finding.targets:
        properties["targets"] = list(finding.targets)
    if properties:
        result["properties"] = properties
    return result


def _code_flow(finding: Finding, hops: tuple[Evidence, ...]) -> dict:
    places = [(finding.location, finding.message), *((hop.location, hop.message) for hop in hops)]
    return {"threadFlows": [{"locations": [{"location": _location(location, message)} for location, message in places]}]}


def _fix(fix: Fix) -> dict:
    loc = fix.location
    deleted = _present(startLine=loc.line, startColumn=loc.col, endLine=loc.end_line or loc.line, endColumn=loc.end_col or loc.col)
    replacement = {"deletedRegion": deleted, "insertedContent": _present(text=fix.replacement)}
    change = {"artifactLocation": _artifact(loc.path), "replacements": [replacement]}
    return {"description": _present(text=fix.description), "artifactChanges": [change]}


def _fingerprints(finding: Finding, hashes: "_LineHashes") -> dict[str, str]:
    prints = {FINGERPRINT_KEY: fingerprint(finding)}
    line_hash = hashes.get(finding.location.path, finding.location.line)
    if line_hash:
        prints["primaryLocationLineHash"] = line_hash
    return prints


class _LineHashes:
    """primaryLocationLineHash per (file, line), from the scanned source; each file read once, and
    decoded and hashed only as far as the last line a finding is on decides."""

    def __init__(self, root: str, findings: list[Finding] | None = None) -> None:
        """`findings`: those whose lines will be asked for (None: any line may be)."""
        self.root = Path(root) if root else None
        self.cache: dict[str, LineHasher | None] = {}
        last: dict[str, int] = {}
        for finding in findings or ():
            location = finding.location
            last[location.path] = max(last.get(location.path, 0), location.line)
        self.last = None if findings is None else last

    def get(self, path: str, line: int) -> str | None:
        if self.root is None:
            return None
        if path not in self.cache:
            try:
                data = (self.root / path).read_bytes()
            except OSError:
                data = None
            last = 0 if self.last is None else max(self.last.get(path, 0), line)  # 0: the whole file
            self.cache[path] = LineHasher(decided_text(data, last)) if data is not None else None
        hasher = self.cache[path]
        return hasher.get(line) if hasher is not None else None


# ---------------------------------------------------------------- run-level parts


def _invocation(report: Report, dropped: int) -> dict:
    notes = [_notification(d, report) for d in sorted(report.diagnostics, key=lambda d: (d.path, d.line, d.rule, d.message))]
    if dropped:
        text = f"{dropped} results over GitHub's limit of {MAX_RESULTS} per run were left out (lowest levels first)"
        notes.append({"message": {"text": text}, "level": "warning"})
    return {"executionSuccessful": True, "toolExecutionNotifications": notes}


def _notification(diagnostic: Diagnostic, report: Report) -> dict:
    note = {
        "message": _present(text=diagnostic.message),
        "level": _diagnostic_level(diagnostic, report),
        "descriptor": _present(id=diagnostic.rule),
    }
    if diagnostic.path and diagnostic.line > 0:
        note["locations"] = [_location(Location(diagnostic.path, diagnostic.line))]
    elif diagnostic.path:
        note["locations"] = [{"physicalLocation": {"artifactLocation": _artifact(diagnostic.path)}}]
    return note


def _diagnostic_level(diagnostic: Diagnostic, report: Report) -> str:
    if diagnostic.rule in report.rules:
        level = _level(report, diagnostic.rule)
        return "note" if level is Level.NONE else level.value
    return "note"


@lru_cache(maxsize=None)
def _uri(path: str) -> str:
    """A path as a URI reference (every location of a file names it: quoted once per file)."""
    return quote(path.replace("\\", "/"), safe="/")


def _root_uri(root: str) -> str:
    if not root:
        return "./"
    uri = Path(root).resolve().as_uri()
    return uri if uri.endswith("/") else uri + "/"
