"""`archlint runtime` post-processes as `archlint scan` does: in-source suppressions, and the
levels, per-file ignores and fail-on of `[tool.archlint]`, through the real command line."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from test_gate_fix_cli import policy_tree

from archlint.cli.commands import cli

SUPPRESSION = "  // archlint: ignore[AL204] -- this build only runs on the 227 KB parts\n"
LAUNCHER = """#include <cuda_runtime.h>

constexpr int kSmemBytes = 147456;

template <int SmemBytes>
__global__ void big_tile_kernel(float* out) {{
  extern __shared__ char smem[];
  out[threadIdx.x] = smem[threadIdx.x];
}}

void launch_big_tile(float* out) {{
{suppression}  cudaFuncSetAttribute(big_tile_kernel<kSmemBytes>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes);
}}
"""


def smem_tree(root: Path, suppression: str = "", config: str = "") -> Path:
    """One launcher asking 147,456 B of shared memory per block: over SM120's 101,376 B."""
    (root / "launcher.cu").write_text(LAUNCHER.format(suppression=suppression))
    if config:
        (root / "pyproject.toml").write_text(f"[project]\nname = \"tiles\"\n\n[tool.archlint]\n{config}")
    return root


def archlint(*args: str):
    return CliRunner().invoke(cli, [*args, "--no-cache"])


def runtime(tree: Path, *args: str):
    return archlint("runtime", str(tree), "--device-profile", "sm_120", *args)


def test_unsuppressed_request_fails_both(tmp_path):
    tree = smem_tree(tmp_path)
    assert archlint("scan", str(tree)).exit_code == 1
    result = runtime(tree)
    assert result.exit_code == 1
    assert "launcher.cu:12:3: AL204 147,456 bytes of shared memory per block requested" in result.output


def test_suppressed_request_is_hidden_from_scan_and_runtime(tmp_path):
    tree = smem_tree(tmp_path, SUPPRESSION)
    scan = archlint("scan", str(tree))
    assert scan.exit_code == 0 and "1 suppressed" in scan.output
    result = runtime(tree)
    assert result.exit_code == 0, result.output
    assert "AL204" not in result.output and "launcher.cu:13" not in result.output
    assert result.output.endswith("(sm_120a): no excluding gates; 0 findings\n")


def test_per_file_ignore_from_the_config(tmp_path):
    tree = smem_tree(tmp_path, config='[tool.archlint.per-file-ignores]\n"*.cu" = ["smem-over-budget"]\n')
    assert archlint("scan", str(tree)).exit_code == 0
    result = runtime(tree)
    assert result.exit_code == 0 and "AL204" not in result.output


def test_level_and_fail_on_from_the_config(tmp_path):
    tree = smem_tree(tmp_path, config='fail-on = "error"\n\n[tool.archlint.levels]\nAL204 = "note"\n')
    result = runtime(tree, "--format", "json")
    assert result.exit_code == 0, result.output
    assert [(f["rule"], f["level"]) for f in json.loads(result.output)["findings"]] == [("AL204", "note")]
    assert runtime(tree, "--fail-on", "note").exit_code == 1  # the flag overrides the file


def test_a_bad_config_stops_runtime_as_it_stops_scan(tmp_path):
    tree = smem_tree(tmp_path, config='select = ["AL999"]\n')
    assert archlint("scan", str(tree)).exit_code == 2
    result = runtime(tree)
    assert result.exit_code == 2 and "unknown rule 'AL999'" in result.output


def test_a_suppressed_policy_gate_leaves_the_device_alone(tmp_path):
    tree = policy_tree(tmp_path, "", "[9, 10]")
    assert "AL301" in runtime(tree).output
    modules = tree / "lib" / "jit" / "modules.py"
    gate = "    flags = get_nvcc_flags_list(supported_major_versions=[9, 10])\n"
    modules.write_text(modules.read_text().replace(
        gate, gate.rstrip("\n") + "  # archlint: ignore[policy-gate, device-excluded-by-policy]\n"))
    scan = archlint("scan", str(tree))
    assert scan.exit_code == 0 and "AL900" not in scan.output  # a runtime rule's suppression is not unused
    result = runtime(tree)
    assert result.exit_code == 0, result.output
    assert "AL301" not in result.output and "1 POLICY; 0 findings" in result.output
