"""Ctrl-C during a cold scan: one line, `archlint: interrupted`, exit 130, and no worker left.

Ctrl-C at a terminal sends SIGINT to the whole foreground process group: archlint and the worker
processes it spawned. The test does the same (the scan runs in a session of its own) once the
workers are at work, which it knows without timing: a worker stores the facts of each file it
extracts in the cache, so the first cache entry marks a scan in the middle of its extraction.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process groups and /proc")

# A kernel file with enough functions and #if regions that parsing it takes a while.
BODY = "".join(f"__device__ int f{i}(int x) {{\n#if __CUDA_ARCH__ >= 900\n  return x * {i};\n#else\n  return x + {i};\n"
               f"#endif\n}}\n" for i in range(60))


def _tree(root: Path, files: int) -> Path:
    for n in range(files):
        path = root / f"d{n % 20}" / f"k{n}.cu"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(BODY + f"__global__ void k{n}() {{}}\n")
        os.utime(path, (1e9, 1e9))  # older than the racy window: the workers may store their facts
    return root


def _alive_in_group(group: int) -> list[int]:
    """The processes of the group that still run (a zombie has ended; reaping it is its parent's job)."""
    alive = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == group and fields[0] != "Z":
            alive.append(int(entry.name))
    return alive


def _as_at_a_terminal() -> None:
    """Ctrl-C's signal with its default action, as a command started at a terminal has it: a test
    run started in the background of a script inherits it ignored (and so would the scan)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _interrupted_scan(tree: Path, cache: Path, stored: int = 1) -> subprocess.Popen | None:
    """A cold scan, SIGINT sent to its process group once workers have stored `stored` files' facts;
    None when the scan ended first (the tree was too small for this machine)."""
    env = {**os.environ, "ARCHLINT_CACHE_DIR": str(cache)}
    scan = subprocess.Popen([sys.executable, "-m", "archlint", "scan", str(tree), "--jobs", "2"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, start_new_session=True, preexec_fn=_as_at_a_terminal)
    while sum(1 for _ in cache.rglob("*.pkl")) < stored:
        if scan.poll() is not None:
            return None
        time.sleep(0.02)
    try:
        os.killpg(scan.pid, signal.SIGINT)
    except ProcessLookupError:
        return None
    return scan


def _stops_cleanly(tmp_path: Path, tree_of, sizes: tuple[int, ...], stored: Callable[[int], int] = lambda files: 1) -> None:
    """A scan of the first tree (of these many files) still running when interrupted (once
    `stored(files)` files' facts are stored): one line, exit 130, nothing left running."""
    ended = []  # how each attempt ended before it could be interrupted, for the failure message
    for attempt, files in enumerate(sizes):
        tree = tree_of(tmp_path / f"tree{attempt}", files)
        scan = _interrupted_scan(tree, tmp_path / f"cache{attempt}", stored(files))
        if scan is None:
            ended.append(f"{files} files: ended before any facts were stored")
            continue
        signalled = time.monotonic()
        out, err = scan.communicate(timeout=300)
        if scan.returncode in (0, 1):  # it finished before the signal came: a bigger tree
            ended.append(f"{files} files: exit {scan.returncode} after the signal, stderr {err[-200:]!r}")
            continue
        assert (err, scan.returncode, out) == ("archlint: interrupted\n", 130, "")
        assert time.monotonic() - signalled < 15, "the scan went on after the signal"
        deadline = time.monotonic() + 30  # terminated workers take a moment to leave the process table
        while _alive_in_group(scan.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _alive_in_group(scan.pid) == [], "a process outlived the interrupted scan"
        return
    pytest.fail("every scan ended before it could be interrupted: " + "; ".join(ended))


def test_ctrl_c_mid_scan_prints_one_line_and_exits_130(tmp_path):
    _stops_cleanly(tmp_path, _tree, (400, 1600, 6400))


PY_BODY = "import torch\n\n" + "".join(
    f"def gate_{i}(x):\n    major, minor = torch.cuda.get_device_capability()\n    if major >= 9 and x > {i}:\n"
    f"        return load_module('k{i}', sources=['csrc/k{i}.cu'])\n    return None\n\n" for i in range(150))


def _python_tree(root: Path, files: int) -> Path:
    """A package of more Python files than the main process links itself (engine.linking.APART_FROM)."""
    for n in range(files):
        path = root / "pkg" / f"sub{n % 10}" / f"m{n}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(PY_BODY)
        os.utime(path, (1e9, 1e9))
    return root


def test_ctrl_c_while_the_python_side_links_apart_stops_every_process(tmp_path):
    """The Python side's own process and its workers are the main process's grandchildren: it ends
    that process, which ends its workers."""
    _stops_cleanly(tmp_path, _python_tree, (300, 1200, 4800))


def _python_and_cuda_tree(root: Path, files: int) -> Path:
    """The Python package, and the kernels its gates build (more than engine.linking outlines meanwhile)."""
    _python_tree(root, files)
    for n in range(150):
        path = root / "pkg" / "csrc" / f"k{n}.cu"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f'#include "common.cuh"\n__global__ void k{n}(float* x) {{ x[{n}] = 0; }}\n')
        os.utime(path, (1e9, 1e9))
    return root


def test_ctrl_c_while_a_worker_outlines_cuda_files_meanwhile_stops_every_process(tmp_path):
    """More entries stored than the Python files: a CUDA file's outline is among them (the worker
    that outlines them while the Python side links is running, or has run)."""
    _stops_cleanly(tmp_path, _python_and_cuda_tree, (300, 1200, 4800), stored=lambda files: files + 20)


def test_semaphores_reclaimed_after_an_abandoned_pool_print_nothing():
    # a scan ended abruptly leaves its pool's semaphores to multiprocessing's resource tracker,
    # which reclaims them once the scan is gone: the user sees archlint's one line, not its notice
    script = (
        "import multiprocessing, os\n"
        "from archlint.extract.files import Workers\n"
        "Workers(1).pool()\n"
        "held = multiprocessing.get_context('spawn').Lock()  # never released: as an abandoned pool's\n"
        "os._exit(0)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stderr) == (0, "")
