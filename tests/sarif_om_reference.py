"""The SARIF writer as it was built on sarif_om objects and jschema_to_python's rules: the
reference archlint.report.sarif.document is checked against (tests/test_sarif.py). What does not
build a sarif_om object (the limits, the capping, the line hashes, URIs) is the writer's own."""

from __future__ import annotations

from archlint.model.findings import Diagnostic, Evidence, Finding, Fix, Location
from archlint.report import Report
from archlint.report.sarif import (
    _PRECISION,
    INFORMATION_URI,
    MAX_LOCATIONS,
    MAX_RESULTS,
    MAX_TAGS,
    MAX_THREAD_FLOW_LOCATIONS,
    SCHEMA_URI,
    SRCROOT,
    _capped,
    _diagnostic_level,
    _fingerprints,
    _level,
    _LineHashes,
    _root_uri,
    _section,
    _uri,
)


def reference_document(report: Report) -> dict:
    log, findings = build_log(report)
    document = _to_data(log)
    _restore_defaults(document, report, findings)
    return document


def build_log(report: Report):
    """The sarif_om SarifLog, and the findings in the order of its results."""
    import sarif_om as om  # heavy: only when SARIF is asked for

    rule_ids = sorted(report.rules)
    findings = _capped(report.findings)
    hashes = _LineHashes(report.root)
    log = om.SarifLog(
        version="2.1.0",
        schema_uri=SCHEMA_URI,
        runs=[
            om.Run(
                tool=om.Tool(driver=_driver(om, report, rule_ids)),
                results=[_result(om, f, rule_ids, hashes) for f in findings],
                invocations=[_invocation(om, report, len(report.findings) - len(findings))],
                column_kind="unicodeCodePoints",
                original_uri_base_ids={SRCROOT: om.ArtifactLocation(uri=_root_uri(report.root))},
                automation_details=_automation(om, report.category),
            )
        ],
    )
    return log, findings


def _to_data(log) -> dict:
    """The SarifLog as plain data, as jschema_to_python serialises it: properties equal to their
    attrs default dropped, Python names renamed to the schema's (each class's table read once)."""
    import attr

    plans: dict[type, dict[str, tuple[object, str]]] = {}

    _FACTORY: type = attr.Factory  # type: ignore[assignment]  # a class at run time, typed as a function

    def plan(cls) -> dict[str, tuple[object, str]]:
        if cls not in plans:
            fields = attr.fields(cls) if attr.has(cls) else ()
            plans[cls] = {
                f.name: (f.default.factory() if isinstance(f.default, _FACTORY) else f.default,  # type: ignore[attr-defined]
                         f.metadata.get("schema_property_name") or f.name)
                for f in fields
            }
        return plans[cls]

    def convert(obj):
        if obj is None or isinstance(obj, (str, bool, int, float)):
            return obj
        if isinstance(obj, (list, tuple)):
            return [convert(item) for item in obj]
        if isinstance(obj, dict):
            return {str(key): convert(value) for key, value in obj.items()}
        if not hasattr(obj, "__dict__"):
            return str(obj)
        fields = plan(type(obj))
        data = {}
        for name, value in vars(obj).items():
            default, schema_name = fields.get(name, (_NO_DEFAULT, name))
            if value != default:
                data[schema_name] = convert(value)
        return data

    return convert(log)


_NO_DEFAULT = object()


# ---------------------------------------------------------------- tool and rules


def _driver(om, report: Report, rule_ids: list[str]):
    return om.ToolComponent(
        name="archlint",
        version=report.version,
        semantic_version=report.version,
        information_uri=INFORMATION_URI,
        rules=[_rule(om, report.rules[rule_id], report) for rule_id in rule_ids],
    )


def _rule(om, info, report: Report):
    bag = om.PropertyBag(tags=list(info.tags[:MAX_TAGS]))
    vars(bag)["precision"] = _PRECISION.get(info.confidence, "medium")
    vars(bag)["status"] = info.status
    return om.ReportingDescriptor(
        id=info.id,
        name=info.name,
        short_description=om.MultiformatMessageString(text=info.summary),
        full_description=om.MultiformatMessageString(text=_section(info.description, "What it does")),
        help=om.MultiformatMessageString(text=f"{info.help}\n\n{info.description}", markdown=info.description),
        help_uri=info.url,
        default_configuration=om.ReportingConfiguration(level=_level(report, info.id).value),
        properties=bag,
    )


def _artifact(om, path: str):
    return om.ArtifactLocation(uri=_uri(path), uri_base_id=SRCROOT)


def _region(om, location: Location):
    region = om.Region(start_line=max(location.line, 1), start_column=max(location.col, 1))
    if location.end_line:
        region.end_line = location.end_line
        region.end_column = max(location.end_col, 1)
    return region


def _location(om, location: Location, message: str | None = None, ident: int | None = None):
    loc = om.Location(
        physical_location=om.PhysicalLocation(artifact_location=_artifact(om, location.path), region=_region(om, location))
    )
    if message is not None:
        loc.message = om.Message(text=message)
    if ident is not None:
        loc.id = ident
    return loc


def _result(om, finding: Finding, rule_ids: list[str], hashes: "_LineHashes"):
    result = om.Result(
        rule_id=finding.rule,
        rule_index=rule_ids.index(finding.rule) if finding.rule in rule_ids else -1,
        level=finding.level.value,
        message=om.Message(text=finding.message),
        locations=[_location(om, finding.location)],
        partial_fingerprints=_fingerprints(finding, hashes),
    )
    hops = finding.evidence
    if hops:
        result.related_locations = [
            _location(om, hop.location, hop.message, i) for i, hop in enumerate(hops[:MAX_LOCATIONS], 1)
        ]
        result.code_flows = [_code_flow(om, finding, hops[:MAX_THREAD_FLOW_LOCATIONS - 1])]
    if finding.fixes:
        result.fixes = [_fix(om, fix) for fix in finding.fixes]
    if finding.suppressed:
        result.suppressions = [om.Suppression(kind="inSource")]
    properties: dict[str, str | list[str]] = dict(finding.properties)
    if finding.targets:
        properties["targets"] = list(finding.targets)
    if properties:
        bag = om.PropertyBag()
        vars(bag).update(properties)
        result.properties = bag
    return result


def _code_flow(om, finding: Finding, hops: tuple[Evidence, ...]):
    places = [(finding.location, finding.message), *((hop.location, hop.message) for hop in hops)]
    steps = [om.ThreadFlowLocation(location=_location(om, location, message)) for location, message in places]
    return om.CodeFlow(thread_flows=[om.ThreadFlow(locations=steps)])


def _fix(om, fix: Fix):
    loc = fix.location
    deleted = om.Region(start_line=loc.line, start_column=loc.col, end_line=loc.end_line or loc.line, end_column=loc.end_col or loc.col)
    replacement = om.Replacement(deleted_region=deleted, inserted_content=om.ArtifactContent(text=fix.replacement))
    change = om.ArtifactChange(artifact_location=_artifact(om, loc.path), replacements=[replacement])
    return om.Fix(description=om.Message(text=fix.description), artifact_changes=[change])


def _invocation(om, report: Report, dropped: int):
    notes = [_notification(om, d, report) for d in sorted(report.diagnostics, key=lambda d: (d.path, d.line, d.rule, d.message))]
    if dropped:
        text = f"{dropped} results over GitHub's limit of {MAX_RESULTS} per run were left out (lowest levels first)"
        notes.append(om.Notification(message=om.Message(text=text), level="warning"))
    invocation = om.Invocation(execution_successful=True)
    invocation.tool_execution_notifications = notes
    return invocation


def _notification(om, diagnostic: Diagnostic, report: Report):
    note = om.Notification(
        message=om.Message(text=diagnostic.message),
        level=_diagnostic_level(diagnostic, report),
        descriptor=om.ReportingDescriptorReference(id=diagnostic.rule),
    )
    if diagnostic.path and diagnostic.line > 0:
        note.locations = [_location(om, Location(diagnostic.path, diagnostic.line))]
    elif diagnostic.path:
        note.locations = [om.Location(physical_location=om.PhysicalLocation(artifact_location=_artifact(om, diagnostic.path)))]
    return note


def _automation(om, category: str):
    if not category:
        return None
    return om.RunAutomationDetails(id=category if category.endswith("/") else f"{category}/")


def _restore_defaults(document: dict, report: Report, findings: list[Finding]) -> None:
    """Write back the values to_json dropped for equalling their attrs defaults."""
    run = document["runs"][0]
    run["results"] = run.get("results", [])
    for rule in run["tool"]["driver"].get("rules", []):
        rule.setdefault("defaultConfiguration", {})["level"] = _level(report, rule["id"]).value
    for result, finding in zip(run["results"], findings):
        result["level"] = finding.level.value
    notes = run["invocations"][0].get("toolExecutionNotifications", [])
    levels = [_diagnostic_level(d, report) for d in sorted(report.diagnostics, key=lambda d: (d.path, d.line, d.rule, d.message))]
    for note, level in zip(notes, levels + ["warning"]):
        note["level"] = level

