"""A cache folder archlint cannot use, and `archlint cache clear` pointed at the wrong place: the
user is told, once, in words; a scan goes on without the cache and gives its usual report."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from archlint.cli.commands import cli
from archlint.engine import cache as cache_module

GATE_PY = "def gen():\n    flags = get_nvcc_flags_list(supported_major_versions=[9, 10])\n    return gen_jit_spec('k', ['k.cu'], extra_cuda_cflags=flags)\n"


@pytest.fixture
def tree(tmp_path) -> Path:
    root = tmp_path / "tree"
    root.mkdir()
    (root / "jit.py").write_text(GATE_PY)
    (root / "k.cu").write_text("__global__ void k() {}\n")
    for path in root.iterdir():  # older than the racy window: the cache may store their facts
        os.utime(path, (1e9, 1e9))
    return root


def scan(tree: Path, cache: Path | str, *extra: str) -> subprocess.CompletedProcess:
    """`archlint scan` in a process of its own (its stderr as a user sees it), `extra` its setup."""
    env = {**os.environ, "ARCHLINT_CACHE_DIR": str(cache), "NO_COLOR": "1"}
    return subprocess.run([sys.executable, "-m", "archlint", "scan", str(tree), "--format", "json", *extra],
                          capture_output=True, text=True, env=env, timeout=300)


def expected(tree: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    return scan(tree, tmp_path / "unused", "--no-cache")


def warning(cache: Path, reason: str) -> str:
    return f"archlint: warning: cache folder {cache} is not usable ({reason}); scanning without a cache\n"


def test_a_file_in_place_of_the_cache_folder_is_said_once(tree, tmp_path):
    blocker = tmp_path / "cache-is-a-file"
    blocker.write_text("not a folder\n")
    done, reference = scan(tree, blocker), expected(tree, tmp_path)
    assert done.stderr == warning(blocker, "not a directory")
    assert (done.returncode, done.stdout) == (reference.returncode, reference.stdout)
    assert blocker.read_text() == "not a folder\n"


def _no_file_writes() -> None:
    """What a full disk does to the cache: no file can grow (RLIMIT_FSIZE, the signal ignored, gives
    EFBIG where a full disk gives ENOSPC; a little room is left for the workers' semaphores)."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024))


def test_a_cache_folder_where_nothing_can_be_written_is_said(tree, tmp_path):
    cache = tmp_path / "cache"
    env = {**os.environ, "ARCHLINT_CACHE_DIR": str(cache), "NO_COLOR": "1"}
    done = subprocess.run([sys.executable, "-m", "archlint", "scan", str(tree), "--format", "json"], capture_output=True,
                          text=True, env=env, timeout=300, preexec_fn=_no_file_writes)
    reference = expected(tree, tmp_path)
    assert done.stderr == warning(cache, "file too large")
    assert (done.returncode, done.stdout) == (reference.returncode, reference.stdout)
    assert not list(cache.rglob("*.pkl")) and not list(cache.rglob(".tmp-*"))  # the probe left nothing


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder")
def test_a_read_only_cache_folder_is_said(tree, tmp_path):
    cache = tmp_path / "cache"
    (cache / cache_module.LAYOUT).mkdir(parents=True)
    (cache / cache_module.LAYOUT).chmod(0o500)
    try:
        done = scan(tree, cache)
    finally:
        (cache / cache_module.LAYOUT).chmod(0o700)
    assert done.stderr == warning(cache, "not writable")
    assert done.returncode == expected(tree, tmp_path).returncode


def test_a_cache_folder_inside_the_scanned_tree_is_said(tree, tmp_path):
    cache = tree / ".archlint-cache"
    done = scan(tree, cache)
    assert done.stderr == warning(cache, "it lies inside a scanned folder")
    assert not cache.exists()


def test_a_usable_cache_folder_says_nothing(tree, tmp_path):
    done = scan(tree, tmp_path / "cache")
    assert done.stderr == "" and list((tmp_path / "cache").rglob("*.pkl"))


def clear(cache: Path, monkeypatch):
    monkeypatch.setenv("ARCHLINT_CACHE_DIR", str(cache))
    return CliRunner().invoke(cli, ["cache", "clear"])


def test_cache_clear_refuses_a_file(tmp_path, monkeypatch):
    target = tmp_path / "notes.txt"
    target.write_text("keep me\n")
    result = clear(target, monkeypatch)
    assert result.exit_code == 2
    assert result.stderr == (f"archlint: error: cannot clear the cache: {target} (ARCHLINT_CACHE_DIR) is not a folder, "
                             "so not an archlint cache; nothing removed\n")
    assert target.read_text() == "keep me\n"


def test_cache_clear_refuses_a_folder_that_is_not_archlints(tmp_path, monkeypatch):
    folder = tmp_path / "src"
    (folder / "ab").mkdir(parents=True)
    (folder / "ab" / "data.pkl").write_bytes(b"someone else's")
    result = clear(folder, monkeypatch)
    assert result.exit_code == 2
    assert result.stderr == (f"archlint: error: cannot clear the cache: {folder} (ARCHLINT_CACHE_DIR) is not an archlint "
                             f"cache folder (it holds no {cache_module.LAYOUT} folder); nothing removed\n")
    assert (folder / "ab" / "data.pkl").read_bytes() == b"someone else's"


@pytest.mark.parametrize("made", [False, True])
def test_cache_clear_of_no_cache_yet_removes_nothing_and_exits_0(tmp_path, monkeypatch, made):
    folder = tmp_path / "cache"
    if made:
        folder.mkdir()
    result = clear(folder, monkeypatch)
    assert result.exit_code == 0
    assert result.stderr == f"archlint: removed 0 cache entries from {folder}\n"
