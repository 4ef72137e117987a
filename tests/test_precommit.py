"""The pre-commit hook: its manifest, and a real `pre-commit try-repo` run against this checkout."""

from __future__ import annotations

import importlib
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import archlint.engine

REPO = Path(__file__).resolve().parent.parent
HOOKS = REPO / ".pre-commit-hooks.yaml"

GATED_PY = '''from pathlib import Path

CSRC = Path(__file__).parent.parent / "csrc"


def gen_comm_module():
    nvcc_flags = get_nvcc_flags_list(supported_major_versions=[9, 10])
    return gen_jit_spec("comm", [CSRC / "comm.cu"], extra_cuda_cflags=nvcc_flags)
'''
PLAIN_PY = '''from pathlib import Path

CSRC = Path(__file__).parent.parent / "csrc"


def gen_comm_module():
    return gen_jit_spec("comm", [CSRC / "comm.cu"])
'''
KERNEL_CU = '''__global__ void add_one(float* data, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] += 1.0f;
}
'''


def test_manifest():
    clientlib = pytest.importorskip("pre_commit.clientlib", reason="pre-commit (a test extra) is not installed")
    (hook,) = clientlib.load_manifest(str(HOOKS))
    assert hook["id"] == "archlint"
    assert hook["language"] == "python"
    assert hook["entry"] == "archlint scan"
    assert hook["types_or"] == ["cuda", "c++", "c", "python"]
    assert hook["require_serial"] is True


def _skip_reason() -> str | None:
    if not hasattr(archlint.engine, "scan"):
        return "archlint.engine.scan is not implemented yet: the hook has nothing to run"
    try:
        importlib.import_module("archlint.engine.pipeline")
    except ImportError as error:
        return f"archlint.engine.scan cannot run yet (its pipeline does not import: {error})"
    try:
        import pre_commit  # noqa: F401
    except ImportError:
        return "pre-commit (a test extra) is not installed"
    if shutil.which("git") is None:
        return "git is not installed"
    readme = tomllib.loads((REPO / "pyproject.toml").read_text())["project"].get("readme")
    if isinstance(readme, str) and not (REPO / readme).is_file():
        return f"pyproject.toml names {readme}, which is missing, so pre-commit cannot pip-install the hook"
    return None


def _repo(root: Path, python: str) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "csrc").mkdir()
    (root / "pkg" / "jit.py").write_text(python)
    (root / "csrc" / "comm.cu").write_text(KERNEL_CU)
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(["git", "add", "."], cwd=root, check=True)
    return root


def _try_repo(root: Path, home: Path) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "PRE_COMMIT_HOME": str(home),
        "GIT_AUTHOR_NAME": "archlint tests", "GIT_AUTHOR_EMAIL": "tests@archlint.invalid",
        "GIT_COMMITTER_NAME": "archlint tests", "GIT_COMMITTER_EMAIL": "tests@archlint.invalid",
        "NO_COLOR": "1",
    }
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", "try-repo", str(REPO), "archlint", "--all-files", "--color", "never"],
        cwd=root, env=env, capture_output=True, text=True, timeout=900,
    )


@pytest.fixture(scope="module")
def pre_commit_home(tmp_path_factory):
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    return tmp_path_factory.mktemp("pre-commit-home")


def test_hook_fails_on_a_policy_gate(tmp_path, pre_commit_home):
    root = _repo(tmp_path / "gated", GATED_PY)
    done = _try_repo(root, pre_commit_home)
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert "pkg/jit.py:7:" in output and "AL101" in output, output


def test_hook_passes_on_a_clean_tree(tmp_path, pre_commit_home):
    root = _repo(tmp_path / "clean", PLAIN_PY)
    done = _try_repo(root, pre_commit_home)
    assert done.returncode == 0, done.stdout + done.stderr
