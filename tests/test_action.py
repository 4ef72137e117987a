"""The GitHub Action (action.yml): its metadata against the published schema for action metadata,
and its `run:` steps executed exactly as the YAML gives them.

The schema is SchemaStore's github-action.json (https://json.schemastore.org/github-action.json),
vendored as tests/schemas/github-action.json because the test may not reach the network;
tests/schemas/README.md says which upstream commit it is and how it was taken.

The steps run as GitHub runs a composite action's steps: each `run:` with `bash --noprofile --norc
-eo pipefail`, in the workspace (a temporary git repository with the scanned package in a
subfolder), with GITHUB_OUTPUT (a fresh file per step), GITHUB_STEP_SUMMARY, GITHUB_ENV,
RUNNER_TEMP and the step's `env:`; every `${{ ... }}` expression is replaced by its value for the
run (inputs with action.yml's defaults, `github.*`, `runner.*`, earlier steps' outputs), and an
expression the test cannot give a value stops it. `uses:` steps (setup-python, the cache, the
upload) are GitHub's own actions and are not run; setup-python's `python-path` output is the
interpreter running the tests, so the install step makes its virtual environment and pip-installs
this checkout exactly as it would on a runner. A fresh virtual environment first on PATH stands for
the job's own Python, which the action must leave as it found it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import jsonschema
import pytest
import yaml

from archlint import __version__

REPO = Path(__file__).resolve().parent.parent
ACTION = REPO / "action.yml"
SCHEMA = Path(__file__).resolve().parent / "schemas" / "github-action.json"
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")

GATED_PY = '''from pathlib import Path

CSRC = Path(__file__).parent.parent / "csrc"


def gen_comm_module():
    nvcc_flags = get_nvcc_flags_list(supported_major_versions=[9, 10])
    return gen_jit_spec("comm", [CSRC / "comm.cu"], extra_cuda_cflags=nvcc_flags)
'''
KERNEL_CU = '''__global__ void add_one(float* data, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] += 1.0f;
}
'''


def action() -> dict:
    return yaml.safe_load(ACTION.read_text())


# ---------------------------------------------------------------- the metadata


def test_action_yml_matches_the_published_schema():
    schema = json.loads(SCHEMA.read_text())
    jsonschema.Draft7Validator.check_schema(schema)
    jsonschema.Draft7Validator(schema).validate(action())


def test_the_schema_catches_a_broken_action():
    """The vendored schema is the real one: a composite step without `shell` is refused."""
    broken = action()
    step = next(s for s in broken["runs"]["steps"] if "run" in s)
    del step["shell"]
    errors = list(jsonschema.Draft7Validator(json.loads(SCHEMA.read_text())).iter_errors(broken))
    assert errors


def test_action_is_composite_and_uses_current_actions():
    runs = action()["runs"]
    assert runs["using"] == "composite"
    used = [step["uses"] for step in runs["steps"] if "uses" in step]
    assert "github/codeql-action/upload-sarif@v4" in used
    assert {"actions/cache/restore@v4", "actions/cache/save@v4"} <= set(used)
    assert set(action()["inputs"]) == {"path", "targets", "args", "category", "upload-sarif", "python-version"}


# ---------------------------------------------------------------- running the steps


@dataclass
class Run:
    """One run of the action: the context its expressions read, and what its steps left."""

    workspace: Path
    temp: Path
    path_env: str
    inputs: dict[str, str]
    github: dict[str, str] = field(default_factory=dict)
    outputs: dict[str, dict[str, str]] = field(default_factory=dict)  # step id -> its outputs
    logs: dict[str, subprocess.CompletedProcess] = field(default_factory=dict)  # step name -> its run

    @property
    def summary(self) -> Path:
        return self.temp / "step_summary.md"

    def value(self, expression: str) -> str:
        if expression.startswith("inputs."):
            name = expression.removeprefix("inputs.")
            declared = action()["inputs"]
            assert name in declared, f"action.yml uses undeclared input {name}"
            return self.inputs.get(name, str(declared[name].get("default", "")))
        if expression.startswith("steps."):
            step, kind, name = expression.split(".")[1:]
            assert kind == "outputs", expression
            return self.outputs.get(step, {}).get(name, "")
        known = {"github.action_path": str(REPO), "runner.temp": str(self.temp), "runner.os": "Linux", **self.github}
        assert expression in known, f"the test has no value for ${{{{ {expression} }}}}"
        return known[expression]

    def substitute(self, text: str) -> str:
        return EXPRESSION.sub(lambda match: self.value(match.group(1)), str(text))

    def run_step(self, step: dict) -> subprocess.CompletedProcess:
        assert step.get("shell") == "bash", f"step {step['name']!r}: composite run steps need `shell: bash`"
        assert "if" not in step, "a run step's `if:` would not be tested here: decide inside the script"
        script = self.temp / "step.sh"
        script.write_text(self.substitute(step["run"]))
        output = self.temp / f"output-{len(self.logs)}"
        output.write_text("")
        inherited = {name: value for name, value in os.environ.items()
                     if not name.startswith(("GITHUB_", "RUNNER_", "ARCHLINT_", "VIRTUAL_ENV"))}
        env = {
            **inherited,
            "PATH": self.path_env, "HOME": str(self.temp / "home"), "LANG": "C.UTF-8", "NO_COLOR": "1",
            "GITHUB_WORKSPACE": str(self.workspace), "GITHUB_ACTION_PATH": str(REPO), "GITHUB_OUTPUT": str(output),
            "GITHUB_STEP_SUMMARY": str(self.summary), "GITHUB_ENV": str(self.temp / "github_env"), "RUNNER_TEMP": str(self.temp),
            "RUNNER_OS": "Linux", "GITHUB_ACTIONS": "true", "CI": "true",
            **{name: self.substitute(value) for name, value in step.get("env", {}).items()},
        }
        done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], cwd=self.workspace,
                              env=env, capture_output=True, text=True, timeout=600)
        self.logs[step["name"]] = done
        if "id" in step:
            self.outputs[step["id"]] = dict(line.split("=", 1) for line in output.read_text().splitlines() if "=" in line)
        return done

    def run_all(self) -> None:
        for step in action()["runs"]["steps"]:
            if "run" in step:
                self.run_step(step)
            elif str(step.get("uses", "")).startswith("actions/setup-python@"):
                self.outputs[step.get("id", "setup-python")] = {"python-path": sys.executable}  # what it fetched, PATH untouched

    def step(self, name: str) -> dict:
        return next(step for step in action()["runs"]["steps"] if step.get("id") == name or step["name"] == name)


def _workspace(root: Path) -> Path:
    """A repository with the package in a subfolder: mykern/pkg/jit.py gates mykern/csrc/comm.cu."""
    (root / "mykern" / "pkg").mkdir(parents=True)
    (root / "mykern" / "csrc").mkdir()
    (root / "mykern" / "pkg" / "jit.py").write_text(GATED_PY)
    (root / "mykern" / "csrc" / "comm.cu").write_text(KERNEL_CU)
    (root / "README.md").write_text("kernels\n")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(["git", "add", "."], cwd=root, check=True)
    return root


@pytest.fixture(scope="module")
def python_env(tmp_path_factory) -> str:
    """PATH with a fresh virtual environment first: the job's own Python, set up before the action."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    venv = tmp_path_factory.mktemp("action-python") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    return f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"


def _new_run(tmp_path: Path, path_env: str, **inputs: str) -> Run:
    temp = tmp_path / "runner-temp"
    (temp / "home").mkdir(parents=True)
    push = {"github.event_name": "push", "github.repository": "gpu-team/kernels",
            "github.event.pull_request.head.repo.full_name": ""}
    return Run(_workspace(tmp_path / "workspace"), temp, path_env, inputs, push)


@pytest.fixture(scope="module")
def full_run(tmp_path_factory, python_env) -> Run:
    run = _new_run(tmp_path_factory.mktemp("action"), python_env, path="mykern", targets="sm_90a,sm_120a")
    run.run_all()
    return run


def test_install_step_installs_this_checkout(full_run):
    done = full_run.logs["Install archlint"]
    assert done.returncode == 0, done.stdout + done.stderr
    assert full_run.outputs["install"]["version"] == __version__


def test_install_leaves_the_jobs_python_as_it_was(full_run):
    """archlint and its dependencies go into a virtual environment under runner.temp; the `python`
    later steps of the job run (first on PATH) has none of them, and neither PATH nor the job's
    environment file is changed."""
    job_python = Path(full_run.path_env.split(os.pathsep)[0]) / "python"
    for package in ("archlint", "tree_sitter", "click"):
        found = subprocess.run([str(job_python), "-c", f"import {package}"], cwd=full_run.temp, capture_output=True,
                               text=True, env={"PATH": full_run.path_env})
        assert found.returncode != 0, f"{package} was installed into the job's python"
    archlint = Path(full_run.outputs["install"]["archlint"])
    assert archlint.is_file() and archlint.is_relative_to(full_run.temp)
    assert not (full_run.temp / "github_env").exists()
    setup = full_run.step("python")
    assert setup["uses"].startswith("actions/setup-python@") and setup["with"]["update-environment"] is False


def test_scan_writes_sarif_whose_uris_resolve(full_run):
    done = full_run.logs["Scan"]
    assert done.returncode == 0, done.stdout + done.stderr
    assert full_run.outputs["scan"]["exit-code"] == "1"  # an AL101 warning, at the default --fail-on
    sarif = json.loads(Path(full_run.outputs["scan"]["sarif-file"]).read_text())
    run = sarif["runs"][0]
    assert run["automationDetails"]["id"].startswith("archlint")
    results = [r for r in run["results"] if r["ruleId"] == "AL101"]
    assert results and all(r["properties"]["targets"] == ["sm_120a"] for r in results)
    base = run["originalUriBaseIds"]["%SRCROOT%"]["uri"].removeprefix("file://")
    for result in results:
        uri = result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        assert (Path(base) / uri).is_file(), uri
        assert uri.endswith("pkg/jit.py")


def test_scan_writes_the_matrix_to_the_job_summary(full_run):
    summary = full_run.summary.read_text()
    assert "| gate | where | sm_90a | sm_120a |" in summary  # the `targets` input reached archlint
    assert re.search(r"^\| `gen_comm_module` \| `[^`]*pkg/jit\.py:7` \| \u2713 \| \U0001f7e8 P \|$", summary, re.M), summary
    assert "- sm_120a: 1 gate could be widened, 0 genuine, 0 empty, 0 unknown, 0 admitted" in summary


def test_scan_fills_the_cache_the_action_saves(full_run):
    cache = full_run.temp / "archlint-cache"
    assert cache.is_dir() and any(path.is_file() for path in cache.rglob("*"))
    saved = full_run.step("Save the archlint cache")["with"]["path"]
    assert full_run.substitute(saved) == str(cache)


def test_push_uploads_and_findings_fail_the_job_after(full_run):
    assert full_run.outputs["upload"]["upload"] == "true"
    failed = full_run.logs["Fail on findings"]
    assert failed.returncode == 1
    assert "::error title=archlint::" in failed.stdout


def test_fork_pull_request_skips_the_upload_with_a_notice(tmp_path, python_env):
    run = _new_run(tmp_path, python_env)
    run.github.update({"github.event_name": "pull_request", "github.event.pull_request.head.repo.full_name": "someone/kernels"})
    done = run.run_step(run.step("upload"))
    assert done.returncode == 0, done.stderr
    assert run.outputs["upload"]["upload"] == "false"
    assert re.search(r"^::notice title=archlint::SARIF upload skipped: .*fork someone/kernels", done.stdout, re.M)
    run.github["github.event.pull_request.head.repo.full_name"] = "gpu-team/kernels"  # a branch of the same repository
    run.run_step(run.step("upload"))
    assert run.outputs["upload"]["upload"] == "true"


def test_upload_can_be_turned_off(tmp_path, python_env):
    run = _new_run(tmp_path, python_env, **{"upload-sarif": "false"})
    done = run.run_step(run.step("upload"))
    assert run.outputs["upload"]["upload"] == "false" and "::notice" not in done.stdout


def test_cache_key_follows_the_scanned_sources(tmp_path, python_env):
    run = _new_run(tmp_path, python_env, path="mykern")
    run.run_step(run.step("key"))
    first = run.outputs["key"]["sources"]
    assert re.fullmatch(r"[0-9a-f]{64}", first)
    (run.workspace / "README.md").write_text("outside the scanned path\n")
    subprocess.run(["git", "add", "."], cwd=run.workspace, check=True)
    run.run_step(run.step("key"))
    assert run.outputs["key"]["sources"] == first
    (run.workspace / "mykern" / "csrc" / "comm.cu").write_text(KERNEL_CU + "// changed\n")
    subprocess.run(["git", "add", "."], cwd=run.workspace, check=True)
    run.run_step(run.step("key"))
    assert run.outputs["key"]["sources"] != first


def test_no_findings_no_failure(tmp_path, python_env):
    run = _new_run(tmp_path, python_env)
    run.outputs["scan"] = {"exit-code": "0"}
    assert run.run_step(run.step("Fail on findings")).returncode == 0


# ---------------------------------------------------------------- the workflow without the action


DOCS = REPO / "docs" / "github-code-scanning.md"
STATUS_CHECK = re.compile(r"\b(success|failure|always|cancelled)\(\)")


def _plain_steps() -> list[dict]:
    """The steps of the docs' "Without the action" workflow, as YAML reads them."""
    section = DOCS.read_text().split("## Without the action", 1)[1]
    block = re.search(r"```yaml\n(.*?)```", section, re.S)
    assert block, "no yaml block under 'Without the action'"
    return yaml.safe_load(block.group(1))["steps"]


def _runs_after_a_failure(step: dict) -> bool:
    """GitHub runs a step after an earlier one failed only when its `if:` asks for it (an `if:`
    without a status check means `success() && ...`)."""
    condition = str(step.get("if", ""))
    return bool(re.search(r"\b(always|failure)\(\)", condition)) and STATUS_CHECK.search(condition) is not None


def _fails_on_findings(step: dict) -> bool:
    """An `archlint scan` run step exits 1 on a tree with findings unless told `--fail-on none`."""
    script = str(step.get("run", ""))
    return "archlint scan" in script and "--fail-on none" not in script


def test_plain_workflow_reaches_the_sarif_upload_on_a_tree_with_findings():
    steps = _plain_steps()
    upload = next(i for i, step in enumerate(steps) if str(step.get("uses", "")).startswith("github/codeql-action/upload-sarif"))
    failed = None
    for step in steps[:upload]:
        if failed is None and _fails_on_findings(step):
            failed = step["run"]
    assert failed is None or _runs_after_a_failure(steps[upload]), f"`{failed}` exits 1 on findings and the upload is skipped"
    sarif = next(step["run"] for step in steps[:upload] if "--format sarif" in str(step.get("run", "")))
    assert steps[upload]["with"]["sarif_file"] in sarif.split()  # the upload reads the file the scan wrote


def test_plain_workflow_check_catches_a_step_that_fails_the_job():
    """The check above is not vacuous: the markdown step without --fail-on none is caught."""
    steps = _plain_steps()
    markdown = next(step for step in steps if "--format markdown" in str(step.get("run", "")))
    markdown["run"] = markdown["run"].replace(" --fail-on none", "")
    assert _fails_on_findings(markdown)
    upload = next(step for step in steps if "upload-sarif" in str(step.get("uses", "")))
    assert not _runs_after_a_failure(upload)
    assert _runs_after_a_failure({"if": "always() && github.event_name != 'pull_request'"})
