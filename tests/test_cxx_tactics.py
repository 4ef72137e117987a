"""CUTLASS tactics whose tiles are written in C++: CuTe shapes in a launcher's body, tactic aliases
that pass a tile to a config template, and a kernel template's loops over the tile. Read without
compiling, linked to the gate whose units compile them, and measured by compiling the unit with a
`Show<sizeof(SharedStorage)>` after the kernel alias (the nvcc tests)."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from archlint.cli import cli
from archlint.engine import scan
from archlint.extract.cuda.tiles import cxx_tile_lists, launcher_arch
from archlint.model.scan import ScanOptions
from archlint.probe.jinja import render

CASE = Path(__file__).resolve().parents[1] / "fixtures" / "al204-cxx-tiles"
KIT = CASE / "gemmkit"
DENSE = KIT / "include" / "gemmkit" / "gemm" / "gemm_dense_sm120.cuh"
CONFIGS = KIT / "include" / "gemmkit" / "gemm" / "gemm_configs_sm120.h"
LOOPS = KIT / "csrc" / "group_gemm_sm120_kernel_inst.jinja"
NVCC = shutil.which("nvcc")
LIMIT = 101_376


def _line(path: Path, text: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def test_a_cute_tile_in_the_launcher_body_is_one_tile_and_the_cluster_is_none():
    (fact,) = cxx_tile_lists("gemm_dense_sm120.cuh", DENSE.read_bytes())
    assert fact.kind == "cute" and [row.text() for row in fact.tiles] == ["128×128×128"]
    assert fact.tiles[0].line == _line(DENSE, "using MmaTileShape_MNK")
    assert launcher_arch(DENSE.read_bytes()) == 120


def test_each_tactic_alias_is_a_tactic_of_its_own_at_its_line():
    (fact,) = cxx_tile_lists("gemm_configs_sm120.h", CONFIGS.read_bytes())
    assert fact.kind == "alias"
    assert [(row.text(), choice.axis("config")) for row, choice in zip(fact.tiles, fact.choices)] == [
        ("128×128×128", "Tactic128x128x128Config"), ("128×128×128", "Tactic128x128x128WideEpilogueConfig"),
        ("256×128×128", "Tactic256x128x128Config")]
    assert fact.tiles[2].line == _line(CONFIGS, "using Tactic256x128x128Config")


def test_template_loops_over_the_tile_are_crossed():
    (fact,) = cxx_tile_lists("group_gemm_sm120_kernel_inst.jinja", LOOPS.read_bytes())
    assert fact.kind == "loops" and [row.text() for row in fact.tiles] == ["128×64×128", "128×128×128", "128×256×128"]
    assert fact.line == _line(LOOPS, "for tile_m in")


def test_a_header_without_a_kernel_alias_or_with_a_symbolic_tile_has_no_tiles():
    macro = (KIT / "include" / "gemmkit" / "gemm" / "group_gemm_sm120.cuh").read_bytes()
    assert cxx_tile_lists("group_gemm_sm120.cuh", macro) == ()  # Shape<Int<TileM>, ...>: the template picks
    assert cxx_tile_lists("gemm.h", (KIT / "include" / "minicutlass" / "gemm.h").read_bytes()) == ()
    commented = b"// using GemmKernel = X;\n// using Tile = Shape<_128, _256, _128>;\n"
    assert cxx_tile_lists("c.cuh", commented) == ()


def test_the_template_reader_writes_loops_tests_and_filters_and_refuses_the_rest():
    text = ('{% set BIG = ["b"] %}{% for t in [1, 2] %}<{{ t }}:{{ name | replace("cutlass::", "") | trim }}>'
            '{% if t in (2,) -%} two {%- elif name == "x" %}x{% else %}-{% endif %}{% endfor %}')
    pieces = render(text, {"name": " cutlass::half_t "})
    assert pieces is not None and "".join(p for p, _ in pieces) == "<1:half_t>-<2:half_t>two"
    assert [dict(bound)["t"] for piece, bound in pieces if piece == "two"] == ["2"]  # where each piece was written
    assert render("{% for t in range(3) %}{% endfor %}", {}) is None
    assert render("{{ unknown }}", {}) is None
    assert render("{% macro m() %}{% endmacro %}", {}) is None


def test_the_tactics_command_lists_the_cxx_tiles_a_gate_admits_for_sm_120a(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("ARCHLINT_CACHE_DIR", str(tmp_path / "cache"))
    rows = json.loads(CliRunner().invoke(cli, ["tactics", str(CASE), "--target", "sm_120a", "--format", "json"]).output)
    tiles = sorted({(Path(r["path"]).name, r["tile"]) for r in rows})
    assert tiles == [("gemm_configs_sm120.h", "128×128×128"), ("gemm_configs_sm120.h", "256×128×128"),
                     ("gemm_dense_sm120.cuh", "128×128×128"), ("group_gemm_sm120_kernel_inst.jinja", "128×128×128"),
                     ("group_gemm_sm120_kernel_inst.jinja", "128×256×128"), ("group_gemm_sm120_kernel_inst.jinja", "128×64×128")]
    assert all(r["gate"].endswith("gemm_sm120.py:28:18") for r in rows)
    assert {r["verdict"] for r in rows} == {"unknown size"}  # no static answer without the element types: the probe settles it
    # a target the gate does not admit gets none
    none = json.loads(CliRunner().invoke(cli, ["tactics", str(CASE), "--target", "sm_100a", "--format", "json"]).output)
    assert none == []


@pytest.mark.skipif(NVCC is None, reason="nvcc not installed: the compile probe needs it")
def test_scan_with_the_compile_probe_reports_every_cxx_tactic_over_the_limit_and_none_at_it(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("ARCHLINT_CACHE_DIR", str(tmp_path / "cache"))
    args = ["scan", str(CASE), "--target", "sm_120a", "--target", "sm_121a", "--format", "json", "--select", "AL204"]
    plain = json.loads(CliRunner().invoke(cli, args).output)
    assert plain["findings"] == []  # without the probe nothing is claimed
    probed = json.loads(CliRunner().invoke(cli, [*args, "--compile-probe"]).output)
    found = sorted((Path(f["path"]).name, f["line"], f["message"].split("`")[1], f["properties"]["nbytes"])
                   for f in probed["findings"])
    loops, dense, alias = _line(LOOPS, "for tile_m in"), _line(DENSE, "using MmaTileShape_MNK"), _line(CONFIGS, "using Tactic256")
    assert found == [
        ("gemm_configs_sm120.h", alias, "tactic aliases[2] = [256, 128, 128] with config Tactic256x128x128Config", "107520"),
        ("gemm_dense_sm120.cuh", dense, "CuTe tile shape[0] = [128, 128, 128] with dtype_in cutlass::half_t, scale_granularity_m 1", "140288"),
        ("gemm_dense_sm120.cuh", dense, "CuTe tile shape[0] = [128, 128, 128] with dtype_in cutlass::half_t, scale_granularity_m 128", "140288"),
        ("group_gemm_sm120_kernel_inst.jinja", loops, "template loops[2] = [128, 256, 128] with swap_ab false", "107520"),
        ("group_gemm_sm120_kernel_inst.jinja", loops, "template loops[2] = [128, 256, 128] with swap_ab true", "107520"),
    ]
    for finding in probed["findings"]:
        assert finding["targets"] == ["sm_120a", "sm_121a"] and finding["properties"]["limit"] == str(LIMIT)
        assert finding["evidence"][0]["message"].startswith("gate `")
    # the wide-epilogue alias measures exactly the limit: it fits, so it is not reported
    rows = json.loads(CliRunner().invoke(cli, ["tactics", str(CASE), "--target", "sm_120a", "--compile-probe",
                                               "--format", "json"]).output)
    wide = [r for r in rows if "WideEpilogue" in r["axes"]]
    assert [(r["measured"], r["verdict"]) for r in wide] == [(LIMIT, "fits")]
    dense_rows = sorted((r["axes"], r["measured"]) for r in rows if r["path"].endswith("gemm_dense_sm120.cuh"))
    assert [m for _, m in dense_rows] == [74752, 74752, 140288, 140288]
    # again: answered from the cache, the same findings
    again = json.loads(CliRunner().invoke(cli, [*args, "--compile-probe"]).output)
    assert again["findings"] == probed["findings"]


@pytest.mark.skipif(NVCC is None, reason="nvcc not installed: the compile probe needs it")
def test_a_re_scan_after_a_launcher_edit_reports_the_tactic_where_it_now_is(tmp_path: Path, monkeypatch, full_scans):
    """A line added above the tactic aliases of a launcher header: the re-scan (in part) links that
    header's tiles again and reports the tactic over the limit at its new line, as a scan with no
    cache does; the tiles of the other files stand as they were linked."""
    monkeypatch.setenv("ARCHLINT_CACHE_DIR", str(tmp_path / "cache"))
    root = tmp_path / "tree"
    shutil.copytree(CASE, root)
    stamp = time.time() - 3600  # settled: past the window in which a file's stat is not trusted
    for path in [root, *root.rglob("*")]:
        os.utime(path, (stamp, stamp))

    def tactics(use_cache: bool = True) -> list[tuple[str, int, str]]:
        options = ScanOptions(paths=(str(root),), targets=("sm_120a",), jobs=1, use_cache=use_cache, compile_probe=True)
        return sorted((f.location.path, f.location.line, f.message) for f in scan(options).findings if f.rule == "AL204")

    before = tactics()
    header = root / CONFIGS.relative_to(CASE)
    header.write_text("// a line above everything\n" + header.read_text())
    os.utime(header, (stamp + 600, stamp + 600))
    after = tactics()
    assert len(full_scans) == 1  # the first scan alone: the edit is re-scanned in part
    moved = [(path, line - 1, message) if path.endswith("gemm_configs_sm120.h") else (path, line, message)
             for path, line, message in after]
    assert moved == before and after != before
    assert after == tactics(use_cache=False)
