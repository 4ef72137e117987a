"""`archlint graph`: the gate's guarded constructs are a reachability query; every format renders."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from archlint.cli.commands import cli as main
from archlint.engine.linking import link
from archlint.model.scan import ScanOptions
from archlint.report.graph import build_graph, evidence_path, export, guarded_constructs

CASE = Path(__file__).resolve().parent.parent / "fixtures" / "gate-flashinfer"


def _graph(gate=""):
    return build_graph(link(ScanOptions(paths=(str(CASE),), use_cache=False, jobs=1)), gate)


def test_gemm_gate_reaches_the_wgmma_instruction_through_the_header():
    graph = _graph("supported_major_versions=[9])")
    gates = [n for n, d in graph.nodes(data=True) if d["kind"] == "gate"]
    assert len(gates) == 1
    constructs = guarded_constructs(graph, gates[0])
    assert [graph.nodes[c]["label"] for c in constructs] == ["wgmma.fence.sync.aligned"]
    path = evidence_path(graph, gates[0], constructs[0])
    assert [graph.nodes[n]["kind"] for n in path] == ["gate", "source", "header", "device-function", "construct"]
    assert graph.nodes[path[2]]["path"] == "flashinfer/data/include/flashinfer/gemm/wgmma.cuh"


def test_json_export_is_deterministic_and_carries_verdicts():
    first, second = export(_graph(), "json"), export(_graph(), "json")
    assert first == second
    data = json.loads(first)
    comm = [n for n in data["nodes"] if n["kind"] == "gate" and n["line"] == 7]
    assert json.loads(comm[0]["verdicts"])["sm_120a"] == "EMPTY"


def test_cli_renders_dot_and_graphml():
    runner = CliRunner()
    dot = runner.invoke(main, ["graph", str(CASE), "--format", "dot", "--no-cache"])
    assert dot.exit_code == 0, dot.output
    assert dot.output.startswith("digraph archlint {") and "includes" in dot.output
    graphml = runner.invoke(main, ["graph", str(CASE), "--format", "graphml", "--no-cache", "--gate", "trtllm"])
    assert graphml.exit_code == 0, graphml.output
    assert "<graphml" in graphml.output and "lamport_style_one_shot_all_reduce_norm_kernel" in graphml.output


def _gate_verdicts(output: str) -> list[dict]:
    return [json.loads(n["verdicts"]) for n in json.loads(output)["nodes"] if n["kind"] == "gate"]


def test_cli_reads_the_config_as_scan_does(tmp_path):
    from test_gate_fix_cli import policy_tree

    tree = policy_tree(tmp_path, "", "[9, 10]")
    (tree / "archlint.toml").write_text('targets = ["sm_89"]\nexclude = ["lib/csrc/**"]\n')
    result = CliRunner().invoke(main, ["graph", str(tree), "--format", "json", "--no-cache"])
    assert result.exit_code == 0, result.output
    # only the config's target is judged, and the source in the excluded folder is not read
    assert _gate_verdicts(result.output) == [{"sm_89": "UNKNOWN"}] and "scale.cu" not in result.output
    flagged = CliRunner().invoke(main, ["graph", str(tree), "--format", "json", "--no-cache", "--target", "sm_120a"])
    assert _gate_verdicts(flagged.output) == [{"sm_120a": "UNKNOWN"}]  # the flag overrides the file


def test_cli_stops_on_a_bad_config(tmp_path):
    (tmp_path / "archlint.toml").write_text('ignore = ["no-such-rule"]\n')
    result = CliRunner().invoke(main, ["graph", str(tmp_path), "--no-cache"])
    assert result.exit_code == 2 and "unknown rule 'no-such-rule'" in result.output


def test_paths_are_from_the_repository_root(tmp_path):
    """`archlint graph mykern` in a repository names files as the scan reports do: `mykern/...`."""
    (tmp_path / ".git").mkdir()
    shutil.copytree(CASE, tmp_path / "mykern")
    result = CliRunner().invoke(main, ["graph", str(tmp_path / "mykern"), "--format", "json", "--no-cache"])
    assert result.exit_code == 0, result.output
    paths = {node["path"] for node in json.loads(result.output)["nodes"] if "path" in node}
    assert paths and all(path.startswith("mykern/") and (tmp_path / path).is_file() for path in paths)
