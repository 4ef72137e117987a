"""A capability named without a suffix (`--target sm_120`) is judged as the build the project's own
flag code makes for it: FlashInfer 0.7.2's `_normalize_cuda_arch` builds 12.0 as `sm_120f` with
CUDA 12.9 or newer and as `sm_120a` with 12.8, and 12.1 as `sm_121a`. `f` and `a` builds differ:
the fixture's UE8M0 conversion needs a family- or arch-specific target, and its 64 KiB static
`__shared__` tile fits only an arch-specific one (nvcc 13.0 proves both below)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from archlint.cli.commands import cli

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "gate-project-builds"
NVCC = shutil.which("nvcc") or ("/usr/local/bin/nvcc" if Path("/usr/local/bin/nvcc").exists() else None)
MOE_SCALE = "gen_moe_scale_module"
TILE_NORM = "gen_tile_norm_module"


def _scan(*args: str) -> tuple[int, dict]:
    result = CliRunner().invoke(cli, ["scan", str(FIXTURE), "--no-cache", "--format", "json", *args])
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, json.loads(result.output)


def _verdicts(report: dict) -> dict[str, dict]:
    """Per guarding function, its one verdict."""
    return {gate["function"]: verdict for gate in report["gates"] for verdict in gate["verdicts"]}


def test_a_plain_capability_is_judged_as_the_family_build_the_project_makes_with_the_newest_toolkit():
    _, report = _scan("--target", "sm_120")
    verdicts = _verdicts(report)
    assert verdicts[MOE_SCALE]["target"] == "sm_120f"
    assert verdicts[MOE_SCALE]["verdict"] == "POLICY"
    assert verdicts[MOE_SCALE]["build"] == "as the project builds 12.0 with CUDA ≥ 12.9"
    # the family target keeps ptxas's 48 KiB static limit, which the 64 KiB tile exceeds
    assert verdicts[TILE_NORM]["target"] == "sm_120f"
    assert verdicts[TILE_NORM]["verdict"] == "GENUINE"
    assert "49,152" in verdicts[TILE_NORM]["reason"]


def test_an_older_toolkit_picks_the_build_that_toolkit_makes():
    _, report = _scan("--target", "sm_120", "--toolkit", "12.8")
    verdicts = _verdicts(report)
    assert {v["target"] for v in verdicts.values()} == {"sm_120a"}
    assert verdicts[TILE_NORM]["verdict"] == "POLICY"
    assert verdicts[MOE_SCALE]["build"] == "as the project builds 12.0 with CUDA ≥ 12.8 and < 12.9"


def test_the_toolkit_can_come_from_the_config(tmp_path: Path):
    tree = tmp_path / "tree"
    shutil.copytree(FIXTURE, tree)
    (tree / "archlint.toml").write_text('toolkit = "12.8"\n')
    result = CliRunner().invoke(cli, ["scan", str(tree), "--no-cache", "--format", "json", "--target", "sm_120"])
    verdicts = _verdicts(json.loads(result.output))
    assert verdicts[TILE_NORM]["target"] == "sm_120a"


def test_the_next_minor_gets_its_own_arch_specific_build():
    _, report = _scan("--target", "sm_121")
    verdicts = _verdicts(report)
    assert {v["target"] for v in verdicts.values()} == {"sm_121a"}
    assert verdicts[MOE_SCALE]["build"] == "as the project builds 12.1 with CUDA ≥ 12.9"


def test_a_target_named_with_its_suffix_is_judged_exactly_as_named():
    _, report = _scan("--target", "sm_120a")
    verdicts = _verdicts(report)
    assert {v["target"] for v in verdicts.values()} == {"sm_120a"}
    assert verdicts[TILE_NORM]["verdict"] == "POLICY"
    assert all("build" not in v for v in verdicts.values())


def test_the_text_report_says_once_which_build_a_plain_target_stands_for():
    result = CliRunner().invoke(cli, ["scan", str(FIXTURE), "--no-cache", "--target", "sm_120"])
    assert "sm_120f: as the project builds 12.0 with CUDA ≥ 12.9" in result.output
    assert "excludes sm_120f" in result.output


@pytest.mark.parametrize("version", ["twelve", "10.0.0.1", "9.2"])
def test_a_toolkit_that_is_not_a_known_version_is_a_usage_error(version: str):
    result = CliRunner().invoke(cli, ["scan", str(FIXTURE), "--no-cache", "--toolkit", version])
    assert result.exit_code == 2
    assert "toolkit" in result.output.lower() or "CUDA" in result.output


@pytest.mark.skipif(NVCC is None, reason="nvcc not installed: the builds are proven with CUDA 13.0's nvcc")
@pytest.mark.parametrize(("source", "arch", "builds"), [
    ("moe_scale.cu", "120f", True),
    ("moe_scale.cu", "120", False),
    ("tile_norm.cu", "120f", False),
    ("tile_norm.cu", "120a", True),
])
def test_nvcc_agrees_that_the_family_and_arch_specific_builds_differ(tmp_path: Path, source: str, arch: str, builds: bool):
    unit = FIXTURE / "pb" / "data" / "csrc" / source
    done = subprocess.run([str(NVCC), "-cubin", f"-gencode=arch=compute_{arch},code=sm_{arch}", str(unit),
                           "-o", str(tmp_path / "unit.cubin")], capture_output=True, text=True, timeout=300)
    assert (done.returncode == 0) is builds, done.stderr


def test_where_the_project_s_flag_code_cannot_be_read_the_two_builds_are_judged_and_naming_one_settles_it(tmp_path: Path):
    tree = tmp_path / "tree"
    shutil.copytree(FIXTURE, tree)
    context = tree / "pb" / "compilation_context.py"
    text = context.read_text()
    start, end = text.index("    @staticmethod"), text.index("    def get_nvcc_flags_list")
    context.write_text(text[:start] + text[end:].replace("self._normalize_cuda_arch(major, minor)", 'normalize(major, minor)'))
    result = CliRunner().invoke(cli, ["scan", str(tree), "--no-cache", "--target", "sm_120"])
    entry = result.output[result.output.index("Unknown on sm_120a"):]
    assert "gen_moe_scale_module" in entry and "(assumes a sm_120a build; a sm_120 build would be GENUINE" in entry
    assert "to settle: name the build the project makes, with its suffix (`--target sm_120a`, `sm_120f` or plain `sm_120`)" in entry
    named = json.loads(CliRunner().invoke(cli, ["scan", str(tree), "--no-cache", "--format", "json", "--target", "sm_120a"]).output)
    assert _verdicts(named)[MOE_SCALE]["verdict"] == "POLICY"
