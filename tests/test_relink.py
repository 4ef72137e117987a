"""Re-linking an edit of some calls and assignments: a literal changed in a gate's keyword re-walks
the edited module alone and re-links only the gates whose answers read what changed; an edit of
anything else links the whole tree again; either way the result is a scan with no cache's."""

from __future__ import annotations

from pathlib import Path

import pytest

import archlint.engine.linking as linking
import archlint.engine.relink as relink
import archlint.engine.stateparts as stateparts
from archlint.engine import scan
from archlint.link.python import link_python
from archlint.link.reads import key_module, key_position
from archlint.extract.python.facts import extract_python
from archlint.model.python import PythonFacts
from archlint.model.scan import ScanOptions
from conftest import settle, settled_copy

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
VEC_GATE_LINE = 19  # jit/comm.py of gate-flashinfer: `supported_major_versions=[9, 10]`


@pytest.fixture
def tree(tmp_path, monkeypatch):
    monkeypatch.setenv("ARCHLINT_CACHE_DIR", str(tmp_path / "cache"))
    return settled_copy(FIXTURES / "gate-flashinfer", tmp_path / "tree")


def _scan(root: Path, **options):
    return scan(ScanOptions(paths=(str(root),), jobs=1, **options))


def _replace(path: Path, line: int, old: str, new: str) -> None:
    lines = path.read_text().splitlines(keepends=True)
    assert old in lines[line - 1]
    lines[line - 1] = lines[line - 1].replace(old, new)
    path.write_text("".join(lines))
    settle(path, age=600)


def _re_linked_scan(root: Path, monkeypatch):
    """A scan that must not link the whole tree again."""
    whole = linking.python_side
    monkeypatch.setattr(linking, "python_side", lambda *a, **k: pytest.fail("the tree is not linked again"))
    try:
        return _scan(root)
    finally:
        monkeypatch.setattr(linking, "python_side", whole)


def _counted(monkeypatch, module, name: str) -> list:
    calls: list = []
    real = getattr(module, name)
    monkeypatch.setattr(module, name, lambda *args: calls.append(args) or real(*args))
    return calls


def test_a_changed_gate_literal_re_walks_the_edited_module_alone(tree, full_scans, monkeypatch):
    before = _scan(tree)
    _replace(tree / "flashinfer/jit/comm.py", VEC_GATE_LINE, "[9, 10]", "[9, 10, 12]")
    walks = _counted(monkeypatch, relink, "walk_answer")
    units = _counted(monkeypatch, relink, "units_answer")
    linked = _counted(monkeypatch, relink, "relinked_side")
    after = _re_linked_scan(tree, monkeypatch)
    assert len(full_scans) == 1 and len(linked) == 1
    assert [walk[2] for walk in walks] == ["flashinfer.jit.comm"]
    assert [args[1].line for args in units] == [VEC_GATE_LINE]  # the other gates' answers read nothing that changed
    gate = next(g for g in after.gates if g.location.line == VEC_GATE_LINE)
    assert "sm_120a" in gate.admits
    assert after != before
    assert after == _scan(tree, use_cache=False)


def test_the_next_edit_re_links_from_the_record_the_last_one_stored(tree, full_scans, monkeypatch):
    module = tree / "flashinfer/jit/comm.py"
    _scan(tree)
    _replace(module, VEC_GATE_LINE, "[9, 10]", "[9, 10, 12]")
    _scan(tree)
    _replace(module, VEC_GATE_LINE, "[9, 10, 12]", "[9]")
    walks = _counted(monkeypatch, relink, "walk_answer")
    after = _scan(tree)
    assert len(full_scans) == 1 and len(walks) == 1
    gate = next(g for g in after.gates if g.location.line == VEC_GATE_LINE)
    assert "sm_100a" not in gate.admits
    assert after == _scan(tree, use_cache=False)


def test_an_edit_of_what_a_branch_tests_links_the_tree_again(tmp_path, full_scans, monkeypatch):
    """SGLang-shaped: `get_device_capability()[0] >= 10` is what the function's branches test, read
    by the capability conditions' reach for the whole tree: no answer can be kept on its own."""
    monkeypatch.setenv("ARCHLINT_CACHE_DIR", str(tmp_path / "cache"))
    root = settled_copy(FIXTURES / "gate-sglang-jit", tmp_path / "tree")
    _scan(root)
    _replace(root / "sg/kernels/ops/elementwise.py", 22, ">= 10", ">= 12")
    sides = _counted(monkeypatch, linking, "python_side")
    after = _scan(root)
    assert len(full_scans) == 1 and len(sides) == 1  # the whole Python side linked again
    assert after == _scan(root, use_cache=False)


def test_an_answer_notes_the_assignments_it_reads_also_from_the_index_cache():
    """Two answers resolving the same name each note the assignment, though the second is answered
    from the module's table of assignments already read."""
    code = b"ARCHS = [90, 100]\nOTHER = [80]\n\ndef flags():\n    return ARCHS\n"
    facts: PythonFacts = extract_python("pkg/consts.py", code)
    index = link_python([facts], ["."], ["pkg/consts.py"])
    module = index.module_of_path["pkg/consts.py"]
    keys = []
    with index.reads.recording():
        for _ in range(2):
            with index.reads.answer() as reads:
                assert index.assign_of(module, "ARCHS") is not None
            keys.append(reads)
    assert keys[0] == keys[1] != set()
    assert {key_module(key) for key in keys[0]} == {0}
    assert {key_position(key) for key in keys[0]} == {0}  # ARCHS, not OTHER


def test_an_edit_after_a_comment_the_store_carried_over_is_re_linked(tree, full_scans, monkeypatch):
    """The pre-commit flow: a comment added (its facts the stored ones: the stored state carried
    over, its name tables as they were), then a gate's literal changed."""
    module = tree / "flashinfer/jit/comm.py"
    _scan(tree)
    module.write_text(module.read_text() + "# a note spelling names_no_file_spelled\n")
    settle(module, age=700)
    _scan(tree)
    _replace(module, VEC_GATE_LINE, "[9, 10]", "[9, 10, 12]")
    walks = _counted(monkeypatch, relink, "walk_answer")
    after = _re_linked_scan(tree, monkeypatch)
    assert len(full_scans) == 1 and len(walks) == 1
    assert after == _scan(tree, use_cache=False)


def test_a_cuda_edit_leaves_the_link_record_unread_and_the_next_python_edit_re_links(tree, full_scans, monkeypatch):
    _scan(tree)
    header = tree / "flashinfer/data/include/flashinfer/vec_dtypes.cuh"
    text = header.read_text()
    old = "{ return static_cast<float>(v) * scale; }"
    assert old in text
    header.write_text(text.replace(old, '{ asm volatile("wgmma.fence.sync.aligned;\\n" ::: "memory"); '
                                        'return static_cast<float>(v) * scale; }'))
    settle(header, age=600)
    real = stateparts.Deferred.value
    monkeypatch.setattr(stateparts.Deferred, "value", lambda self: pytest.fail("a CUDA re-scan reads no Python record"))
    _scan(tree)
    monkeypatch.setattr(stateparts.Deferred, "value", real)
    _replace(tree / "flashinfer/jit/comm.py", VEC_GATE_LINE, "[9, 10]", "[9, 10, 12]")
    walks = _counted(monkeypatch, relink, "walk_answer")
    after = _scan(tree)
    assert len(full_scans) == 1 and len(walks) == 1  # the record the CUDA re-scan kept as written
    assert after == _scan(tree, use_cache=False)
