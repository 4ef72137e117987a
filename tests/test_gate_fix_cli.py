"""AL101's fix through `archlint scan --diff`: the gate's literal keeps its own brackets."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from archlint.cli.commands import cli

CORE = '''def gen_jit_spec(name, sources, extra_cuda_cflags=None):
    return (name, sources, extra_cuda_cflags)


def get_nvcc_flags_list(supported_major_versions=None):
    return [f"-gencode=arch=compute_{m}0a,code=sm_{m}0a" for m in supported_major_versions or ()]
'''
ENV = 'import pathlib\n\nCSRC = pathlib.Path(__file__).resolve().parents[1] / "csrc"\n'
KERNEL = '''__global__ void scale_kernel(float* out, const float* in, float s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * s;
}

void scale(float* out, const float* in, float s, int n) { scale_kernel<<<(n + 255) / 256, 256>>>(out, in, s, n); }
'''


def policy_tree(root: Path, preamble: str, majors: str) -> Path:
    """A JIT spec whose plain CUDA kernel builds everywhere, behind a gate on `majors`."""
    files = {
        "lib/__init__.py": "",
        "lib/jit/__init__.py": "",
        "lib/jit/core.py": CORE,
        "lib/jit/env.py": ENV,
        "lib/csrc/scale.cu": KERNEL,
        "lib/jit/modules.py": (
            "from .core import gen_jit_spec, get_nvcc_flags_list\nfrom .env import CSRC\n"
            f"{preamble}\n\ndef gen_scale_module():\n"
            f"    flags = get_nvcc_flags_list(supported_major_versions={majors})\n"
            '    return gen_jit_spec("scale", [CSRC / "scale.cu"], extra_cuda_cflags=flags)\n'
        ),
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def diff(tree: Path) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["scan", str(tree), "--diff", "--no-cache", "--jobs", "1"])
    return result.exit_code, result.output


@pytest.mark.parametrize("written, widened", [
    ("(9, 10)", "(8, 9, 10, 11, 12)"),
    ("[9, 10]", "[8, 9, 10, 11, 12]"),
])
def test_fix_keeps_the_literals_brackets(tmp_path, written, widened):
    code, out = diff(policy_tree(tmp_path, "", written))
    assert code == 1
    assert f"-    flags = get_nvcc_flags_list(supported_major_versions={written})\n" in out
    assert f"+    flags = get_nvcc_flags_list(supported_major_versions={widened})\n" in out


def test_fix_widens_a_tuple_constant_as_a_tuple(tmp_path):
    code, out = diff(policy_tree(tmp_path, "MAJORS = (9, 10)\n", "MAJORS"))
    assert code == 1
    assert "-MAJORS = (9, 10)\n+MAJORS = (8, 9, 10, 11, 12)\n" in out
    assert "+    flags" not in out  # the call still names the constant
