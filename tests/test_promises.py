"""DESIGN.md's promises, checked end to end: read-only scans, byte-identical output, clean interrupts."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from archlint.cli.commands import cli
from archlint.engine import cache as cache_module

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "gate-flashinfer"
POLICY_GATE = "flashinfer.jit.comm.gen_vec_dequant_module"
OLD = time.time() - 3600


def make_tree(tmp_path: Path, extra_sources: int = 0) -> Path:
    tree = tmp_path / "tree"
    shutil.copytree(FIXTURE, tree)
    for i in range(extra_sources):  # enough files for the worker pool to start
        (tree / "flashinfer/data/csrc" / f"extra_{i:03d}.cu").write_text(
            f"#if __CUDA_ARCH__ >= {800 + 100 * (i % 4)}\n__global__ void extra_{i}() {{ __nanosleep({i}); }}\n#endif\n"
        )
    for path in [tree, *tree.rglob("*")]:
        os.utime(path, (OLD, OLD), follow_symlinks=False)
    return tree


def snapshot(tree: Path) -> list[tuple]:
    out = []
    for folder, dirs, files in os.walk(tree):
        for name in sorted(dirs + files):
            path = Path(folder) / name
            info = path.lstat()
            if stat.S_ISLNK(info.st_mode):
                detail = os.readlink(path)
            elif stat.S_ISREG(info.st_mode):
                detail = hashlib.sha256(path.read_bytes()).hexdigest()
            else:
                detail = ""
            out.append((path.relative_to(tree).as_posix(), info.st_mode, info.st_mtime_ns, detail))
    return sorted(out)


# ---------------------------------------------------------------- never writes, imports or executes the tree

AUDIT_SCRIPT = r"""
import json, os, sys
tree, report_path = os.path.realpath(sys.argv[1]), sys.argv[2]
violations = []
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
MUTATIONS = {"os.remove", "os.rename", "os.chmod", "os.chown", "os.utime", "os.mkdir", "os.rmdir",
             "os.symlink", "os.link", "os.truncate", "shutil.rmtree", "shutil.move", "shutil.copyfile"}
RUNS = {"subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.startfile"}

def under(value):
    if isinstance(value, bytes):
        value = os.fsdecode(value)
    if not isinstance(value, str):
        return False
    path = os.path.realpath(value)
    return path == tree or path.startswith(tree + os.sep)

def hook(event, args):
    if event == "open":
        path, mode, flags = args
        writing = any(c in mode for c in "wax+") if isinstance(mode, str) else bool((flags or 0) & WRITE_FLAGS)
        if writing and under(path):
            violations.append(f"opened for writing: {path}")
    elif event == "import" and len(args) > 1 and under(args[1]):
        violations.append(f"imported: {args[1]}")
    elif event == "exec" and under(getattr(args[0], "co_filename", None)):
        violations.append(f"executed: {args[0].co_filename}")
    elif event == "compile" and len(args) > 1 and under(args[1]):
        violations.append(f"compiled: {args[1]}")
    elif event in MUTATIONS and any(under(a) for a in args):
        violations.append(f"{event}: {args}")
    elif event in RUNS and tree in repr(args):
        violations.append(f"{event}: {args}")

sys.addaudithook(hook)
from archlint.cli import main
try:
    main(["scan", tree, "--format", "json", "--jobs", "1", "-o", report_path])
    code = 0
except SystemExit as stop:
    code = stop.code
print(json.dumps({"code": code, "violations": violations}))
"""


@pytest.fixture
def read_only_tree(tmp_path):
    tree = make_tree(tmp_path)
    for path in tree.rglob("*.py"):  # importing or running any of them would show
        path.write_text(path.read_text() + '\nraise RuntimeError("a scanned file was imported")\n')
    (tree / "flashinfer/jit/link_to_env.py").symlink_to("env.py")
    subprocess.run(["chmod", "-R", "a-w", str(tree)], check=True)
    yield tree
    subprocess.run(["chmod", "-R", "u+w", str(tree)], check=True)


def test_scan_never_writes_imports_or_runs_the_tree(tmp_path, read_only_tree):
    before = snapshot(read_only_tree)
    report = tmp_path / "report.json"
    env = {**os.environ, "ARCHLINT_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-c", AUDIT_SCRIPT, str(read_only_tree), str(report)],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    outcome = json.loads(done.stdout.strip().splitlines()[-1])
    assert outcome["violations"] == []
    assert outcome["code"] in (0, 1)
    assert any(f["symbol"] == POLICY_GATE for f in json.loads(report.read_text())["findings"])
    assert snapshot(read_only_tree) == before
    assert list((tmp_path / "cache").rglob("*.pkl")), "the cache lives outside the tree and was used"


# ---------------------------------------------------------------- same input, same bytes


def run_cli(tree: Path, fmt: str, *, jobs: int, cache: Path | None, seed: str) -> str:
    env = {**os.environ, "PYTHONHASHSEED": seed, "NO_COLOR": "1"}
    args = [sys.executable, "-m", "archlint", "scan", str(tree), "--format", fmt, "--jobs", str(jobs)]
    if cache is None:
        args.append("--no-cache")
    else:
        env["ARCHLINT_CACHE_DIR"] = str(cache)
    done = subprocess.run(args, capture_output=True, env=env, timeout=120)
    assert done.returncode in (0, 1), done.stderr.decode()
    return done.stdout.decode()


@pytest.mark.parametrize("fmt", ["text", "json", "sarif"])
def test_output_is_byte_identical(tmp_path, fmt):
    tree = make_tree(tmp_path, extra_sources=70)
    cache = tmp_path / f"cache-{fmt}"
    first = run_cli(tree, fmt, jobs=1, cache=None, seed="0")
    assert "AL101" in first
    runs = {
        "again": run_cli(tree, fmt, jobs=1, cache=None, seed="0"),
        "two jobs, other hash seed": run_cli(tree, fmt, jobs=2, cache=None, seed="4242"),
        "cold cache": run_cli(tree, fmt, jobs=2, cache=cache, seed="1"),
        "warm cache": run_cli(tree, fmt, jobs=1, cache=cache, seed="2"),
    }
    assert list(cache.rglob("*.pkl"))
    for name, output in runs.items():
        assert output == first, name


# ---------------------------------------------------------------- interrupts


def _interrupt(*args, **kwargs):
    raise KeyboardInterrupt


def test_interrupt_leaves_no_output_file(tmp_path, monkeypatch):
    import archlint.engine.steps as steps

    tree = make_tree(tmp_path)
    output = tmp_path / "out" / "report.sarif"
    output.parent.mkdir()
    monkeypatch.setattr(steps, "run_checks", _interrupt)  # the full scan imports it from there as it runs
    result = CliRunner().invoke(cli, ["scan", str(tree), "--format", "sarif", "-o", str(output), "--no-cache"])
    assert result.exit_code == 130
    assert "interrupted" in result.output and "Traceback" not in result.output
    assert list(output.parent.iterdir()) == []


def test_interrupt_while_writing_the_report(tmp_path, monkeypatch):
    import archlint.postprocess.fixes as fixes

    tree = make_tree(tmp_path)
    output = tmp_path / "out" / "report.json"
    output.parent.mkdir()
    real_replace = os.replace

    def replace_then_stop(source, target):
        if Path(target) == output:
            raise KeyboardInterrupt
        return real_replace(source, target)

    monkeypatch.setattr(fixes.os, "replace", replace_then_stop)
    result = CliRunner().invoke(cli, ["scan", str(tree), "--format", "json", "-o", str(output), "--no-cache"])
    assert result.exit_code == 130
    assert list(output.parent.iterdir()) == []


def _entries_are_whole(folder: Path) -> None:
    assert not list(folder.rglob(".tmp-*")), "a half-written cache entry was left"
    for entry in folder.rglob("*.pkl"):
        key = bytes.fromhex(entry.stem)
        assert cache_module._decode(entry.read_bytes(), key) is not None, entry


@pytest.mark.parametrize("where", ["extraction", "entry write"])
def test_interrupt_leaves_no_half_written_cache_entry(tmp_path, monkeypatch, where):
    import archlint.extract.files as facts

    tree = make_tree(tmp_path)
    monkeypatch.setenv("ARCHLINT_CACHE_DIR", str(tmp_path / "cache"))
    calls = {"n": 0}
    if where == "extraction":
        real = facts.extract_file

        def extract_then_stop(*args, **kwargs):
            calls["n"] += 1
            if calls["n"] == 6:
                raise KeyboardInterrupt
            return real(*args, **kwargs)

        monkeypatch.setattr(facts, "extract_file", extract_then_stop)
    else:
        real_replace = os.replace

        def replace_then_stop(source, target):
            calls["n"] += 1
            if calls["n"] == 3:
                raise KeyboardInterrupt
            return real_replace(source, target)

        monkeypatch.setattr(cache_module.os, "replace", replace_then_stop)
    result = CliRunner().invoke(cli, ["scan", str(tree), "--format", "json", "--jobs", "1"])
    assert result.exit_code == 130
    _entries_are_whole(tmp_path / "cache")
    if where == "entry write":
        # the third rename: entries and the stat table are written batch by batch, as files are read
        assert list((tmp_path / "cache").rglob("*.pkl")), "entries written before the interrupt stay usable"
