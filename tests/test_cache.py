"""The facts cache: same results with and without it, misses on change, rebuilds bad entries."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from archlint.cli.commands import cli
from archlint.discover import discover
from archlint.engine import cache as cache_module
from archlint.engine import scan
from archlint.engine.cache import FactsCache, cache_dir, clear
from archlint.extract.files import extract_file, pickled
from archlint.knowledge import resources
from archlint.knowledge.rules import load_rules
from archlint.model.scan import ScanOptions
from archlint.report import Report, render

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
OLD = time.time() - 3600  # older than the racy window, so the cache may trust the file


@pytest.fixture
def cache_home(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("ARCHLINT_CACHE_DIR", str(folder))
    return folder


def age(tree: Path) -> None:
    for path in [tree, *tree.rglob("*")]:
        os.utime(path, (OLD, OLD), follow_symlinks=False)


def copy_fixture(name: str, tmp_path: Path) -> Path:
    tree = tmp_path / "trees" / name
    shutil.copytree(FIXTURES / name, tree)
    age(tree)
    return tree


def generated_tree(tmp_path: Path) -> Path:
    tree = tmp_path / "trees" / "generated"
    (tree / "pkg").mkdir(parents=True)
    (tree / "csrc").mkdir()
    (tree / "pkg" / "__init__.py").write_text("")
    (tree / "pkg" / "jit.py").write_text(
        "def gen_comm_module():\n"
        "    flags = get_nvcc_flags_list(supported_major_versions=[9, 10])\n"
        '    return gen_jit_spec("comm", [CSRC / "comm.cu"], extra_cuda_cflags=flags)\n'
    )
    for i in range(8):
        (tree / "csrc" / f"part{i}.cuh").write_text(
            f"#pragma once\n#if __CUDA_ARCH__ >= {800 + 100 * (i % 3)}\n__device__ int f{i}() {{ return {i}; }}\n#endif\n"
        )
    (tree / "csrc" / "comm.cu").write_text(
        "".join(f'#include "part{i}.cuh"\n' for i in range(8)) + "__global__ void comm_kernel() { __nanosleep(10); }\n"
    )
    age(tree)
    return tree


def rendered(tree: Path, use_cache: bool, fmt: str = "json") -> str:
    result = scan(ScanOptions(paths=(str(tree),), use_cache=use_cache, jobs=1))
    report = Report(root=result.root, findings=result.findings, diagnostics=result.diagnostics, gates=result.gates,
                    rules=load_rules(), targets=result.targets, files_scanned=result.files_scanned)
    return render(fmt, report)


def entries(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*.pkl"))


TREES = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir())


@pytest.mark.parametrize("name", TREES + ["generated"])
def test_same_results_cold_warm_and_uncached(tmp_path, cache_home, name):
    tree = generated_tree(tmp_path) if name == "generated" else copy_fixture(name, tmp_path)
    uncached = rendered(tree, use_cache=False)
    assert not cache_home.exists()
    cold = rendered(tree, use_cache=True)
    stored = entries(cache_home)
    assert stored, "a cold scan stores entries"
    warm = rendered(tree, use_cache=True)
    assert uncached == cold == warm
    assert entries(cache_home) == stored


def test_warm_scan_reads_the_cache(tmp_path, cache_home, monkeypatch):
    tree = generated_tree(tmp_path)
    rendered(tree, use_cache=True)
    import archlint.extract.files as facts

    def fail(*args, **kwargs):
        raise AssertionError("a cached file was extracted again")

    monkeypatch.setattr(facts, "extract_file", fail)
    rendered(tree, use_cache=True)


def test_warm_scan_does_not_rehash_files_at_rest(tmp_path, cache_home, monkeypatch):
    tree = generated_tree(tmp_path)
    expected = rendered(tree, use_cache=True)

    def fail(*args, **kwargs):
        raise AssertionError("an unchanged file was hashed again")

    monkeypatch.setattr(cache_module.hashlib, "file_digest", fail)
    assert rendered(tree, use_cache=True) == expected


def test_same_size_rewrite_is_not_trusted_from_the_stat_table(tmp_path, cache_home):
    tree = generated_tree(tmp_path)
    source = tree / "csrc" / "part0.cuh"
    rendered(tree, use_cache=True)
    text = source.read_text()
    source.write_text(text.replace("800", "900"))
    os.utime(source, (OLD + 20, OLD + 20))
    assert rendered(tree, use_cache=True) == rendered(tree, use_cache=False)
    file = next(f for f in discover((str(tree),)).files if f.path == "csrc/part0.cuh")
    cached = FactsCache.open().get(file)
    assert cached.cuda.sha256 == cache_module.hashlib.sha256(source.read_bytes()).hexdigest()


def test_modified_file_is_extracted_again(tmp_path, cache_home):
    tree = generated_tree(tmp_path)
    before = rendered(tree, use_cache=True)
    source = tree / "csrc" / "part0.cuh"
    source.write_text("#pragma once\n#if __CUDA_ARCH__ == 900\n__device__ int f0() { return 0; }\n#endif\n")
    os.utime(source, (OLD + 10, OLD + 10))
    after = rendered(tree, use_cache=True)
    assert after != before
    assert after == rendered(tree, use_cache=False)


def test_recently_modified_file_is_not_stored(tmp_path, cache_home):
    tree = generated_tree(tmp_path)
    (tree / "csrc" / "fresh.cu").write_text("__global__ void fresh() {}\n")
    rendered(tree, use_cache=True)
    files = discover((str(tree),)).files
    opened = FactsCache.open()
    assert opened.get(next(f for f in files if f.path == "csrc/fresh.cu")) is None
    assert opened.get(next(f for f in files if f.path == "csrc/comm.cu")) is not None


@pytest.mark.parametrize("damage", ["truncate", "flip", "empty", "garbage-pickle", "other-key"])
def test_damaged_entry_is_rebuilt(tmp_path, cache_home, damage):
    tree = generated_tree(tmp_path)
    expected = rendered(tree, use_cache=True)
    stored = entries(cache_home)
    for entry in stored:
        data = entry.read_bytes()
        if damage == "truncate":
            entry.write_bytes(data[: len(data) // 2])
        elif damage == "flip":
            entry.write_bytes(data[:-10] + bytes([data[-10] ^ 0xFF]) + data[-9:])
        elif damage == "empty":
            entry.write_bytes(b"")
        elif damage == "garbage-pickle":
            payload = b"\x80\x05garbage"
            header = cache_module._HEADER.unpack_from(data)
            fixed = cache_module._HEADER.pack(header[0], header[1], cache_module.hashlib.sha256(payload).digest(), len(payload))
            entry.write_bytes(fixed + payload)
        else:
            entry.write_bytes(stored[0].read_bytes() if entry != stored[0] else stored[1].read_bytes())
    assert rendered(tree, use_cache=True) == expected
    assert all(entry.read_bytes()[:8] == cache_module.MAGIC for entry in entries(cache_home))
    assert rendered(tree, use_cache=True) == expected


def test_cache_dir_precedence(tmp_path, monkeypatch):
    monkeypatch.setenv("ARCHLINT_CACHE_DIR", str(tmp_path / "explicit"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "explicit"
    monkeypatch.delenv("ARCHLINT_CACHE_DIR")
    assert cache_dir() == tmp_path / "xdg" / "archlint"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_dir() == tmp_path / "home" / ".cache" / "archlint"


def test_unusable_cache_folder_means_uncached(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("ARCHLINT_CACHE_DIR", str(blocker / "below"))
    assert FactsCache.open() is None
    tree = generated_tree(tmp_path)
    assert rendered(tree, use_cache=True) == rendered(tree, use_cache=False)


def test_nothing_written_inside_the_scanned_tree(tmp_path, cache_home):
    tree = generated_tree(tmp_path)
    before = sorted((p.relative_to(tree).as_posix(), p.stat().st_mtime_ns) for p in tree.rglob("*"))
    rendered(tree, use_cache=True)
    rendered(tree, use_cache=True)
    after = sorted((p.relative_to(tree).as_posix(), p.stat().st_mtime_ns) for p in tree.rglob("*"))
    assert before == after
    assert entries(cache_home)


def test_cache_inside_the_scanned_tree_is_refused(tmp_path, monkeypatch):
    tree = generated_tree(tmp_path)
    monkeypatch.setenv("ARCHLINT_CACHE_DIR", str(tree / ".archlint-cache"))
    rendered(tree, use_cache=True)
    assert not (tree / ".archlint-cache").exists()


def test_size_limit_is_part_of_the_key(tmp_path, cache_home):
    tree = generated_tree(tmp_path)
    source = next(f for f in discover((str(tree),)).files if f.path == "csrc/comm.cu")
    small = FactsCache.open(max_bytes=64)
    small.get(source)
    small.sink([source]).write(source, pickled(extract_file(source, 64)))
    large = FactsCache.open()
    assert large.get(source) is None
    assert small.get(source) == extract_file(source, 64)


def test_cache_clear_command(tmp_path, cache_home):
    tree = generated_tree(tmp_path)
    rendered(tree, use_cache=True)
    count = len(entries(cache_home))
    (cache_home / cache_module.LAYOUT / "00").mkdir(exist_ok=True)
    (cache_home / cache_module.LAYOUT / "00" / ".tmp-left-by-a-killed-scan").write_bytes(b"half")
    result = CliRunner().invoke(cli, ["cache", "clear"])
    assert result.exit_code == 0, result.output
    assert f"removed {count} cache entries" in result.output
    assert not entries(cache_home)
    assert not list((cache_home / cache_module.LAYOUT).rglob(".tmp-*"))
    assert clear() == 0
    rendered(tree, use_cache=True)
    assert clear() == count


def test_the_rules_tables_a_scan_parsed_are_read_back_from_the_cache(tmp_path, cache_home, monkeypatch):
    """The next process takes the rules files' tables as a scan parsed them, for the same data and
    code (the cache's salt) alone."""
    tree = copy_fixture("gate-flashinfer", tmp_path)
    monkeypatch.setattr(resources, "_parsed", {})
    scan(ScanOptions(paths=(str(tree),), jobs=1))
    assert (cache_home / cache_module.LAYOUT / cache_module.TABLES_NAME).is_file()
    parsed = resources.parsed_tables()
    assert parsed  # (what this process had not read before the scan: the rest is remembered where it is used)
    name = sorted(parsed)[0]

    def no_parsing(handle, **_):
        raise AssertionError(f"{handle.name} parsed again")

    monkeypatch.setattr(resources, "_parsed", {})  # as in a new process
    monkeypatch.setattr(resources.tomllib, "load", no_parsing)
    FactsCache.usable()
    assert resources.load_toml(name) == parsed[name]
    monkeypatch.setattr(resources, "_parsed", {})
    FactsCache.usable(max_bytes=12_345)  # another salt
    assert resources.parsed_tables() == {}


def test_cli_scan_uses_the_cache_unless_told_not_to(tmp_path, cache_home):
    tree = generated_tree(tmp_path)
    runner = CliRunner()
    uncached = runner.invoke(cli, ["scan", str(tree), "--format", "json", "--no-cache"])
    assert not cache_home.exists()
    cached = runner.invoke(cli, ["scan", str(tree), "--format", "json"])
    assert entries(cache_home)
    assert cached.stdout == uncached.stdout


def test_workers_store_the_facts_they_extract(tmp_path, cache_home, monkeypatch):
    from archlint.extract import files as extraction

    tree = generated_tree(tmp_path)
    files = list(discover((str(tree),)).files)
    made = extraction.extract_all(files, 2, 1 << 22, FactsCache.open())  # two workers
    FactsCache.open().flush()
    assert len(entries(cache_home)) == len(files)

    def fail(*args, **kwargs):
        raise AssertionError("a file a worker stored was extracted again")

    monkeypatch.setattr(extraction, "extract_file", fail)
    assert extraction.extract_all(files, 2, 1 << 22, FactsCache.open()) == made
    assert made == [extract_file(file, 1 << 22) for file in files]


def test_one_job_extracts_many_files_in_a_worker_of_its_own(tmp_path, cache_home, monkeypatch):
    from archlint.extract import files as extraction

    tree = generated_tree(tmp_path)
    files = list(discover((str(tree),)).files)
    expected = [extract_file(file, 1 << 22) for file in files]
    mapped = []
    real_map = extraction.Workers.map
    monkeypatch.setattr(extraction.Workers, "map", lambda self, *a: mapped.append(self.jobs) or real_map(self, *a))
    assert extraction.extract_all(files[:3], 1, 1 << 22, None) == expected[:3] and mapped == []  # too few: here

    monkeypatch.setattr(extraction, "ONE_JOB_APART_FROM", 2)
    assert extraction.extract_all(files, 1, 1 << 22, FactsCache.open()) == expected
    assert mapped == [1]  # one worker, so this process keeps nothing of the parsing
    assert len(entries(cache_home)) == len(files)


def test_facts_of_a_file_changed_after_it_was_hashed_are_not_stored(tmp_path, cache_home):
    tree = generated_tree(tmp_path)
    file = next(f for f in discover((str(tree),)).files if f.path == "csrc/comm.cu")
    cache = FactsCache.open()
    sink = cache.sink([file])  # hashed now; a worker extracts later
    facts = extract_file(file, 1 << 22)
    (tree / "csrc" / "comm.cu").write_text("__global__ void changed() {}\n")
    os.utime(tree / "csrc" / "comm.cu", (OLD + 30, OLD + 30))
    sink.write(file, pickled(facts))
    assert entries(cache_home) == []
    assert FactsCache.open().get(file) is None


@pytest.mark.parametrize("name", ["gate-flashinfer", "gate-arch-constant", "gate-sglang-jit"])
def test_facts_come_back_from_a_pickle_as_they_went(name):
    import pickle

    for file in discover((str(FIXTURES / name),)).files:
        facts = extract_file(file, 1 << 22)
        again = pickle.loads(pickle.dumps(facts, protocol=5))
        assert again == facts
