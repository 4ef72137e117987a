"""A tree of many Python files links them in a process of its own (engine.linking.python_side_apart):
what that process gives back is what the main process would have made, the scan's result is
stored as any other's, and that process's stage lines are the scan's own."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from archlint.discover import discover
from archlint.engine import linking, scan
from archlint.engine.cache import FactsCache
from archlint.extract import files as files_module
from archlint.extract.files import Workers, extract_all, extract_file, extract_into
from archlint.model.scan import ScanOptions
from conftest import settled_copy

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
MAX_BYTES = ScanOptions(paths=()).max_file_bytes


def _scan(root: Path, cache: bool = True):
    return scan(ScanOptions(paths=(str(root),), jobs=1, use_cache=cache))


def test_the_python_side_linked_apart_gives_what_the_main_process_links(tmp_path, monkeypatch, capfd):
    monkeypatch.setenv("ARCHLINT_CACHE_DIR", str(tmp_path / "cache"))
    root = settled_copy(FIXTURES / "gate-flashinfer", tmp_path / "tree")
    expected = _scan(root, cache=False)  # a handful of Python files: linked in this process

    called = []
    real_call = Workers.call

    def call(self, function, *args):
        called.append(function.__name__)
        return real_call(self, function, *args)

    monkeypatch.setattr(linking, "APART_FROM", 1)
    monkeypatch.setattr(Workers, "call", call)
    monkeypatch.setenv("ARCHLINT_PROFILE", "1")
    capfd.readouterr()
    apart = _scan(root)
    stages = [line.split()[2] for line in capfd.readouterr().err.splitlines() if line.startswith("archlint: stage")]
    assert called == ["_python_side_alone"]
    assert apart.findings == expected.findings and apart.gates == expected.gates
    assert expected.gates and any(f.rule.startswith("AL1") for f in apart.findings)
    # the other process's stages, printed there, in the scan's order
    assert stages[:4] == ["discover", "facts", "pylink", "outline"] and "verdicts" in stages

    again = _scan(root)  # the scan's result was stored: the next one stands on it
    assert again.findings == expected.findings
    assert [line for line in capfd.readouterr().err.splitlines() if "stage facts" in line] == []


def test_the_cuda_files_are_outlined_meanwhile_while_the_python_side_links(tmp_path, monkeypatch):
    monkeypatch.setenv("ARCHLINT_CACHE_DIR", str(tmp_path / "cache"))
    root = settled_copy(FIXTURES / "gate-flashinfer", tmp_path / "tree")
    expected = _scan(root, cache=False)

    fed = []
    real_meanwhile = Workers.meanwhile

    def meanwhile(self, function, batches):
        fed.append((function.__name__, len(batches)))
        return real_meanwhile(self, function, batches)

    monkeypatch.setattr(linking, "AHEAD_FROM", 1)
    monkeypatch.setattr(linking, "AHEAD_BATCH", 1)
    monkeypatch.setattr(Workers, "meanwhile", meanwhile)
    cuda = [f for f in discover((str(root),)).files if f.language == "cuda"]
    found = scan(ScanOptions(paths=(str(root),), jobs=2))
    assert fed == [("extract_into", len(cuda))]  # a batch of one file each
    assert found.findings == expected.findings and found.gates == expected.gates
    assert not [t for t in threading.enumerate() if t.name == "archlint-meanwhile"]

    fed.clear()
    monkeypatch.setenv("ARCHLINT_CACHE_DIR", str(tmp_path / "cache-one-job"))  # a cold scan again
    one_job = scan(ScanOptions(paths=(str(root),), jobs=1))  # a cache to store into, but no core to spare
    assert fed == [] and one_job.findings == expected.findings


def test_a_worker_stores_outlines_meanwhile_and_stops_when_told(tmp_path, monkeypatch):
    monkeypatch.setenv("ARCHLINT_CACHE_DIR", str(tmp_path / "cache"))
    root = settled_copy(FIXTURES / "gate-flashinfer", tmp_path / "tree")
    files = [f for f in discover((str(root),)).files if f.language == "cuda"]
    cache = FactsCache.open()
    assert cache is not None
    made = [extract_file(file, MAX_BYTES, directives=True) for file in files]
    monkeypatch.setattr(files_module, "extract_file", _not_again)  # in this process; the worker extracts
    with Workers(2) as workers, workers.meanwhile(extract_into, [([f], MAX_BYTES, True, cache.detached()) for f in files]):
        deadline = time.monotonic() + 60
        while not _all_stored(files, cache) and time.monotonic() < deadline:
            time.sleep(0.1)
    assert extract_all(files, 1, MAX_BYTES, cache, directives=True) == made
    assert not [t for t in threading.enumerate() if t.name == "archlint-meanwhile"]


def _all_stored(files, cache) -> bool:
    try:
        extract_all(files, 1, MAX_BYTES, cache, directives=True)
    except AssertionError:
        return False
    return True


def test_outlines_stored_by_a_worker_are_what_the_includes_stage_loads(tmp_path, monkeypatch):
    monkeypatch.setenv("ARCHLINT_CACHE_DIR", str(tmp_path / "cache"))
    root = settled_copy(FIXTURES / "gate-flashinfer", tmp_path / "tree")
    files = [f for f in discover((str(root),)).files if f.language == "cuda"]
    cache = FactsCache.open()
    assert cache is not None and len(files) > 2
    made = [extract_file(file, MAX_BYTES, directives=True) for file in files]

    assert extract_into(files, MAX_BYTES, True, cache.detached()) == len(files)
    monkeypatch.setattr(files_module, "extract_file", _not_again)
    assert extract_all(files, 1, MAX_BYTES, cache, directives=True) == made
    with pytest.raises(AssertionError):  # the full facts are other entries: not stored by it
        extract_all(files[:1], 1, MAX_BYTES, cache)


def _not_again(*args, **kwargs):
    raise AssertionError("extracted again: the cache should have held it")
