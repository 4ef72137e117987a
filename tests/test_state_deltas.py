"""A re-scan that keeps most of the stored gates' results, memos and link answers writes those parts
as deltas of the entries it loaded them from: the kept objects are references into the base, the
base stays while a delta names it, and what loads is what a scan with no cache gives."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from archlint.engine import scan
from archlint.engine.cache import read_entry, read_header_key
from archlint.engine.deltas import delta, parts, undelta
from archlint.engine.stateparts import AS_DELTAS, Stamp
from archlint.model.scan import ScanOptions
from conftest import settle, settled_copy

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "gate-flashinfer"
VEC_GATE_LINE = 19  # jit/comm.py: `supported_major_versions=[9, 10]`


@dataclass(frozen=True)
class Verdict:
    target: str
    evidence: tuple[str, ...]


@dataclass(frozen=True)
class Result:
    gate: str
    verdicts: tuple[Verdict, ...]


def _results(count: int) -> tuple[Result, ...]:
    return tuple(Result(f"gate {n}", (Verdict("sm_120a", (f"line {n}",)), Verdict("sm_90a", ()))) for n in range(count))


def test_a_value_keeping_most_of_its_base_loads_back_with_the_base_objects():
    base = _results(50)
    value = (*base[:10], Result("gate 10", (Verdict("sm_100a", ("edited",)),)), *base[11:])
    payload = delta(value, base, base_size=10_000)
    assert payload is not None
    loaded = undelta(payload, base)
    assert loaded == value
    assert loaded[3] is base[3] and loaded[10] is not base[10]


def test_a_value_keeping_little_of_its_base_is_written_whole():
    base = _results(50)
    assert delta(_results(50), base, base_size=10_000) is None  # equal, but none of its objects
    assert delta((*base[:10], *_results(40)), base, base_size=10_000) is None


def test_a_delta_as_large_as_its_base_is_written_whole():
    base = _results(50)
    value = (*base, *_results(50))
    assert delta(value, base, base_size=100) is None


def test_sets_are_not_walked():
    """A set's order is not the same in another process: its items are not parts a delta names."""
    base = (frozenset({Verdict("sm_90a", ())}), Verdict("sm_80", ()))
    assert parts(base) == [base[1], base[1].evidence]


@pytest.fixture
def tree(tmp_path, monkeypatch):
    monkeypatch.setenv("ARCHLINT_CACHE_DIR", str(tmp_path / "cache"))
    return settled_copy(FIXTURE, tmp_path / "tree")


def _scan(root: Path, **options):
    return scan(ScanOptions(paths=(str(root),), jobs=1, **options))


def _stamp(tree: Path) -> Stamp:
    (index,) = (tree.parent / "cache").rglob("*-state.pkl")
    return read_entry(index, read_header_key(index), Stamp)


def _entries(tree: Path) -> set[str]:
    return {path.name for path in (tree.parent / "cache").rglob("*-state-*.pkl")}


def _set_gate(tree: Path, majors: str) -> None:
    path = tree / "flashinfer/jit/comm.py"
    lines = path.read_text().splitlines(keepends=True)
    start, end = lines[VEC_GATE_LINE - 1].index("["), lines[VEC_GATE_LINE - 1].index("]") + 1
    lines[VEC_GATE_LINE - 1] = lines[VEC_GATE_LINE - 1][:start] + majors + lines[VEC_GATE_LINE - 1][end:]
    path.write_text("".join(lines))
    settle(path, age=600)


def test_an_edited_gate_stores_the_kept_parts_as_deltas_of_the_first_scan(tree, full_scans):
    _scan(tree)
    first = _stamp(tree)
    assert not first.bases
    _set_gate(tree, "[9, 10, 12]")
    after = _scan(tree)
    second = _stamp(tree)
    # the link's record too on a large tree; on one this small its changed answers are most of it
    assert {"memos", "results"} <= dict(second.bases).keys() <= set(AS_DELTAS)
    assert set(dict(second.bases).values()) <= {name for _, name in first.parts}  # the first scan's entries
    assert _entries(tree) == {name for _, name in (*second.parts, *second.bases)}
    assert after == _scan(tree, use_cache=False)
    _set_gate(tree, "[9]")
    again = _scan(tree)
    assert dict(_stamp(tree).bases) == dict(second.bases)  # still deltas of the first scan's entries
    assert len(full_scans) == 2  # the first scan and the one with no cache
    assert again == _scan(tree, use_cache=False)
    gate = next(g for g in again.gates if g.location.line == VEC_GATE_LINE)
    assert "sm_100a" not in gate.admits


def test_a_delta_whose_base_is_gone_runs_a_full_scan(tree, full_scans):
    _scan(tree)
    _set_gate(tree, "[9, 10, 12]")
    _scan(tree)
    for _, name in _stamp(tree).bases:
        next((tree.parent / "cache").rglob(name)).unlink()
    _set_gate(tree, "[9]")
    after = _scan(tree)
    assert len(full_scans) == 2
    assert after == _scan(tree, use_cache=False)


def _append(path: Path, text: str) -> None:
    path.write_text(path.read_text() + text)
    settle(path, age=600)


def test_deltas_stand_through_a_carried_over_comment_and_a_cuda_edit(tree, full_scans):
    """Each kind of re-scan after the first delta: a comment the store carries over (the index is
    stamped again, its bases with it), a CUDA edit (the results again, as a delta of the same
    base), a gate edit again; each gives what a scan with no cache gives, and every entry the
    index names is there."""
    _scan(tree)
    _set_gate(tree, "[9, 10, 12]")
    _scan(tree)
    bases = dict(_stamp(tree).bases)
    _append(tree / "flashinfer/jit/comm.py", "# a comment\n")
    _scan(tree)
    assert dict(_stamp(tree).bases) == bases
    unit = tree / "flashinfer/data/csrc/vec_dequant.cu"
    text = unit.read_text()
    unit.write_text(text.replace("int i = blockIdx.x", "flashinfer::gemm::warpgroup_arrive();\n  int i = blockIdx.x"))
    settle(unit, age=600)
    after_cuda = _scan(tree)
    assert after_cuda == _scan(tree, use_cache=False)
    _set_gate(tree, "[9]")
    after = _scan(tree)
    assert len(full_scans) == 2  # the first scan and the one with no cache
    assert after == _scan(tree, use_cache=False)
    stamp = _stamp(tree)
    assert _entries(tree) == {name for _, name in (*stamp.parts, *stamp.bases)}


def test_an_edited_gate_stores_its_result_without_reading_the_stored_one(tree, monkeypatch):
    """The result reports each gate with its text: after a gate's edit it differs from the stored
    result, which is then not read back to compare (the compare only keeps an equal result's bytes)."""
    from archlint.engine import store

    _scan(tree)
    compared = []
    rekeyed = store.rekeyed_entry
    monkeypatch.setattr(store, "rekeyed_entry", lambda *args, **kwargs: compared.append(args[0]) or rekeyed(*args, **kwargs))
    _set_gate(tree, "[9, 10, 12]")
    after = _scan(tree)
    assert compared == []
    assert after == _scan(tree, use_cache=False)
    assert _scan(tree) == after  # the stored result stands for the tree as it is
