"""The gate vocabulary in rules/idioms/: every table shipped, a malformed file refused with a message
that names the file and row, and a new project's idiom added as data finds its gates."""

from __future__ import annotations

import dataclasses
import shutil
import tomllib
from pathlib import Path

import pytest

from archlint.extract.python.facts import extract_python
from archlint.gates.detect import find_gates
from archlint.knowledge.idioms import (
    TABLES,
    ArchFlagsCall,
    Idioms,
    IdiomsError,
    load_idioms,
    read_idioms,
)
from archlint.knowledge.resources import rules_dir, tree_hash
from archlint.link.python import link_python

SHIPPED = rules_dir() / "idioms"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A copy of the shipped vocabulary, to add a project's file to or to break."""
    copy = tmp_path / "idioms"
    shutil.copytree(SHIPPED, copy)
    return copy


# ---------------------------------------------------------------- the shipped files


def test_every_table_is_shipped_and_every_field_filled():
    idioms = load_idioms()
    shipped = {table for path in SHIPPED.glob("*.toml") for table in _tables(path)}
    assert shipped == set(TABLES)
    empty = [field.name for field in dataclasses.fields(Idioms) if not getattr(idioms, field.name)]
    assert empty == []


def _tables(path: Path) -> set[str]:
    return set(tomllib.loads(path.read_text()))


def test_the_projects_names_are_read_from_the_files():
    idioms = load_idioms()
    assert idioms.arch_flags_call("current_compilation_context.get_nvcc_flags_list") == ArchFlagsCall(
        "get_nvcc_flags_list", "supported_major_versions")
    assert "supported_compute_capability" in idioms.gate_decorators
    assert "_normalize_cuda_arch" in idioms.suffix_functions
    assert "write_if_different" in idioms.writer_calls
    assert {"get_device_capability", "get_compute_capability"} <= set(idioms.capability_calls)
    assert "extra_cuda_cflags" in idioms.device_flag_keywords
    assert "extra_cflags" in idioms.flag_keywords and "extra_cflags" not in idioms.device_flag_keywords


def test_loading_twice_gives_the_same_object():
    assert load_idioms() is load_idioms()
    assert read_idioms(SHIPPED) == load_idioms()


def test_an_idioms_change_changes_the_data_hash_that_keys_the_facts_cache(folder: Path):
    before = tree_hash(folder)
    with open(folder / "flashinfer.toml", "a") as handle:
        handle.write('\n[[gate_decorator]]\nnames = ["requires_hopper"]\nsource = "a test"\n')
    assert tree_hash(folder) != before


# ---------------------------------------------------------------- malformed files


@pytest.mark.parametrize(("text", "message"), [
    ('[[gate_decorator]]\nnames = ["x"]\n', "yourproject.toml: [[gate_decorator]] row 1: `source` must say"),
    ('[[gate_decorator]]\nnames = "x"\nsource = "s"\n',
     "yourproject.toml: [[gate_decorator]] row 1: `names` must be a non-empty list"),
    ('[[gate_decorator]]\nnames = []\nsource = "s"\n', "`names` must be a non-empty list"),
    ('[[gate_decorator]]\nnames = ["two words"]\nsource = "s"\n', "a non-empty list of names without spaces"),
    ('[[gate_decorator]]\nname = ["x"]\nsource = "s"\n',
     "yourproject.toml: [[gate_decorator]] row 1: unknown key `name`"),
    ('[[gate_decorators]]\nnames = ["x"]\nsource = "s"\n', "yourproject.toml: unknown table `gate_decorators`"),
    ('gate_decorator = "x"\n', "yourproject.toml: `gate_decorator` must be written as [[gate_decorator]] tables"),
    ('[[flag_keyword]]\nnames = ["x"]\nsource = "s"\n',
     "yourproject.toml: [[flag_keyword]] row 1: `device` must be a boolean"),
    ('[[arch_flags_call]]\nnames = ["x"]\nmajors_keyword = 9\nsource = "s"\n', "`majors_keyword` must be a string"),
    ('[[writer_call]]\nnames = ["a"]\nsource = "s"\n\n[[writer_call]]\nnames = ["write_if_different"]\nsource = "s"\n',
     "yourproject.toml: [[writer_call]] row 2: `write_if_different` is already listed at"),
    ('[[gate_decorator]\n', "yourproject.toml: not valid TOML"),
])
def test_a_malformed_file_is_refused_with_its_place_named(folder: Path, text: str, message: str):
    (folder / "yourproject.toml").write_text(text)
    with pytest.raises(IdiomsError) as error:
        read_idioms(folder)
    assert message in str(error.value)


def test_a_table_no_file_has_is_refused(folder: Path):
    (folder / "flashinfer.toml").unlink()
    with pytest.raises(IdiomsError, match=r"no \[\[arch_flags_call\]\] rows in any file"):
        read_idioms(folder)


def test_a_folder_without_files_is_refused(tmp_path: Path):
    with pytest.raises(IdiomsError, match="no idioms files"):
        read_idioms(tmp_path)


# ---------------------------------------------------------------- a new project's idioms are data


NEW_PROJECT = {
    "hop/__init__.py": "",
    "hop/ops.py": '''import pathlib

from hop.support import requires_hopper, build_module, arch_flags

CSRC = pathlib.Path(__file__).parent / "csrc"


@requires_hopper([90])
def gen_fused_module():
    return build_module("fused", [CSRC / "fused.cu"])


def gen_gemm_module():
    return build_module("gemm", [CSRC / "gemm.cu"], extra_cuda_cflags=arch_flags(majors=[10]))
''',
    "hop/csrc/fused.cu": "__global__ void fused() {}\n",
    "hop/csrc/gemm.cu": "__global__ void gemm() {}\n",
}


def _gates(tmp_path: Path, idioms: Idioms | None = None) -> dict:
    for path, text in NEW_PROJECT.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    facts = [extract_python(path, (tmp_path / path).read_bytes(), idioms)
             for path in NEW_PROJECT if path.endswith(".py")]
    index = link_python(facts, ["hop"], set(NEW_PROJECT), idioms)
    return {gate.line: gate for gate in find_gates(index)}


def test_a_decorator_added_in_a_file_of_its_own_finds_its_gate(tmp_path: Path, folder: Path):
    assert 8 not in _gates(tmp_path / "before"), "the shipped vocabulary does not know the decorator"
    (folder / "hop.toml").write_text(
        '[[gate_decorator]]\nnames = ["requires_hopper"]\nsource = "hop/support.py: @requires_hopper([90])"\n')
    gate = _gates(tmp_path / "after", read_idioms(folder))[8]
    assert gate.kind == "decorator" and gate.admits == (90,) and gate.exact
    assert gate.guards == ("hop.ops.gen_fused_module",)
    assert [source.path for source in gate.resolved_sources] == ["hop/csrc/fused.cu"]


def test_an_arch_flags_call_added_to_the_vocabulary_finds_its_gate(tmp_path: Path):
    assert 14 not in _gates(tmp_path / "before")
    shipped = load_idioms()
    added = ArchFlagsCall("arch_flags", "majors")
    idioms = dataclasses.replace(shipped, arch_flags_calls=(*shipped.arch_flags_calls, added))
    gate = _gates(tmp_path / "after", idioms)[14]
    assert gate.kind == "nvcc-flags" and gate.admits == (100, 103) and gate.majors_literal == (10,)
    assert gate.guards == ("hop.ops.gen_gemm_module",)
    assert [source.path for source in gate.resolved_sources] == ["hop/csrc/gemm.cu"]
