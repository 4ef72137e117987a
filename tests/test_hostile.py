"""Hostile trees never crash a scan: each bad file yields a diagnostic and the real gate is still judged.

Every tree holds a copy of fixtures/gate-flashinfer, whose `gen_vec_dequant_module` is a policy
gate (AL101), plus one hostile input. The scan runs through the command line exactly as a user
runs it; a crash would show as exit 2, a traceback, or a missing AL101.
"""

from __future__ import annotations

import builtins
import json
import os
import random
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from archlint.cli.commands import cli

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "gate-flashinfer"
CSRC = Path("flashinfer/data/csrc")
POLICY_GATE = "flashinfer.jit.comm.gen_vec_dequant_module"


def make_tree(tmp_path: Path) -> Path:
    tree = tmp_path / "tree"
    shutil.copytree(FIXTURE, tree)
    (tree / "hostile").mkdir()
    return tree


def run_scan(tree: Path, fmt: str = "json", *extra: str):
    result = CliRunner().invoke(cli, ["scan", str(tree), "--format", fmt, "--no-cache", "--jobs", "1", *extra])
    assert result.exit_code in (0, 1), result.output
    assert "Traceback" not in result.output, result.output
    assert "internal error" not in result.output, result.output
    return result


def scan_json(tree: Path, *extra: str) -> dict:
    report = json.loads(run_scan(tree, "json", *extra).stdout)
    assert any(f["rule"] == "AL101" and f["symbol"] == POLICY_GATE for f in report["findings"]), report["findings"]
    return report


def diagnostics_for(report: dict, path: str) -> list[str]:
    return [d["message"] for d in report["diagnostics"] if d["path"] == path]


def sarif_notifications_for(tree: Path, path: str) -> list[str]:
    sarif = json.loads(run_scan(tree, "sarif").stdout)
    notes = sarif["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    out = []
    for note in notes:
        for location in note.get("locations", ()):
            if location["physicalLocation"]["artifactLocation"]["uri"] == path:
                out.append(note["message"]["text"])
    return out


# ---------------------------------------------------------------- one bad file each: (path, bytes, words in the diagnostic)


def _random_bytes() -> bytes:
    return random.Random(1234).randbytes(64 * 1024)


def _huge_header() -> bytes:
    body = "".join(f"__device__ int generated_function_{i:06d}(int x) {{ return x * {i % 97} + 1; }}\n" for i in range(120_000))
    return body.encode()


def _deep_if(depth: int = 3000) -> bytes:
    opening = "".join(f"#if defined(LEVEL_{i}) || __CUDA_ARCH__ >= {i % 12}00\n" for i in range(depth))
    return (opening + "__device__ int deepest() { return 1; }\n" + "#endif\n" * depth).encode()


def _big_arch_list() -> bytes:
    values = ", ".join(str(9 + i % 4) for i in range(200_000))
    return (
        "from flashinfer.jit.core import current_compilation_context\n\n\n"
        "def gen_big_module():\n"
        f"    return current_compilation_context.get_nvcc_flags_list(supported_major_versions=[{values}])\n"
    ).encode()


BAD_FILES = {
    "random-bytes": ("hostile/random.cu", _random_bytes, ("binary",)),
    "nul-header": ("hostile/nul.cuh", lambda: b"#pragma once\n#define A 1\n\x00\x00\xff\xfe\n__device__ int f();\n", ("binary",)),
    "invalid-utf8-header": ("hostile/latin.cuh", lambda: b"// caf\xe9 \xff\xfe\n#if __CUDA_ARCH__ >= 900\n#endif\n", ("UTF-8",)),
    "unbalanced-if": ("hostile/unbalanced.cuh", lambda: b"#if __CUDA_ARCH__ >= 900\n#ifdef X\n#endif\n", ("without #endif",)),
    "stray-endif": ("hostile/stray.cuh", lambda: b"#endif\n#else\n__device__ int g();\n", ("without #if",)),
    "latin1-python": ("hostile/latin1.py", lambda: b"# -*- coding: latin-1 -*-\nname = 'caf\xe9'\n", ("UTF-8",)),
    "broken-python": ("hostile/broken.py", lambda: b"def gen(:\n    return [\n", ("syntax",)),
}


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_bad_file_gives_a_diagnostic(tmp_path, case):
    relative, make, words = BAD_FILES[case]
    tree = make_tree(tmp_path)
    (tree / relative).write_bytes(make())
    messages = diagnostics_for(scan_json(tree), relative)
    assert messages, f"no diagnostic for {relative}"
    assert any(all(w.lower() in m.lower() for w in words) for m in messages), messages


@pytest.mark.parametrize("case", ["random-bytes", "unbalanced-if", "broken-python"])
def test_bad_file_in_sarif(tmp_path, case):
    relative, make, _ = BAD_FILES[case]
    tree = make_tree(tmp_path)
    (tree / relative).write_bytes(make())
    assert sarif_notifications_for(tree, relative)


def test_huge_header_says_it_was_cut(tmp_path):
    tree = make_tree(tmp_path)
    (tree / "hostile/huge.cuh").write_bytes(_huge_header())
    (message,) = diagnostics_for(scan_json(tree), "hostile/huge.cuh")
    assert "4,194,304-byte limit" in message and "first part" in message


def test_huge_header_under_a_raised_limit(tmp_path):
    tree = make_tree(tmp_path)
    (tree / "hostile/huge.cuh").write_bytes(_huge_header())
    (tree / "pyproject.toml").write_text("[tool.archlint]\nmax-file-bytes = 16777216\n")
    report = scan_json(tree)
    assert not [m for m in diagnostics_for(report, "hostile/huge.cuh") if "limit" in m]


def test_deep_if_nesting(tmp_path):
    tree = make_tree(tmp_path)
    (tree / "hostile/deep.cuh").write_bytes(_deep_if())
    (tree / CSRC / "deep_user.cu").write_text('#include "../../../hostile/deep.cuh"\n__global__ void k() { deepest(); }\n')
    scan_json(tree)


def test_huge_arch_list(tmp_path):
    tree = make_tree(tmp_path)
    (tree / "flashinfer/jit/big.py").write_bytes(_big_arch_list())
    scan_json(tree)


def test_include_cycle_and_self_include(tmp_path):
    tree = make_tree(tmp_path)
    csrc = tree / CSRC
    (csrc / "cyc_a.cuh").write_text('#include "cyc_b.cuh"\n__device__ int a();\n')
    (csrc / "cyc_b.cuh").write_text('#include "cyc_a.cuh"\n__device__ int b();\n')
    (csrc / "cyc_self.cuh").write_text('#include "cyc_self.cuh"\n__device__ int s();\n')
    source = csrc / "vec_dequant.cu"
    source.write_text('#include "cyc_a.cuh"\n#include "cyc_self.cuh"\n' + source.read_text())
    scan_json(tree)


# ---------------------------------------------------------------- links, FIFOs, permissions, races


def test_symlink_loop(tmp_path):
    tree = make_tree(tmp_path)
    (tree / "hostile/loop").symlink_to("..", target_is_directory=True)
    (tree / "hostile/self_loop").symlink_to("self_loop")
    (tree / "hostile/ping.cu").symlink_to("pong.cu")
    (tree / "hostile/pong.cu").symlink_to("ping.cu")
    report = scan_json(tree)
    assert diagnostics_for(report, "hostile/ping.cu") or diagnostics_for(report, "hostile/pong.cu")


def test_dangling_symlink(tmp_path):
    tree = make_tree(tmp_path)
    (tree / "hostile/dangling.cu").symlink_to("nowhere.cu")
    assert diagnostics_for(scan_json(tree), "hostile/dangling.cu")


def test_symlink_outside_the_root(tmp_path):
    tree = make_tree(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.cu").write_text("__global__ void outside() {}\n")
    (tree / "hostile/out.cu").symlink_to(outside / "secret.cu")
    (tree / "hostile/outdir").symlink_to(outside, target_is_directory=True)
    report = scan_json(tree)
    assert any("outside" in m for m in diagnostics_for(report, "hostile/out.cu"))
    assert any("outside" in m for m in diagnostics_for(report, "hostile/outdir"))
    assert not any("secret" in f["path"] for f in report["findings"])


def test_fifo_named_cu(tmp_path):
    tree = make_tree(tmp_path)
    os.mkfifo(tree / "hostile/x.cu")
    assert any("regular file" in m for m in diagnostics_for(scan_json(tree), "hostile/x.cu"))


def _denied(denied: Path, real):
    def guarded(path, *args, **kwargs):
        if os.fspath(path) == str(denied):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real(path, *args, **kwargs)

    return guarded


def test_unreadable_directory(tmp_path, monkeypatch):
    tree = make_tree(tmp_path)
    (tree / "hostile/locked").mkdir()
    (tree / "hostile/locked/inside.cu").write_text("__global__ void k() {}\n")
    monkeypatch.setattr(os, "scandir", _denied(tree / "hostile/locked", os.scandir))
    assert any("cannot be listed" in m for m in diagnostics_for(scan_json(tree), "hostile/locked"))


def test_unreadable_file(tmp_path, monkeypatch):
    tree = make_tree(tmp_path)
    (tree / "hostile/locked.cu").write_text("__global__ void k() {}\n")
    monkeypatch.setattr(builtins, "open", _denied(tree / "hostile/locked.cu", builtins.open))
    assert any("Permission denied" in m for m in diagnostics_for(scan_json(tree), "hostile/locked.cu"))


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode; the monkeypatched tests above cover it")
def test_unreadable_for_real(tmp_path):
    tree = make_tree(tmp_path)
    (tree / "hostile/locked").mkdir()
    (tree / "hostile/secret.cu").write_text("__global__ void k() {}\n")
    os.chmod(tree / "hostile/locked", 0)
    os.chmod(tree / "hostile/secret.cu", 0)
    try:
        report = scan_json(tree)
    finally:
        os.chmod(tree / "hostile/locked", 0o755)
        os.chmod(tree / "hostile/secret.cu", 0o644)
    assert diagnostics_for(report, "hostile/locked") and diagnostics_for(report, "hostile/secret.cu")


def test_file_deleted_after_discovery(tmp_path, monkeypatch):
    import archlint.engine.pipeline as pipeline

    tree = make_tree(tmp_path)
    victim = tree / "hostile/vanishing.cu"
    victim.write_text("__global__ void k() {}\n")
    real = pipeline.discover

    def discover_then_delete(*args, **kwargs):
        found = real(*args, **kwargs)
        victim.unlink()
        return found

    monkeypatch.setattr(pipeline, "discover", discover_then_delete)
    assert any("cannot be read" in m for m in diagnostics_for(scan_json(tree), "hostile/vanishing.cu"))


def test_huge_conditions_in_a_guarded_header(tmp_path):
    """5,000-term `||` chains, 150 nested parentheses and a 5,000-digit literal, all reached by the gate."""
    tree = make_tree(tmp_path)
    terms = " || ".join(f"(__CUDA_ARCH__ == {i})" for i in range(5000))
    header = tree / "flashinfer/data/include/flashinfer/long.cuh"
    header.write_text(
        f"#pragma once\n#if {terms}\n__device__ int chained() {{ return 1; }}\n#endif\n"
        f"#if {'(' * 150}1{')' * 150}\n#endif\n#if 1{'1' * 5000}\n#endif\n"
        f"#if {'!' * 3000}1\n#endif\n"
    )
    source = tree / CSRC / "vec_dequant.cu"
    source.write_text('#include "flashinfer/long.cuh"\n' + source.read_text())
    scan_json(tree)
