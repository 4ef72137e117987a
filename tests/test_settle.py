"""An UNKNOWN says what would settle it, and `--define` settles a condition a build flag decides."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner
from conftest import inside_fixture

from archlint.cli.commands import cli

LAUNCH = Path(__file__).resolve().parent.parent / "fixtures" / "gate-launch-shapes"


def _verdicts(*args: str) -> dict[tuple[str, int], dict[str, dict]]:
    with inside_fixture(LAUNCH):
        result = CliRunner().invoke(cli, ["scan", ".", "--no-cache", "--jobs", "1", "--format", "json",
                                          "--target", "sm_80", "--target", "sm_120a", *args])
    report = json.loads(result.output[: result.output.rindex("}") + 1])
    return {(g["path"], g["line"]): {v["target"]: v for v in g["verdicts"]} for g in report["gates"]}


def test_an_unknown_names_the_macro_that_decides_it():
    sm80 = _verdicts()[("fi/jit/mla.py", 18)]["sm_80"]
    assert sm80["verdict"] == "UNKNOWN"
    assert "`HEAD_ELEMS`" in sm80["reason"] and "--define HEAD_ELEMS=VALUE" in sm80["reason"]


def test_define_settles_it():
    """With the head size the MLA build passes, the kernel (and its cluster launch) is there."""
    sm80 = _verdicts("--define", "HEAD_ELEMS=576")[("fi/jit/mla.py", 18)]["sm_80"]
    assert sm80["verdict"] == "GENUINE" and "__cluster_dims__" in sm80["reason"]
    other = _verdicts("--define", "HEAD_ELEMS=128")[("fi/jit/mla.py", 18)]["sm_80"]
    assert other["verdict"] == "UNKNOWN" and "no kernel" in other["reason"]


def test_a_define_that_is_not_a_number_is_a_usage_error():
    result = CliRunner().invoke(cli, ["scan", str(LAUNCH), "--no-cache", "--define", "HEAD_ELEMS=big"])
    assert result.exit_code == 2 and "NAME=INTEGER" in result.output


def test_a_header_outside_the_scan_points_at_include_dir(tmp_path):
    tree = tmp_path / "fi"
    shutil.copytree(LAUNCH / "fi" / "jit", tree / "jit")
    (tree / "__init__.py").write_text("")
    for module in (tree / "jit").glob("*.py"):
        if module.name not in ("__init__.py", "core.py", "env.py"):
            module.unlink()
    (tree / "jit" / "norm.py").write_text(
        "from .core import gen_jit_spec, get_nvcc_flags_list\nfrom .env import CSRC_DIR\n\n\n"
        "def gen_norm_module():\n"
        "    nvcc_flags = get_nvcc_flags_list(supported_major_versions=[9, 10])\n"
        '    return gen_jit_spec("norm", [CSRC_DIR / "norm.cu"], extra_cuda_cflags=nvcc_flags)\n')
    (tree / "csrc").mkdir()
    (tree / "csrc" / "norm.cu").write_text(
        '#include "tensorrt_llm/common/cudaUtils.h"\n\n'
        "__global__ void rms_norm_kernel(float* x) { x[threadIdx.x] *= 2.f; }\n")
    result = CliRunner().invoke(cli, ["scan", str(tree), "--no-cache", "--jobs", "1", "--format", "json",
                                      "--target", "sm_120a"])
    report = json.loads(result.output[: result.output.rindex("}") + 1])
    (gate,) = report["gates"]
    (verdict,) = gate["verdicts"]
    assert verdict["verdict"] == "UNKNOWN"
    assert "tensorrt_llm/common/cudaUtils.h" in verdict["reason"] and "--include-dir" in verdict["reason"]
