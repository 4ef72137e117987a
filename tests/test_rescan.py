"""Stored scan results: an unchanged tree is answered from the store, a changed CUDA file is
re-judged in part, and either way the result equals a scan with no cache at all."""

from __future__ import annotations

from pathlib import Path

import pytest

import archlint.engine.pyrescan as pyrescan
import archlint.engine.rescan as rescan_module
from archlint.engine import scan
from archlint.engine.cache import read_entry, read_header_key
from archlint.engine.stateparts import Stamp
from archlint.engine.linkstore import PickledLinks
from archlint.model.scan import ScanOptions
from conftest import settle, settled_copy

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "gate-flashinfer"
FIXTURES = FIXTURE.parent
CSRC = "flashinfer/data/csrc"
VEC_GATE_LINE = 19  # jit/comm.py: the vec_dequant gate, POLICY for every target it excludes


def _settled_copy(fixture: Path, tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.setenv("ARCHLINT_CACHE_DIR", str(tmp_path / "cache"))
    return settled_copy(fixture, tmp_path / "tree")


@pytest.fixture
def tree(tmp_path, monkeypatch):
    return _settled_copy(FIXTURE, tmp_path, monkeypatch)




def _scan(root: Path, **options):
    return scan(ScanOptions(paths=(str(root),), jobs=1, **options))


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))
    settle(path, age=600)


def _verdicts(result, line: int) -> set[str]:
    gate = next(g for g in result.gates if g.location.line == line)
    return {v.verdict.name for v in gate.verdicts}


def test_unchanged_tree_is_answered_from_the_store(tree, full_scans, monkeypatch):
    first = _scan(tree)
    monkeypatch.setattr(rescan_module, "rescan", lambda *a: pytest.fail("an unchanged tree needs no re-scan"))
    again = _scan(tree)
    assert again == first
    assert len(full_scans) == 1
    assert again == _scan(tree, use_cache=False)


def test_changed_header_re_judges_the_gate_that_includes_it(tree, full_scans):
    before = _scan(tree)
    assert _verdicts(before, VEC_GATE_LINE) == {"POLICY"}
    header = tree / "flashinfer/data/include/flashinfer/vec_dtypes.cuh"
    _edit(header, "{ return static_cast<float>(v) * scale; }",
          '{ asm volatile("wgmma.fence.sync.aligned;\\n" ::: "memory"); return static_cast<float>(v) * scale; }')
    after = _scan(tree)
    assert len(full_scans) == 1  # the second scan was a partial one
    assert _verdicts(after, VEC_GATE_LINE) == {"GENUINE"}
    assert {f.rule for f in after.findings if f.location.line == VEC_GATE_LINE} == {"AL102", "AL105"}
    assert after == _scan(tree, use_cache=False)


def test_file_rules_follow_a_change_in_which_builds_compile_an_unchanged_header(tree, full_scans):
    before = _scan(tree)
    wgmma = "flashinfer/data/include/flashinfer/gemm/wgmma.cuh"
    assert not [f for f in before.findings if f.location.path == wgmma]
    _edit(tree / CSRC / "vec_dequant.cu", '#include "flashinfer/vec_dtypes.cuh"\n',
          '#include "flashinfer/vec_dtypes.cuh"\n#include "flashinfer/gemm/wgmma.cuh"\n')
    _edit(tree / CSRC / "vec_dequant.cu", "int i = blockIdx.x", "flashinfer::gemm::warpgroup_arrive();\n  int i = blockIdx.x")
    after = _scan(tree)
    assert len(full_scans) == 1
    # The [9, 10] gate now builds the wgmma header for sm_100a, which lacks the instruction.
    assert [(f.rule, f.targets) for f in after.findings if f.location.path == wgmma] == [("AL201", ("sm_100a", "sm_103a"))]
    assert after == _scan(tree, use_cache=False)


def test_reported_paths_filter_a_stored_result(tree, full_scans):
    _scan(tree)
    only = _scan(tree, report_paths=("flashinfer/jit/comm.py",))
    assert only.findings and {f.location.path for f in only.findings} == {"flashinfer/jit/comm.py"}
    assert len(full_scans) == 1


@pytest.mark.parametrize("change", ["define", "new file"])
def test_changes_that_reach_further_run_a_full_scan(tree, full_scans, change):
    _scan(tree)
    if change == "define":
        _edit(tree / CSRC / "vec_dequant.cu", "#include <cuda_fp16.h>\n", "#include <cuda_fp16.h>\n#define VEC_WIDTH 8\n")
    else:
        (tree / CSRC / "extra.cu").write_text("__global__ void extra_kernel() {}\n")
        settle(tree / CSRC / "extra.cu")
    after = _scan(tree)
    assert len(full_scans) == 2
    assert after == _scan(tree, use_cache=False)


def test_a_file_written_just_now_stores_nothing(tree, full_scans):
    (tree / CSRC / "fresh.cu").write_text("__global__ void fresh_kernel() {}\n")  # inside the racy window
    first = _scan(tree)
    second = _scan(tree)
    assert len(full_scans) == 2
    assert first == second


JINJA_FIXTURE = FIXTURE.parent / "gate-jinja-generated"


@pytest.fixture
def jinja_tree(tmp_path, monkeypatch):
    return _settled_copy(JINJA_FIXTURE, tmp_path, monkeypatch)


def test_generated_include_keeps_resolving_in_a_partial_rescan(jinja_tree, full_scans):
    before = _scan(jinja_tree)
    assert _verdicts(before, 29) == {"POLICY"}  # fi/jit/mamba.py, its config rendered from a template
    _edit(jinja_tree / "fi/include/fi/state_update.cuh", "  __syncthreads();\n",
          '  __syncthreads();\n  asm volatile("wgmma.fence.sync.aligned;\\n" ::: "memory");\n')
    after = _scan(jinja_tree)
    assert len(full_scans) == 1  # the header change was judged in part, through the generated include
    assert "GENUINE" in _verdicts(after, 29)
    assert after == _scan(jinja_tree, use_cache=False)


def test_placeholders_read_from_the_python_stay_read_in_a_partial_rescan(jinja_tree, full_scans):
    before = _scan(jinja_tree)
    decode = next(g for g in before.gates if g.location.path == "fi/jit/decode.py" and g.location.line == 30)
    assert {v.target: v.verdict.name for v in decode.verdicts}["sm_110a"] == "POLICY"
    _edit(jinja_tree / "fi/include/fi/decode_params.cuh", "  int batch;\n", "  int batch;\n  int heads;\n")
    after = _scan(jinja_tree)
    assert len(full_scans) == 1
    assert after == _scan(jinja_tree, use_cache=False)
    # the same verdicts; what they checked moved a line down with the kernel
    assert [f.message for f in after.findings] == [f.message for f in before.findings]
    assert [(g.gate_id, [(v.target, v.verdict, v.reason) for v in g.verdicts]) for g in after.gates] == \
           [(g.gate_id, [(v.target, v.verdict, v.reason) for v in g.verdicts]) for g in before.gates]
    kernel = next(v for v in next(g for g in after.gates if g.gate_id == decode.gate_id).verdicts if v.target == "sm_110a")
    assert kernel.reached is not None and [(hop.name, hop.location.line) for hop in kernel.reached.kernels] == [("decode_kernel", 15)]


def test_template_change_runs_a_full_scan(jinja_tree, full_scans):
    _scan(jinja_tree)
    # The dtype now also stands for code, and no scanned call spells it out: sm_110a is no longer policy.
    _edit(jinja_tree / "fi/csrc/decode_customize_config.jinja", "{{ variant_decl }}\n", "{{ variant_decl }}\n{{ dtype_kv }}\n")
    after = _scan(jinja_tree)
    assert len(full_scans) == 2
    gate = next(g for g in after.gates if g.location.path == "fi/jit/decode.py" and g.location.line == 30)
    verdicts = {v.target: v for v in gate.verdicts}
    assert verdicts["sm_110a"].verdict.name == "UNKNOWN" and "`{{ dtype_kv }}`" in verdicts["sm_110a"].reason
    assert after == _scan(jinja_tree, use_cache=False)


def test_an_edit_the_scan_cannot_store_leaves_the_stored_result_for_the_tree_it_describes(tree, full_scans, monkeypatch):
    """A pre-commit run right after an edit (inside the racy window) re-scans in part and stores
    nothing; once the edit is undone the stored result answers again, without a re-scan."""
    first = _scan(tree)
    source = tree / CSRC / "vec_dequant.cu"
    original = source.read_text()
    source.write_text(original.replace("int i = blockIdx.x", "int i = blockIdx.x + 0"))  # written just now
    edited = _scan(tree, report_paths=(f"{CSRC}/vec_dequant.cu",))
    assert len(full_scans) == 1
    assert edited == _scan(tree, use_cache=False, report_paths=(f"{CSRC}/vec_dequant.cu",))
    source.write_text(original)
    settle(source)
    monkeypatch.setattr(rescan_module, "rescan", lambda *a: pytest.fail("the stored result still describes this tree"))
    assert _scan(tree) == first


@pytest.mark.parametrize("fixture", [FIXTURE, JINJA_FIXTURE, FIXTURE.parent / "gate-hidden-traps"])
def test_the_stored_index_answers_as_the_assembled_one(fixture):
    """A re-scan reads each file's links from the stored state as judging asks: every file's
    includes and every macro's bindings, in order, are those the full scan assembled."""
    from archlint.engine.linkstore import lazy_index, stored_links
    from archlint.engine.linking import link

    index = link(ScanOptions(paths=(str(fixture),), jobs=1, use_cache=False)).index
    lazy = lazy_index(stored_links(index), index.files, index.functions_by_name)
    assert index.includes
    assert {name: lazy.bindings.get(name) for name in index.bindings} == dict(index.bindings)
    assert {path: lazy.resolved(path) for path in index.includes} == dict(index.includes)
    assert set(lazy.bindings) == set(index.bindings) and "NOT_A_MACRO_ANYWHERE" not in lazy.bindings
    assert (lazy.macro_calls, lazy.trap_macros) == (index.macro_calls, index.trap_macros)


def _state_file(tree: Path) -> Path:
    """The stored state's part that holds the links."""
    return next((tree.parent / "cache").rglob("*-state-links-*.pkl"))


def test_a_re_scan_reads_the_stored_links_of_the_edited_file(tree, full_scans, monkeypatch):
    _scan(tree)
    loaded = []
    real = PickledLinks.__getitem__
    monkeypatch.setattr(PickledLinks, "__getitem__", lambda self, path: loaded.append(path) or real(self, path))
    header = tree / "flashinfer/data/include/flashinfer/vec_dtypes.cuh"
    _edit(header, "{ return static_cast<float>(v) * scale; }", "{ return static_cast<float>(v) * scale * 1.0f; }")
    after = _scan(tree)
    assert len(full_scans) == 1  # a partial re-scan
    # its old links, compared with the new (the stored links are keyed by paths from the folder
    # the files are analysed from, the deepest holding them all: engine.roots)
    assert header.relative_to(tree / "flashinfer").as_posix() in loaded
    assert after == _scan(tree, use_cache=False)


def test_damaged_stored_links_run_a_full_scan(tree, full_scans):
    _scan(tree)
    state = _state_file(tree)
    data = bytearray(state.read_bytes())
    data[-3] ^= 0xFF  # inside the last file's links, which the checksum of the payload does not cover
    state.write_bytes(bytes(data))
    # a call added: the unit's facts change, so the stored result cannot stand as it is (engine.samefacts)
    _edit(tree / CSRC / "vec_dequant.cu", "int i = blockIdx.x", "__syncthreads();\n  int i = blockIdx.x")
    after = _scan(tree)
    assert len(full_scans) == 2  # the re-scan met the damaged part and gave way to a full scan
    assert after == _scan(tree, use_cache=False)


def test_a_stored_scan_narrowed_to_one_target_keeps_the_cutlass_tactic_findings(tmp_path, monkeypatch, full_scans):
    """The tile lists are Python facts: a scan answered from a stored scan of more targets takes them
    from the stored state, and gives what a fresh scan of that target gives."""
    root = _settled_copy(FIXTURES / "al204-cutlass-tactics", tmp_path, monkeypatch)
    _scan(root)
    narrowed = _scan(root, targets=("sm_120a",))
    assert len(full_scans) == 1  # answered from the stored scan of the default targets
    fresh = _scan(root, targets=("sm_120a",), use_cache=False)
    tactics = sorted((f.location.line, f.message) for f in fresh.findings if f.rule == "AL204")
    assert tactics
    assert sorted((f.location.line, f.message) for f in narrowed.findings if f.rule == "AL204") == tactics


def test_a_comment_added_to_a_python_gate_module_re_judges_nothing(tree, full_scans, monkeypatch):
    before = _scan(tree)
    module = tree / "flashinfer/jit/comm.py"
    module.write_text(module.read_text() + "# a note at the end\n")
    settle(module, age=600)
    monkeypatch.setattr(rescan_module, "judge_gate", lambda *a: pytest.fail("no gate's facts changed"))
    after = _scan(tree)
    assert len(full_scans) == 1  # the module's facts are the ones stored: the stored state stands
    assert after == before == _scan(tree, use_cache=False)


def test_a_changed_literal_in_a_python_gate_re_judges_that_gate_alone(tree, full_scans, monkeypatch):
    before = _scan(tree)
    module = tree / "flashinfer/jit/comm.py"
    lines = module.read_text().splitlines(keepends=True)
    assert "supported_major_versions=[9, 10]" in lines[VEC_GATE_LINE - 1]
    lines[VEC_GATE_LINE - 1] = lines[VEC_GATE_LINE - 1].replace("[9, 10]", "[9, 10, 12]")
    module.write_text("".join(lines))
    settle(module, age=600)
    judged = []
    real = pyrescan.judge_gate
    monkeypatch.setattr(pyrescan, "judge_gate", lambda gate, *a: judged.append(gate.line) or real(gate, *a))
    after = _scan(tree)
    assert len(full_scans) == 1  # the Python side again, the CUDA side from the stored state
    assert judged == [VEC_GATE_LINE]
    assert "sm_120a" in next(g for g in after.gates if g.location.line == VEC_GATE_LINE).admits
    assert "sm_120a" not in next(g for g in before.gates if g.location.line == VEC_GATE_LINE).admits
    assert after == _scan(tree, use_cache=False)


def test_a_changed_predicate_whose_code_calls_a_custom_op_is_re_judged_through_the_stored_cuda_side(
        tmp_path, full_scans, monkeypatch):
    """vLLM-shaped: the gate's units are those of the op its code calls (`_C.cutlass_scaled_mm`,
    registered in torch_bindings.cpp, refused by a host check for 10.x): linked again through the
    stored CUDA side, with no full scan, and equal to a scan with no cache."""
    root = _settled_copy(FIXTURES / "gate-host-ops", tmp_path, monkeypatch)
    module = root / "vllm/model_executor/layers/quantization/fp8.py"
    before = _scan(root)
    text = module.read_text()
    assert "has_device_capability(90)" in text
    module.write_text(text.replace("has_device_capability(90)", "has_device_capability(100)"))
    settle(module, age=600)
    judged = []
    real = pyrescan.judge_gate
    monkeypatch.setattr(pyrescan, "judge_gate", lambda gate, *a: judged.append(gate.path) or real(gate, *a))
    after = _scan(root)
    assert len(full_scans) == 1
    assert judged == ["vllm/model_executor/layers/quantization/fp8.py"]
    assert after != before
    assert after == _scan(root, use_cache=False)


def _state_parts(tree: Path) -> dict[str, bytes]:
    """The stored state's part entries: file name -> bytes."""
    return {path.name: path.read_bytes() for path in (tree.parent / "cache").rglob("*-state-*.pkl")}


def _stamp(tree: Path) -> Stamp:
    """The stored state's index (one slot: the scan's targets)."""
    (index,) = (tree.parent / "cache").rglob("*-state.pkl")
    return read_entry(index, read_header_key(index), Stamp)


def test_a_re_scan_writes_only_the_parts_of_the_state_it_changed(tree, full_scans):
    """A comment appended to a unit leaves its links as they were: the links' entry (megabytes on
    a large tree) is kept as written; an include added changes them, and their entry is written
    again, the old one removed, where the parts the edit left stay as written."""
    _scan(tree)
    first = _state_parts(tree)
    unit = tree / CSRC / "vec_dequant.cu"
    _edit(unit, "}\n\nvoid dequant(", "}\n// the host side\n\nvoid dequant(")
    after = _scan(tree)
    assert len(full_scans) == 1  # a partial re-scan
    assert after == _scan(tree, use_cache=False)
    kept = _state_parts(tree)
    links = {name for name in first if "-state-links-" in name}
    assert links and links <= kept.keys() and all(kept[name] == first[name] for name in links)
    _edit(unit, "// the host side\n", '#include "flashinfer/gemm/wgmma.cuh"\n')
    after = _scan(tree)
    assert len(full_scans) == 2  # a partial re-scan (the other full scan is the one with no cache)
    assert after == _scan(tree, use_cache=False)
    now = _state_parts(tree)
    written = now.keys() - kept.keys()
    assert "links" in {name.split("-state-")[1].split("-")[0] for name in written}
    stamp = _stamp(tree)
    assert set(now) == {name for _, name in (*stamp.parts, *stamp.bases)}  # the replaced entries are gone
    assert len(written) < len(now)  # others were kept
