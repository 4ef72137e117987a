"""The knowledge base: schema checks, query API, and the nvcc proof of every row."""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path

import pytest

from archlint.knowledge.arch import Target, parse_target
from archlint.knowledge.kb import DeviceProfile, KnowledgeBase, Requirement, load_kb
from archlint.knowledge.resources import load_toml, rules_dir

SNIPPETS = rules_dir() / "kb" / "snippets"
NVCC = shutil.which("nvcc") or ("/usr/local/bin/nvcc" if Path("/usr/local/bin/nvcc").exists() else None)


def _rows() -> list[dict]:
    intrinsics = load_toml("kb/intrinsics.toml")
    return load_toml("kb/instructions.toml")["instruction"] + intrinsics["intrinsic"] + intrinsics["arch_tag"]


# ---------------------------------------------------------------- schema


def test_ids_unique_and_wellformed():
    ids = [row["id"] for row in _rows()]
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)
    assert all(re.fullmatch(r"[a-z0-9][a-z0-9_-]*", i) for i in ids)


@pytest.mark.parametrize("row", _rows(), ids=lambda row: row["id"])
def test_row_schema(row):
    assert row["source"].strip(), "every row cites its source"
    assert row["summary"].strip()
    assert (SNIPPETS / row["snippet"]).is_file(), f"missing snippet {row['snippet']}"
    re.compile(row["match"])
    assert row["requires"] in ("", "a", "f")
    assert row["min_cc"] in load_toml("kb/targets.toml")["ccs"]
    assert row["pass"], "at least one target must compile"
    if row["min_cc"] > 75 or row["requires"] or row.get("ccs"):
        assert row["fail"], "a requirement needs at least one target that rejects it"
    for name in row["pass"] + row["fail"]:
        parse_target(name)


@pytest.mark.parametrize("row", _rows(), ids=lambda row: row["id"])
def test_supports_agrees_with_pass_and_fail(row):
    req = load_kb().by_id(row["id"])
    for name in row["pass"]:
        assert req.supports(parse_target(name)), f"{row['id']} should support {name}"
    for name in row["fail"]:
        assert not req.supports(parse_target(name)), f"{row['id']} should not support {name}"


def test_supports_semantics():
    req = load_kb().by_id("tcgen05-alloc")
    assert req.supports(Target(100, "a")) and req.supports(Target(103, "f")) and req.supports(Target(110, "a"))
    assert not req.supports(Target(100, "")) and not req.supports(Target(120, "a"))
    wgmma = load_kb().by_id("wgmma-mma-async")
    assert [t.name for t in map(parse_target, ["sm_90a", "sm_90", "sm_100a"]) if wgmma.supports(t)] == ["sm_90a"]
    assert load_kb().by_id("griddepcontrol").supports(Target(120, ""))


def test_describe():
    kb = load_kb()
    assert kb.by_id("wgmma-mma-async").describe() == "needs sm_90a (arch-specific, cc 9.0 only)"
    assert kb.by_id("griddepcontrol").describe() == "needs sm_90 or newer"
    assert "sm_100f" in kb.by_id("tcgen05-mma").describe()
    assert "sm_120f" in kb.by_id("mma-sync-f8f6f4").describe()


# ---------------------------------------------------------------- queries

PTX_EXAMPLES = {
    # real opcodes found in FlashInfer 0.7.2.post1 (data/include, data/csrc, data/cutlass, data/cccl)
    "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16": "wgmma-mma-async",
    "wgmma.fence.sync.aligned": "wgmma-sync",
    "setmaxnreg.inc.sync.aligned.u32": "setmaxnreg",
    "tcgen05.mma.cta_group::1.kind::mxf4nvf4.block_scale.scale_vec::4X": "tcgen05-mma",
    "tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32": "tcgen05-alloc",
    "tcgen05.ld.sync.aligned.32x32b.x16.b32": "tcgen05-ld-st",
    "tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64": "tcgen05-cp-commit-fence",
    "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes": "tma-load",
    "cp.async.bulk.tensor.2d.shared::cluster.global.tile::gather4.mbarrier::complete_tx::bytes.multicast::cluster.cta_group::2": "tma-cta-group",
    "cp.async.bulk.tensor.2d.cta_group::2.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint": "tma-cta-group",
    "cp.async.bulk.prefetch.tensor.2d.L2.global.tile": "tma-prefetch",
    "cp.async.bulk.prefetch.L2.global": "cp-async-bulk-prefetch",
    "cp.reduce.async.bulk.global.shared::cta.bulk_group.add.noftz.bf16": "cp-reduce-async-bulk",
    "cp.async.cg.shared::cta.global.L2::128B": "cp-async-cg",
    "cp.async.ca.shared::cta.global": "cp-async",
    "cp.async.wait_group": "cp-async",
    "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32": "mma-sync-fp8",
    "mma.sync.aligned.kind::f8f6f4.m16n8k32.row.col.f32.e2m1.e2m1.f32": "mma-sync-f8f6f4",
    "mma.sync.aligned.m16n8k64.row.col.kind::mxf4nvf4.block_scale.scale_vec::4X.f32.e2m1.e2m1.f32.ue8m0": "mma-sync-block-scale",
    "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32": "mma-sync-bf16",
    "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32": "mma-sync-f16-m16n8k16",
    "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32": "mma-sync-tf32",
    "cvt.rn.satfinite.e2m1x2.f32": "cvt-e2m1x2",
    "cvt.rn.f16x2.e2m1x2": "cvt-e2m1x2",
    "cvt.rn.satfinite.e4m3x2.f32": "cvt-fp8x2",
    "cvt.rn.f16x2.e4m3x2": "cvt-fp8x2",
    "cvt.rn.bf16x2.ue8m0x2": "cvt-ue8m0x2",
    "cvt.rp.satfinite.ue8m0x2.f32": "cvt-ue8m0x2",
    "cvt.rn.bf16x2.f32": "cvt-bf16x2",
    "red.global.add.noftz.bf16x2": "red-bf16x2",
    "griddepcontrol.wait": "griddepcontrol",
    "mbarrier.try_wait.parity.acquire.cta.shared::cta.b64": "mbarrier-try-wait-parity",
    "mbarrier.arrive.expect_tx.release.cta.shared::cta.b64": "mbarrier-expect-tx",
    "mbarrier.init.shared::cta.b64": "mbarrier",
    "fence.mbarrier_init.release.cluster": "fence-mbarrier-init",
    "fence.proxy.async.shared::cta": "fence-proxy-async",
    "fence.proxy.tensormap::generic.acquire.sys": "fence-proxy-tensormap",
    "prefetch.tensormap": "prefetch-tensormap",
    "mapa.shared::cluster.u32": "mapa-getctarank",
    "ld.shared::cluster.f32": "shared-cluster-ld-st",
    "barrier.cluster.arrive.release.aligned": "barrier-cluster",
    "elect.sync": "elect-sync",
    "clusterlaunchcontrol.query_cancel.is_canceled.pred.b128": "clusterlaunchcontrol",
    "stmatrix.sync.aligned.m8n8.x4.shared.b16": "stmatrix",
    "stmatrix.sync.aligned.m16n8.x2.trans.shared.b8": "stmatrix-b8",
    "ldmatrix.sync.aligned.m8n16.x1.shared.b8x16.b6x16_p32": "ldmatrix-b8",
    "ldmatrix.sync.aligned.m8n8.x4.shared.b16": "ldmatrix",
    "redux.sync.add.u32": "redux-sync",
    "fma.rn.f32x2": "f32x2-arith",
    "multimem.ld_reduce.relaxed.sys.global.add.acc::f32.v4.bf16x2": "multimem-ld-reduce",
    "tensormap.replace.tile.global_dim.global.b1024.b32": "tensormap-replace",
    "createpolicy.fractional.L2::evict_last.b64": "createpolicy",
    "mov.b32": None,
    "add.u32": None,
    "shfl.sync.down.b32": None,
}


@pytest.mark.parametrize("opcode,expected", sorted(PTX_EXAMPLES.items()))
def test_match_ptx(opcode, expected):
    req = load_kb().match_ptx(opcode)
    assert (req.id if req else None) == expected


IDENTIFIER_EXAMPLES = {
    "cudaGridDependencySynchronize": "cuda-pdl-sync",
    "cudaTriggerProgrammaticLaunchCompletion": "cuda-pdl-trigger",
    "__cluster_dims__": "cluster-dims",
    "this_cluster": "cg-this-cluster",
    "SM90_TMA_LOAD": "cute-sm90-tma",
    "SM90_64x64x16_F16F16F16_SS": "cute-sm90-gmma",
    "SM100_MMA_F16BF16_SS": "cute-sm100-umma",
    "__reduce_add_sync": "reduce-sync",
    "__nanosleep": "nanosleep",
    "memcpy": None,
}


@pytest.mark.parametrize("name,expected", sorted(IDENTIFIER_EXAMPLES.items()))
def test_match_identifier(name, expected):
    req = load_kb().match_identifier(name)
    assert (req.id if req else None) == expected


def test_intrinsic_names_and_prefixes():
    kb = load_kb()
    assert {"__nanosleep", "cudaGridDependencySynchronize", "__cluster_dims__"} <= kb.intrinsic_names
    assert "SM90_" in kb.intrinsic_prefixes and "SM100_" in kb.intrinsic_prefixes
    assert all(not re.search(r"[\\^$.*+?()\[\]|]", name) for name in kb.intrinsic_names)


def test_every_requirement_kind():
    kb = load_kb()
    assert isinstance(kb, KnowledgeBase)
    assert {req.kind for req in kb.requirements} == {"ptx", "intrinsic", "arch-tag"}
    assert all(isinstance(req, Requirement) for req in kb.requirements)


def test_profiles():
    kb = load_kb()
    profile = kb.profile(120)
    assert isinstance(profile, DeviceProfile)
    assert profile.smem_per_block_optin == 101376 and profile.sm_count == 188
    assert kb.profile(103).sm_count is None
    with pytest.raises(KeyError, match="no device profile for cc 99"):
        kb.profile(99)
    assert [p.cc for p in kb.profiles] == sorted(p.cc for p in kb.profiles)


def test_load_kb_is_cached():
    assert load_kb() is load_kb()


# ---------------------------------------------------------------- the nvcc proof


@lru_cache(maxsize=1)
def _ptxas() -> str:
    out = subprocess.run([NVCC, "--dryrun", "-cubin", "-arch=sm_90", "-x", "cu", "/dev/null"],
                         capture_output=True, text=True).stderr
    for line in out.splitlines():
        if line.startswith("#$ _HERE_="):
            candidate = Path(line.split("=", 1)[1]) / "ptxas"
            if candidate.exists():
                return str(candidate)
    return shutil.which("ptxas") or "ptxas"


def _is_full(snippet: Path) -> bool:
    return "// verify: full" in snippet.read_text()


def _base_arch(target: str) -> str:
    return "compute_100" if parse_target(target).cc >= 100 else "compute_75"


def _base_ptx(snippet: Path, arch: str, work: Path) -> Path | None:
    """cicc runs once per (snippet, generation): inline PTX passes through unchecked."""
    out = work / f"{snippet.stem}.{arch}.ptx"
    if not out.exists():
        done = subprocess.run([NVCC, f"-arch={arch}", "-ptx", "-o", str(out), str(snippet)], capture_output=True)
        if done.returncode:
            return None
    return out


def compiles(snippet: Path, target: str, work: Path) -> tuple[bool, str]:
    """Does `snippet` build for `target`? (ok, first error line)."""
    cubin = work / f"{snippet.stem}.{target}.cubin"
    base = None if _is_full(snippet) else _base_ptx(snippet, _base_arch(target), work)
    if base is None:
        cmd = [NVCC, f"-arch={target}", "-cubin", "-o", str(cubin), str(snippet)]
    else:
        ptx = work / f"{snippet.stem}.{target}.ptx"
        ptx.write_text(re.sub(r"(?m)^\.target .*$", f".target {target}", base.read_text()))
        cmd = [_ptxas(), f"-arch={target}", "-o", str(cubin), str(ptx)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    error = next((line for line in done.stderr.splitlines() if "error" in line or "fatal" in line), "")
    return done.returncode == 0, error


def _proof_cells() -> list[tuple[str, str, str, bool]]:
    cells = []
    for row in _rows():
        cells += [(row["id"], row["snippet"], t, True) for t in row["pass"]]
        cells += [(row["id"], row["snippet"], t, False) for t in row["fail"]]
    return cells


def _run_cells(cells, work: Path):
    # the base PTX for a snippet is written once, before the parallel phase, so workers never race on it
    for snippet in sorted({(c[1], _base_arch(c[2])) for c in cells}):
        path = SNIPPETS / snippet[0]
        if not _is_full(path):
            _base_ptx(path, snippet[1], work)
    with ThreadPoolExecutor(2) as pool:
        return list(pool.map(lambda c: (c, compiles(SNIPPETS / c[1], c[2], work)), cells))


@pytest.mark.skipif(NVCC is None, reason="nvcc not installed: the compiler proof of the KB needs CUDA 13.0's nvcc")
def test_nvcc_proves_every_row():
    with tempfile.TemporaryDirectory() as tmp:
        results = _run_cells(_proof_cells(), Path(tmp))
    wrong = [f"{rid}: {snippet} on {target}: expected {'pass' if want else 'fail'}; {error}"
             for (rid, snippet, target, want), (ok, error) in results if ok != want]
    assert not wrong, "\n".join(wrong)
