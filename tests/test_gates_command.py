"""`archlint gates` (the gates and their verdicts, no findings) and `archlint scan -v` (stage times)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from click.testing import CliRunner

from archlint.cli import cli

FLASHINFER = Path(__file__).resolve().parents[1] / "fixtures" / "gate-flashinfer"


def test_gates_prints_each_gate_and_its_verdicts_only():
    result = CliRunner().invoke(cli, ["gates", str(FLASHINFER), "--no-cache"])
    assert result.exit_code == 0  # the tree holds error findings: this command reports none
    lines = result.output.splitlines()
    heads = [line for line in lines if line.startswith("`")]
    assert [head.split("`")[1] for head in heads] == [
        "gen_trtllm_comm_module", "gen_vec_dequant_module", "gen_gemm_sm90_module", "gen_missing_module",
        "gen_xqa_module", "gen_xqa_trap_module", "gen_xqa_mha_module"]
    assert "  sm_80, sm_89, sm_110a, sm_120a, sm_121a  POLICY  nothing reachable from 1 guarded source(s) " \
           "needs what each target lacks" in lines
    assert not any(re.search(r": AL\d{3} ", line) for line in lines)  # no findings
    assert lines[-4:] == ["POLICY        3       7", "EMPTY         3      10", "GENUINE       1       7", "UNKNOWN       2       8"]


def test_gates_json_lists_the_verdicts_in_arch_order():
    result = CliRunner().invoke(cli, ["gates", str(FLASHINFER), "--no-cache", "--format", "json", "--target", "sm_120a",
                                      "--target", "sm_80"])
    assert result.exit_code == 0
    document = json.loads(result.output)
    assert "findings" not in document
    gemm = next(g for g in document["gates"] if g["function"] == "gen_gemm_sm90_module")
    assert [v["target"] for v in gemm["verdicts"]] == ["sm_80", "sm_120a"]
    assert gemm["admits"] == ["sm_90a"]  # not filtered away by --target
    assert document["verdicts"] == {"EMPTY": 4, "GENUINE": 2, "POLICY": 2, "UNKNOWN": 3}


def test_gates_on_a_tree_without_gates_says_so(tmp_path):
    (tmp_path / "k.cu").write_text("__global__ void k() {}\n")
    result = CliRunner().invoke(cli, ["gates", str(tmp_path), "--no-cache"])
    assert result.exit_code == 0 and result.output == "no gates found\n"


def test_verbose_scan_prints_stage_times_on_stderr_only():
    quiet = CliRunner().invoke(cli, ["scan", str(FLASHINFER), "--no-cache", "--format", "json"])
    verbose = CliRunner().invoke(cli, ["scan", str(FLASHINFER), "--no-cache", "--format", "json", "-v"])
    assert verbose.exit_code == quiet.exit_code == 1
    assert verbose.stdout == quiet.stdout  # the report is untouched
    stages = re.findall(r"^archlint: stage (\w+(?: \w+)?) +\d+\.\d\d s(?: +\d+ \w+)?(?: +rss +\d+ MiB)?$", verbose.stderr, re.M)
    assert stages == ["discover", "facts", "pylink", "outline", "includes", "unit facts", "index", "verdicts", "checks", "total"]
    assert quiet.stderr == ""
