"""[tool.archlint] / archlint.toml: discovery, validation, and flags overriding it."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

import archlint.engine
from archlint.cli.commands import cli
from archlint.config import (
    Config,
    ConfigError,
    find_config,
    load_config,
    merge_settings,
)
from archlint.model.findings import Finding, Level, Location
from archlint.model.scan import ScanResult
from archlint.postprocess.per_file_ignores import path_matches


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_found_by_walking_up(tmp_path):
    config = write(tmp_path / "pyproject.toml", '[tool.archlint]\ntargets = ["sm_120a"]\n')
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    assert find_config(deep) == config
    assert load_config(config).targets == ("sm_120a",)


def test_pyproject_without_archlint_table_is_passed_over(tmp_path):
    outer = write(tmp_path / "archlint.toml", 'fail-on = "error"\n')
    write(tmp_path / "pkg" / "pyproject.toml", "[project]\nname = 'x'\n")
    assert find_config(tmp_path / "pkg") == outer


def test_archlint_toml_wins_in_the_same_folder(tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.archlint]\nfail-on = "note"\n')
    own = write(tmp_path / "archlint.toml", 'fail-on = "error"\n')
    assert find_config(tmp_path) == own


def test_every_key(tmp_path):
    config = load_config(write(tmp_path / "archlint.toml", """
targets = ["sm_90a", "sm_120a"]
exclude = ["third_party/**"]
include-dirs = ["include"]
select = ["AL1"]
ignore = ["exact-arch-branch"]
fail-on = "error"
max-file-bytes = 1000
[per-file-ignores]
"tests/**" = ["AL101"]
[levels]
policy-gate = "error"
AL102 = "none"
"""))
    assert config.include_dirs == (str((tmp_path / "include").resolve()),)
    settings = merge_settings(config)
    assert settings.targets == ("sm_90a", "sm_120a")
    assert settings.select == ("AL101", "AL102", "AL103", "AL104", "AL105", "AL106", "AL107", "AL108")
    assert settings.ignore == ("AL203",)
    assert settings.fail_on is Level.ERROR and settings.max_file_bytes == 1000
    assert settings.levels["AL101"] is Level.ERROR and settings.levels["AL102"] is Level.NONE
    assert settings.per_file_ignores == (("tests/**", frozenset({"AL101"})),)


def test_flags_override_config():
    config = Config(path="x", targets=("sm_90a",), select=("AL2",), fail_on="error")
    settings = merge_settings(config, targets=("sm_120a",), select=("AL101",), fail_on="note")
    assert settings.targets == ("sm_120a",) and settings.select == ("AL101",) and settings.fail_on is Level.NOTE


@pytest.mark.parametrize("text, needle", [
    ("colour = true\n", "unknown key `colour`"),
    ('fail-on = "loud"\n', "fail-on"),
    ('select = "AL999"\n', "unknown rule 'AL999'"),
    ('targets = ["sm_12"]\n', "sm_12"),
    ("[levels]\nnot-a-rule = 'error'\n", "unknown rule 'not-a-rule'"),
    ("max-file-bytes = -1\n", "max-file-bytes"),
    ("targets = [\n", "invalid TOML"),
])
def test_bad_config_exits_2_naming_the_problem(tmp_path, monkeypatch, text, needle):
    write(tmp_path / "archlint.toml", text)
    monkeypatch.setattr(archlint.engine, "scan", lambda options: pytest.fail("scan must not run"))
    result = CliRunner().invoke(cli, ["scan", str(tmp_path)])
    assert result.exit_code == 2
    assert needle in result.output and "archlint.toml" in result.output
    assert "Traceback" not in result.output


def test_unknown_key_in_pyproject(tmp_path):
    path = write(tmp_path / "pyproject.toml", "[tool.archlint]\ntarget = ['sm_90a']\n")
    with pytest.raises(ConfigError, match="unknown key `target`"):
        load_config(path)


def _scan_with(tmp_path, monkeypatch, findings, *args):
    def scan(options):
        scan.options = options
        return ScanResult(root=str(tmp_path), findings=tuple(findings), diagnostics=(), files_scanned=1)

    monkeypatch.setattr(archlint.engine, "scan", scan)
    result = CliRunner().invoke(cli, ["scan", str(tmp_path), *args])
    return result, scan.options


def test_config_applied_to_a_scan(tmp_path, monkeypatch):
    write(tmp_path / "pyproject.toml", """[tool.archlint]
targets = ["sm_120a"]
exclude = ["build/**"]
[tool.archlint.per-file-ignores]
"tests/**" = ["policy-gate"]
[tool.archlint.levels]
policy-gate = "error"
""")
    findings = [Finding("AL101", Level.WARNING, "m", Location("tests/jit.py", 1)),
                Finding("AL101", Level.WARNING, "m", Location("pkg/jit.py", 3))]
    result, options = _scan_with(tmp_path, monkeypatch, findings, "--fail-on", "error")
    assert options.targets == ("sm_120a",) and options.exclude == ("build/**",)
    assert result.exit_code == 1  # AL101 raised to error by [levels]
    assert "pkg/jit.py:3:1: AL101" in result.output and "tests/jit.py" not in result.output


def test_explicit_config_file(tmp_path, monkeypatch):
    other = write(tmp_path / "conf" / "strict.toml", 'fail-on = "note"\n')
    findings = [Finding("AL102", Level.NOTE, "m", Location("pkg/jit.py", 3))]
    assert _scan_with(tmp_path, monkeypatch, findings)[0].exit_code == 0
    assert _scan_with(tmp_path, monkeypatch, findings, "--config", str(other))[0].exit_code == 1


@pytest.mark.parametrize("path, pattern, hit", [
    ("csrc/gen/a.cuh", "csrc/gen/**", True),
    ("a/b/test_x.py", "test_*.py", True),
    ("x/tests/y.py", "**/tests/*.py", True),
    ("tests/y.py", "**/tests/*.py", True),
    ("a.py", "b/*.py", False),
    ("csrc/a.cu", "*.cuh", False),
])
def test_globs(path, pattern, hit):
    assert path_matches(path, pattern) is hit
