"""Paths as a repository sees them: a package in a subfolder, scanned from the repository's top.

SARIF URIs, GitHub annotations, the text report, a baseline and a `--diff` all name files from
the repository root, so GitHub attaches alerts to the right file, `git apply` takes the diff
there, and a baseline written by `archlint scan mykern` matches in the pre-commit hook's mode.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from archlint.cli.commands import cli
from archlint.discover import repository_root

GATE_PY = '''from pathlib import Path

CSRC = Path(__file__).parent.parent / "csrc"


def gen_comm_module():
    nvcc_flags = get_nvcc_flags_list(supported_major_versions=[9, 10])
    return gen_jit_spec("comm", [CSRC / "comm.cu"], extra_cuda_cflags=nvcc_flags)
'''
UNIT_CU = '''#include "../include/comm.cuh"

void launch_all_reduce(float* data, int n) {
  one_shot_all_reduce<<<1, 128>>>(data, n);
}
'''
HEADER = '''#pragma once

__global__ void one_shot_all_reduce(float* data, int n) {
#if (defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900))
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] += 1.0f;
#endif
}
'''
# the same header after an edit that leaves the kernel empty on sm_120 (its body needs < 1200)
HEADER_EMPTY_ON_SM120 = HEADER.replace("(__CUDA_ARCH__ >= 900))", "(__CUDA_ARCH__ >= 900) && (__CUDA_ARCH__ < 1200))")


def git(repo: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True)


@pytest.fixture
def repo(tmp_path, monkeypatch) -> Path:
    """A git repository with the package in `mykern/`; the working directory is its top."""
    root = tmp_path / "repo"
    for relative, text in (("mykern/jit/comm.py", GATE_PY), ("mykern/csrc/comm.cu", UNIT_CU),
                           ("mykern/include/comm.cuh", HEADER)):
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text)
    git(root, "init", "-q")
    git(root, "add", ".")
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    monkeypatch.chdir(root)
    return root


def scan(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["scan", *args, "--no-cache", "--jobs", "1", "--target", "sm_120a"])
    return result.exit_code, result.output


def sarif_uris(document: dict) -> set[str]:
    """Every artifactLocation URI in a SARIF log, wherever it sits."""
    found: set[str] = set()

    def walk(node: object) -> None:
        if isinstance(node, dict):
            location = node.get("artifactLocation")
            if isinstance(location, dict) and location.get("uriBaseId") == "%SRCROOT%":
                found.add(location["uri"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(document)
    return found


def test_sarif_uris_resolve_from_the_repository_root(repo, monkeypatch):
    def no_programs(*args, **kwargs):
        raise AssertionError(f"a program was run: {args}")

    monkeypatch.setattr(subprocess, "Popen", no_programs)  # the root is found by looking, not by running git
    code, output = scan("mykern", "--format", "sarif")
    assert code == 1, output
    document = json.loads(output)
    uris = sarif_uris(document)
    assert {"mykern/jit/comm.py", "mykern/csrc/comm.cu", "mykern/include/comm.cuh"} <= uris
    assert all(uri.startswith("mykern/") and (repo / uri).is_file() for uri in uris), uris
    run = document["runs"][0]
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == repo.resolve().as_uri() + "/"
    assert run["results"][0]["locations"][0]["physicalLocation"]["region"]["startLine"] == 7


def test_github_annotations_and_text_name_files_from_the_root(repo):
    code, output = scan("mykern", "--format", "github")
    assert code == 1
    assert output.startswith("::warning file=mykern/jit/comm.py,line=7,col=18,")
    code, text = scan("mykern")
    assert "\nmykern/jit/comm.py:7:18: AL101 " in text  # after the gates for the target asked for
    assert "  mykern/jit/comm.py:7  gen_comm_module  " in text
    assert "    mykern/jit/comm.py:8: builds mykern/csrc/comm.cu\n" in text


def test_paths_from_the_working_directory_outside_git(tmp_path, monkeypatch):
    (tmp_path / "work" / "mykern" / "jit").mkdir(parents=True)
    (tmp_path / "work" / "mykern" / "jit" / "comm.py").write_text(GATE_PY)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    monkeypatch.chdir(tmp_path / "work")
    code, output = scan("mykern", "--format", "json")
    assert [f["path"] for f in json.loads(output)["findings"]] == ["mykern/jit/comm.py"]


def test_baseline_of_a_folder_scan_matches_in_pre_commit_mode(repo):
    code, _ = scan("mykern", "--write-baseline", "baseline.json")
    assert json.loads((repo / "baseline.json").read_text())["findings"][0]["path"] == "mykern/jit/comm.py"
    code, output = scan("mykern/jit/comm.py", "--baseline", "baseline.json")  # explicit files, as the hook passes
    assert code == 0, output
    assert output.rstrip().endswith("0 findings in 3 files; 1 gate; 1 in baseline")


def test_baseline_with_scan_root_paths_still_matches(repo, monkeypatch):
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(repo))  # written as before: paths from the scanned folder
    monkeypatch.chdir(repo / "mykern")
    scan(".", "--write-baseline", str(repo / "old.json"))
    assert json.loads((repo / "old.json").read_text())["findings"][0]["path"] == "jit/comm.py"
    monkeypatch.chdir(repo)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(repo.parent))
    code, output = scan("mykern", "--baseline", "old.json")
    assert code == 0 and "1 in baseline" in output, output


def test_diff_applies_with_git_apply_from_the_root(repo):
    code, output = scan("mykern", "--diff", "-o", "widen.patch")
    assert code == 1 and output == ""
    patch = (repo / "widen.patch").read_text()
    assert patch.startswith("--- a/mykern/jit/comm.py\n+++ b/mykern/jit/comm.py\n")
    git(repo, "apply", "widen.patch")
    assert "supported_major_versions=[9, 10, 12]" in (repo / "mykern/jit/comm.py").read_text()


def test_fix_edits_the_file_under_the_subfolder(repo):
    code, output = scan("mykern", "--fix")
    assert "supported_major_versions=[9, 10, 12]" in (repo / "mykern/jit/comm.py").read_text()
    assert "fixed 1 file(s): mykern/jit/comm.py" in output


def test_staged_header_edit_reports_the_gates_empty_verdict(repo):
    """The hook passes only the staged header; the gate's AL103 runs through it and is reported."""
    (repo / "mykern/include/comm.cuh").write_text(HEADER_EMPTY_ON_SM120)
    git(repo, "add", "mykern/include/comm.cuh")
    code, output = scan("mykern/include/comm.cuh", "--format", "json")
    document = json.loads(output)
    al103 = [f for f in document["findings"] if f["rule"] == "AL103"]
    assert [(f["path"], f["line"]) for f in al103] == [("mykern/jit/comm.py", 7)]
    assert "mykern/include/comm.cuh" in {hop["path"] for hop in al103[0]["evidence"]}
    [gate] = document["gates"]
    assert [(v["target"], v["verdict"]) for v in gate["verdicts"]] == [("sm_120a", "EMPTY")]
    code, text = scan("mykern/include/comm.cuh")
    assert text.rstrip().splitlines()[-1].endswith("; 1 gate")


def test_unrelated_staged_file_reports_no_gate(repo):
    (repo / "mykern/jit/other.py").write_text("def helper():\n    return 1\n")
    code, output = scan("mykern/jit/other.py", "--format", "json")
    document = json.loads(output)
    assert document["findings"] == [] and document["gates"] == []


def test_repository_root_is_found_from_a_git_file(tmp_path, monkeypatch):
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    (tmp_path / "wt" / "pkg").mkdir(parents=True)
    (tmp_path / "wt" / ".git").write_text("gitdir: /elsewhere/.git/worktrees/wt\n")  # a linked work tree
    assert repository_root(tmp_path / "wt" / "pkg") == (tmp_path / "wt").resolve()
    assert repository_root(tmp_path) is None


@pytest.mark.parametrize("glob", ["mykern/jit/**", "jit/**", "comm.py"])
def test_per_file_ignores_from_the_repository_or_the_scanned_folder(repo, glob):
    (repo / "pyproject.toml").write_text(f'[tool.archlint.per-file-ignores]\n"{glob}" = ["AL101"]\n')
    code, output = scan("mykern", "--format", "json")
    assert code == 0 and json.loads(output)["findings"] == [], output


def test_per_file_ignores_of_another_folder_leave_the_finding(repo):
    (repo / "pyproject.toml").write_text('[tool.archlint.per-file-ignores]\n"other/jit/**" = ["AL101"]\n')
    code, output = scan("mykern", "--format", "json")
    assert [f["rule"] for f in json.loads(output)["findings"]] == ["AL101"]


# ---------------------------------------------------------------- every command, every format


def command(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, [*args, "--no-cache"])
    return result.exit_code, result.output


def all_paths(node: object) -> set[str]:
    """Every `path`, `source`, `units`/`sources` entry and gate `id` in a JSON document (a finding's
    `properties` are not paths: runtime's `source` there is where the device was read)."""
    found: set[str] = set()
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "properties":
                continue
            if key in ("path", "source", "id") and isinstance(value, str) and value:
                found.add(value)
            elif key in ("units", "sources") and isinstance(value, list):
                found.update(v for v in value if isinstance(v, str))
            else:
                found |= all_paths(value)
    elif isinstance(node, list):
        for item in node:
            found |= all_paths(item)
    return found


def test_gates_command_names_files_from_the_root(repo):
    code, text = command("gates", "mykern", "--target", "sm_120a")
    assert code == 0, text
    assert text.startswith("`gen_comm_module` at mykern/jit/comm.py:7: get_nvcc_flags_list(")
    code, output = command("gates", "mykern", "--target", "sm_120a", "--format", "json")
    [gate] = json.loads(output)["gates"]
    assert (gate["id"], gate["path"], gate["sources"]) == ("mykern/jit/comm.py:7:18", "mykern/jit/comm.py",
                                                            ["mykern/csrc/comm.cu"])
    paths = all_paths(json.loads(output))
    assert paths and all(p.startswith("mykern/") for p in paths), paths


def test_gates_command_in_pre_commit_mode_keeps_the_staged_gate(repo):
    code, output = command("gates", "mykern/jit/comm.py", "--target", "sm_120a", "--format", "json")
    assert [g["id"] for g in json.loads(output)["gates"]] == ["mykern/jit/comm.py:7:18"]


def test_runtime_names_files_from_the_root(repo):
    code, text = command("runtime", "mykern", "--device-profile", "sm_120")
    assert code == 1, text
    assert "\nmykern/jit/comm.py:7:18: POLICY `get_nvcc_flags_list(supported_major_versions=[9, 10])`\n" in text
    assert "\nmykern/jit/comm.py:7:18: AL301 This machine's " in text
    code, output = command("runtime", "mykern", "--device-profile", "sm_120", "--format", "json")
    document = json.loads(output)
    [gate] = document["gates"]
    assert (gate["gate_id"], gate["location"]["path"], gate["units"]) == (
        "mykern/jit/comm.py:7:18", "mykern/jit/comm.py", ["mykern/csrc/comm.cu"])
    [finding] = document["findings"]
    assert finding["rule"] == "AL301" and finding["location"]["path"] == "mykern/jit/comm.py"
    paths = all_paths(document["gates"]) | all_paths(document["findings"])
    assert all(p.startswith("mykern/") for p in paths), paths


def test_runtime_per_file_ignores_from_the_scanned_folder_still_match(repo):
    (repo / "pyproject.toml").write_text('[tool.archlint.per-file-ignores]\n"jit/**" = ["AL301"]\n')
    code, output = command("runtime", "mykern", "--device-profile", "sm_120", "--format", "json")
    assert code == 0 and json.loads(output)["findings"] == [], output


def test_html_anchors_and_links_name_files_from_the_root(repo):
    code, _ = scan("mykern", "-o", "matrix.html")
    page = (repo / "matrix.html").read_text()
    assert 'id="mykern/jit/comm.py:7:18@sm_120a"' in page  # `matrix.html#mykern/jit/comm.py:7:18@sm_120a` opens the cell
    assert 'data-gate="mykern/jit/comm.py:7:18"' in page
    assert 'href="mykern/jit/comm.py#L7"' in page
    assert 'id="jit/' not in page and 'data-gate="jit/' not in page


def test_scan_json_gate_id_names_the_file_from_the_root(repo):
    code, output = scan("mykern", "--format", "json")
    assert [g["id"] for g in json.loads(output)["gates"]] == ["mykern/jit/comm.py:7:18"]


_PIECES = ["a", "b", ".", "/", "`", "'", '"', "<", ">", "-", " ", "_", "é", "1", "(", ":", "x/y.h", "x/y", "y.h"]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=12).map("".join), st.sampled_from(["x/y.h", "x/y", "y.h", "a", "a.b"]))
def test_a_message_names_a_path_where_it_stands_on_its_own(message, path):
    """A path in a message is moved under the report root where it stands on its own (`builds X`,
    `(X:557)`), not where it is the tail of a longer path or a quoted include: as the pattern says."""
    from archlint.postprocess.paths import _standing_replaced

    pattern = re.compile(rf"(?<![\w./`'\"<-]){re.escape(path)}(?![\w/`'\">-]|\.\w)")
    assert _standing_replaced(message, path, f"pkg/{path}") == pattern.sub(lambda _: f"pkg/{path}", message)
