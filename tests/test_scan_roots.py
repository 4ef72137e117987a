"""The same files from another root: `archlint scan .` after `archlint scan pkg` (the folder holds
nothing but pkg/), and the pre-commit hook's call (explicit files in a repository, the repository
root scanned), reuse what the first scan stored, and give what a scan with no cache gives."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from archlint.discover import discover
from archlint.engine import scan
from archlint.engine.roots import analysed
from archlint.model.scan import ScanOptions

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "gate-flashinfer"
GATE_MODULE = "flashinfer/jit/comm.py"


@pytest.fixture
def repo(tmp_path, monkeypatch) -> Path:
    """A repository whose top holds nothing but the package folder, every file past the racy window."""
    monkeypatch.setenv("ARCHLINT_CACHE_DIR", str(tmp_path / "cache"))
    root = tmp_path / "repo"
    shutil.copytree(FIXTURE, root)
    (root / ".git").mkdir()
    stamp = time.time() - 3600
    for path in [root, *root.rglob("*")]:
        os.utime(path, (stamp, stamp))
    return root




def _scan(*paths: Path, **options):
    return scan(ScanOptions(paths=tuple(str(p) for p in paths), jobs=1, **options))


def test_the_root_after_the_package_is_answered_from_the_store(repo, full_scans):
    package = _scan(repo / "flashinfer")
    assert len(full_scans) == 1
    root = _scan(repo)
    assert len(full_scans) == 1  # nothing scanned again
    assert root == _scan(repo, use_cache=False)
    assert root.root == str(repo.resolve())  # paths stay relative to the folder scanned
    assert {f.location.path for f in root.findings} == {f"flashinfer/{f.location.path}" for f in package.findings}
    assert any(f.location.path == GATE_MODULE for f in root.findings)


def test_the_package_after_the_root_reuses_the_facts(repo, full_scans, monkeypatch):
    _scan(repo)
    import archlint.engine.cache as cache

    extracted = []
    real = cache.FactsCache.sink
    monkeypatch.setattr(cache.FactsCache, "sink", lambda self, files: extracted.extend(files) or real(self, files))
    again = _scan(repo / "flashinfer")
    assert len(full_scans) == 1 and not extracted
    assert again == _scan(repo / "flashinfer", use_cache=False)


def test_the_hook_call_after_a_scan_of_the_package(repo, full_scans):
    _scan(repo / "flashinfer")
    done = subprocess.run([sys.executable, "-m", "archlint", "scan", GATE_MODULE, "--format", "json", "-o", "hook.json"],
                          cwd=repo, capture_output=True, text=True, env=dict(os.environ, ARCHLINT_PROFILE="1"))
    assert done.returncode in (0, 1), done.stderr
    stages = [line.split()[2] for line in done.stderr.splitlines() if line.startswith("archlint: stage")]
    assert stages == ["discover"]  # answered from the stored result of the package's scan
    reference = subprocess.run([sys.executable, "-m", "archlint", "scan", GATE_MODULE, "--no-cache", "--format", "json",
                                "-o", "reference.json"], cwd=repo, capture_output=True, text=True)
    assert reference.returncode == done.returncode
    assert (repo / "hook.json").read_bytes() == (repo / "reference.json").read_bytes()


def test_an_include_folder_above_the_package_keeps_the_scan_root(repo):
    """`-I .` names headers from the repository top (`flashinfer/...`): analysed from the package
    folder those names could not be read, so the scan is not moved there."""
    found = discover((str(repo),))
    moved, _ = analysed(found, ScanOptions(paths=(str(repo),)))
    assert moved.root == str((repo / "flashinfer").resolve())
    assert {f"flashinfer/{f.path}" for f in moved.files} == {f.path for f in found.files}
    kept, _ = analysed(found, ScanOptions(paths=(str(repo),), include_dirs=(str(repo),)))
    assert kept == found
    assert _scan(repo, include_dirs=(str(repo),)) == _scan(repo, include_dirs=(str(repo),), use_cache=False)
