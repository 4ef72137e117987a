"""Suppressions as ruff users write them on FlashInfer's multi-line gate calls.

FlashInfer writes its gates over three lines (`get_nvcc_flags_list(` / the arch list / `)`). A
suppression on any line of that statement, or on the line above it, covers the gate's finding; the
comment never shows in the gate's text; and a `# noqa: AL101` gets a one-line hint (AL903) saying
that archlint reads `archlint: ignore[...]`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from archlint.cli.commands import cli
from archlint.lang.python.expr import tight

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
CORE = (FIXTURES / "gate-flashinfer" / "flashinfer" / "jit" / "core.py").read_text()
ENV = (FIXTURES / "gate-flashinfer" / "flashinfer" / "jit" / "env.py").read_text()
KERNEL = """#include <cuda_runtime.h>

__global__ void mnnvl_allreduce_kernel(float* data, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] *= 0.5f;
}

void mnnvl_allreduce(float* data, int n, cudaStream_t stream) {
  mnnvl_allreduce_kernel<<<(n + 255) / 256, 256, 0, stream>>>(data, n);
}
"""
# The gate as FlashInfer writes it (flashinfer/jit/comm.py); {first}, {arch}, {close} and {above}
# are where a comment may go. The call is on line 7.
COMM = """from . import env as jit_env
from .core import current_compilation_context, gen_jit_spec


def gen_mnnvl_allreduce_module():
{above}
    nvcc_flags = current_compilation_context.get_nvcc_flags_list({first}
        supported_major_versions=[9, 10]{arch}
    ){close}
    return gen_jit_spec(
        "mnnvl_allreduce",
        [jit_env.FLASHINFER_CSRC_DIR / "mnnvl_allreduce.cu"],
        extra_cuda_cflags=nvcc_flags,
    )
"""
IGNORE = "  # archlint: ignore[AL101] -- SM120 bring-up tracked separately"


def _tree(root: Path, **comments: str) -> Path:
    places = {"first": "", "arch": "", "close": "", "above": "    # MNNVL: Hopper and Blackwell datacenter parts"}
    places.update(comments)
    files = {"flashinfer/__init__.py": "", "flashinfer/jit/__init__.py": "", "flashinfer/jit/core.py": CORE,
             "flashinfer/jit/env.py": ENV, "flashinfer/jit/comm.py": COMM.format(**places),
             "flashinfer/data/csrc/mnnvl_allreduce.cu": KERNEL}
    for relative, text in files.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text)
    return root


def _scan(tree: Path, *args: str):
    result = CliRunner().invoke(cli, ["scan", str(tree), "--no-cache", "--jobs", "1", *args])
    assert result.exit_code in (0, 1), result.output
    return result


@pytest.mark.parametrize("place, comment", [
    ("first", IGNORE),
    ("arch", IGNORE),
    ("close", IGNORE),
    ("above", "    # archlint: ignore[AL101] -- SM120 bring-up tracked separately"),
    ("first", "\n        # archlint: ignore[policy-gate] -- on a line of its own inside the call"),
], ids=["first-line", "arch-list-line", "closing-line", "line-above", "own-line-inside"])
def test_a_suppression_on_any_line_of_the_gate_statement_covers_it(tmp_path, place, comment):
    tree = _tree(tmp_path, **{place: comment})
    result = _scan(tree, "--format", "json")
    report = json.loads(result.output)
    assert result.exit_code == 0
    assert [(f["rule"], f["line"]) for f in report["findings"]] == []  # no AL101, and no AL900 for the comment
    assert report["summary"]["suppressed"] == 1


def test_a_suppression_on_the_next_statement_does_not_cover_the_gate(tmp_path):
    tree = _tree(tmp_path)
    comm = tree / "flashinfer" / "jit" / "comm.py"
    comm.write_text(comm.read_text().replace("    return gen_jit_spec(\n", f"    return gen_jit_spec({IGNORE}\n"))
    result = _scan(tree)
    assert result.exit_code == 1
    assert "flashinfer/jit/comm.py:7:18: AL101 Gate" in result.output
    assert "flashinfer/jit/comm.py:10:1: AL900 Unused suppression: no AL101 finding here" in result.output


def test_the_gate_text_leaves_the_comment_out(tmp_path):
    tree = _tree(tmp_path, arch=IGNORE)
    report = json.loads(_scan(tree, "--format", "json", "--show-suppressed").output)
    text = "current_compilation_context.get_nvcc_flags_list(supported_major_versions=[9, 10])"
    assert [gate["text"] for gate in report["gates"]] == [text]
    assert report["findings"][0]["message"].startswith(f"Gate `{text}` excludes sm_80")
    gates = CliRunner().invoke(cli, ["gates", str(tree), "--no-cache"])
    assert "archlint:" not in gates.output and f": {text} (admits sm_90a" in gates.output


@pytest.mark.parametrize("written, shown", [
    ("get_nvcc_flags_list( supported_major_versions=[9, 10] )", "get_nvcc_flags_list(supported_major_versions=[9, 10])"),
    ('gen_jit_spec( "mnnvl", [ CSRC / "a.cu" ], extra_cuda_cflags=["-DX=( 1 )"] )',
     'gen_jit_spec("mnnvl", [CSRC / "a.cu"], extra_cuda_cflags=["-DX=( 1 )"])'),  # a string as written
    ("f(x, y='\\' )', z={ 1: 2 })", "f(x, y='\\' )', z={1: 2})"),  # an escaped quote does not end it
])
def test_a_gate_written_over_lines_reads_as_code_on_one_line(written, shown):
    assert tight(written) == shown


@pytest.mark.parametrize("noqa, hint", [
    ("  # noqa: AL101", "`# noqa: AL101` is not read by archlint; write `# archlint: ignore[AL101]`"),
    ("  # noqa: AL101,AL204", "`# noqa: AL101, AL204` is not read by archlint; write `# archlint: ignore[AL101, AL204]`"),
    ("  # NOQA:E501 AL101", "`# noqa: AL101` is not read by archlint; write `# archlint: ignore[AL101]`"),
])
def test_a_noqa_naming_an_archlint_rule_gets_a_hint(tmp_path, noqa, hint):
    tree = _tree(tmp_path, arch=noqa)
    result = _scan(tree)
    assert result.exit_code == 1  # the AL101 it meant to silence is still reported
    assert "flashinfer/jit/comm.py:7:18: AL101 Gate" in result.output
    assert f"flashinfer/jit/comm.py:8:1: AL903 {hint}\n" in result.output
    assert "1 note" in result.output


@pytest.mark.parametrize("noqa", ["  # noqa", "  # noqa: E501", "  # noqa: E501, B950",
                                  f"{IGNORE}  # noqa: AL101"])
def test_other_noqa_comments_say_nothing(tmp_path, noqa):
    result = _scan(_tree(tmp_path, arch=noqa), "--format", "json")
    assert "AL903" not in [f["rule"] for f in json.loads(result.output)["findings"]]


def test_the_hint_is_a_note_and_can_be_suppressed(tmp_path):
    tree = _tree(tmp_path, arch="  # noqa: AL101  # archlint: ignore[AL101, noqa-comment]")
    result = _scan(tree, "--format", "json")
    assert result.exit_code == 0
    assert json.loads(result.output)["findings"] == []


def test_a_noqa_in_a_file_no_gate_reads_gets_the_hint_too(tmp_path):
    tree = _tree(tmp_path, arch=IGNORE)
    (tree / "flashinfer" / "utils.py").write_text(
        "def round_up(x, y):\n    return (x + y - 1) // y * y  # noqa: AL204\n")
    report = json.loads(_scan(tree, "--format", "json").output)
    assert [(f["rule"], f["path"], f["line"], f["level"]) for f in report["findings"]] == [
        ("AL903", "flashinfer/utils.py", 2, "note")]
