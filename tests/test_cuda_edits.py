"""Every CUDA file of the fixtures with host checks, op registrations or C++ tiles edited in turn, as a user
edits between two scans: a comment line appended, a line inserted at its top (every definition
moves), a comment spelling `minor` appended, and a call added to the body of its first function. After each edit the scan that starts
from the stored state (a re-scan in part, or a full one where the host checks' reach may have
changed) gives what a scan with no cache gives; a comment appended to a unit a host check reaches
re-scans in part."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from archlint.engine import scan
from archlint.knowledge.languages import CUDA_SUFFIXES
from archlint.model.scan import ScanOptions
from conftest import settle, settled_copy

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
# al204-cxx-tiles: a re-scan links again the C++ tiles of the gates it judges again, and keeps the others'
CASES = ["gate-host-checks", "gate-host-ops", "gate-flashinfer", "gate-jinja-generated", "al204-cxx-tiles"]
_BODY = re.compile(r"^(?:[\w:<>,*&\s]+)\)\s*(?:const\s*)?\{\n", re.MULTILINE)


def _scan(root: Path, cache: bool = True):
    return scan(ScanOptions(paths=(str(root),), jobs=1, use_cache=cache))


def _edits(text: str) -> list[str]:
    # a comment spelling a capability field: it picks which host files a cold scan reads first
    found = [text + "// edited\n", "// a line above everything\n" + text, text + "// a minor fix\n"]
    body = _BODY.search(text)
    if body is not None:
        found.append(text[: body.end()] + "  launch_edited_helper();\n" + text[body.end():])
    return found


@pytest.mark.parametrize("case", CASES)
def test_each_cuda_file_edited_in_turn(case, tmp_path, monkeypatch):
    monkeypatch.setenv("ARCHLINT_CACHE_DIR", str(tmp_path / "cache"))
    root = settled_copy(FIXTURES / case, tmp_path / "tree")
    _scan(root)
    age = 3000
    files = sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in CUDA_SUFFIXES)
    assert files
    for source in files:
        relative = source.relative_to(root).as_posix()
        original = source.read_text()
        for number, edited in enumerate([*_edits(original), original]):
            source.write_text(edited)
            age -= 10  # each version newer than the last, all past the racy window
            settle(source, age)
            assert _scan(root) == _scan(root, cache=False), f"{relative}, edit {number}"


def test_a_comment_appended_to_a_host_checked_unit_re_scans_in_part(tmp_path, monkeypatch, full_scans):
    monkeypatch.setenv("ARCHLINT_CACHE_DIR", str(tmp_path / "cache"))
    root = settled_copy(FIXTURES / "gate-host-checks", tmp_path / "tree")
    before = _scan(root)
    assert any(g.gate_id.startswith("csrc/flash_attn/flash_api.cpp:") for g in before.gates)
    for name in ("flash_api.cpp", "src/flash_fwd_hdim128_fp16_sm90.cu"):
        path = root / "csrc/flash_attn" / name
        path.write_text(path.read_text() + "// edited\n")
        settle(path, 600)
        after = _scan(root)
        assert len(full_scans) == 1, name  # the first scan alone
        assert [(g.gate_id, g.verdicts) for g in after.gates] == [(g.gate_id, g.verdicts) for g in before.gates]


def test_a_capability_helper_moved_down_its_header_re_scans_in_part(tmp_path, monkeypatch, full_scans):
    # the helper's facts only move: no host gate lies in its header, so the gates keep their units
    monkeypatch.setenv("ARCHLINT_CACHE_DIR", str(tmp_path / "cache"))
    root = settled_copy(FIXTURES / "gate-host-checks", tmp_path / "tree")
    before = _scan(root)
    header = root / "csrc/flash_attn/src/hardware_info.h"
    header.write_text("// Device queries shared by the launchers.\n\n" + header.read_text())
    settle(header, 600)
    after = _scan(root)
    assert len(full_scans) == 1  # the first scan alone
    assert after == _scan(root, cache=False)
    assert [(g.gate_id, g.verdicts) for g in after.gates] == [(g.gate_id, g.verdicts) for g in before.gates]


def test_host_checks_and_the_units_they_reach_moved_down_re_scan_in_part(tmp_path, monkeypatch, full_scans):
    # a check's gate moves with it; the evidence of the units it reaches points at their new lines
    monkeypatch.setenv("ARCHLINT_CACHE_DIR", str(tmp_path / "cache"))
    root = settled_copy(FIXTURES / "gate-host-checks", tmp_path / "tree")
    before = {g.gate_id for g in _scan(root).gates if g.gate_id.startswith("csrc/flash_attn/flash_api.cpp:")}
    for name in ("flash_api.cpp", "src/flash_fwd_hdim128_fp16_sm90.cu"):
        path = root / "csrc/flash_attn" / name
        path.write_text("// Moved down a line.\n" + path.read_text())
        settle(path, 600)
        full = len(full_scans)
        after = _scan(root)
        assert len(full_scans) == full, name  # a re-scan in part
        assert after == _scan(root, cache=False), name
    moved = {g.gate_id for g in after.gates if g.gate_id.startswith("csrc/flash_attn/flash_api.cpp:")}
    assert before and moved == {f"{path}:{int(line) + 1}:{col}" for path, line, col in (g.rsplit(":", 2) for g in before)}


def test_an_op_linked_entry_edited_re_scans_in_part(tmp_path, monkeypatch, full_scans):
    # vLLM's shape: Python gates call ops whose registrations lead to dispatch ladders; moving the
    # ladders, or adding a call that reaches no other unit, leaves every gate's units as they were
    monkeypatch.setenv("ARCHLINT_CACHE_DIR", str(tmp_path / "cache"))
    root = settled_copy(FIXTURES / "gate-host-ops", tmp_path / "tree")
    entry = root / "csrc/quantization/w8a8/cutlass/scaled_mm_entry.cu"
    ladders = {g.gate_id for g in _scan(root).gates if g.gate_id.startswith(entry.relative_to(root).as_posix())}
    edits = [
        lambda text: "// Dispatch by compute capability.\n" + text,
        lambda text: text.replace("  int32_t version_num = get_sm_version_num();\n",
                                  "  int32_t version_num = get_sm_version_num();\n  record_dispatch(version_num);\n", 1),
    ]
    for number, edit in enumerate(edits):
        entry.write_text(edit(entry.read_text()))
        settle(entry, 600 - number)
        full = len(full_scans)
        after = _scan(root)
        assert len(full_scans) == full, number  # a re-scan in part
        assert after == _scan(root, cache=False), number
    moved = {g.gate_id for g in after.gates if g.gate_id.startswith(entry.relative_to(root).as_posix())}
    # two lines above each ladder's refusal now
    assert ladders and moved == {f"{path}:{int(line) + 2}:{col}" for path, line, col in (g.rsplit(":", 2) for g in ladders)}


def test_op_links_stored_by_a_python_re_scan_serve_the_next_cuda_edit(tmp_path, monkeypatch, full_scans):
    monkeypatch.setenv("ARCHLINT_CACHE_DIR", str(tmp_path / "cache"))
    root = settled_copy(FIXTURES / "gate-host-ops", tmp_path / "tree")
    _scan(root)
    ops = root / "vllm/_custom_ops.py"
    ops.write_text(ops.read_text() + "\n\ndef describe_dispatch() -> str:\n    return 'cutlass'\n")
    settle(ops, 900)
    entry = root / "csrc/quantization/w8a8/cutlass/scaled_mm_entry.cu"
    for number, path in enumerate((ops, entry)):
        if path is entry:
            entry.write_text("// Dispatch by compute capability.\n" + entry.read_text())
            settle(entry, 600)
        full = len(full_scans)
        after = _scan(root)
        assert len(full_scans) == full, number  # a Python re-scan, then a CUDA one, in part
        assert after == _scan(root, cache=False), number
