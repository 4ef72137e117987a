"""Python facts: the same for every file under another checkout of archlint, and how fast.

    python bench/python_facts_equal.py --reference OLD TREE [TREE ...] [--marked] [--cache DIR]
    python bench/python_facts_equal.py TREE [--marked] [--profile N]

`OLD` is a folder holding another archlint's `archlint/` and `rules/` (for instance
`git archive <commit> archlint rules | tar -x -C OLD`). For every `.py` file under each TREE
(`--marked`: only those the byte prefilter passes, `extract/python/markers.py`) the reference
facts are extracted by a child process that imports archlint from OLD, this checkout's in this
process, and each file's two `PythonFacts` are compared (`==` and `repr`). It prints, per tree, the
files compared, equal and different (the first differing fields of a few), and for both sides the
extraction's CPU time and speed (MB/s, one process) beside tree-sitter's parse of the same bytes.
With `--cache DIR` the reference facts are kept in DIR (one file per tree and reference folder)
and reused. Without `--reference` it only times this checkout (`--profile N`: cProfile's top N).
Exit status 1 when any file differs.

Paths handed to the extractor are relative to the tree's parent folder, as a scan of that folder
would give them.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import pickle
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def python_files(tree: Path, marked: bool) -> list[tuple[str, Path]]:
    found = sorted(Path(folder) / name for folder, _, names in os.walk(tree) for name in names if name.endswith(".py"))
    if marked:
        from archlint.extract.python.markers import markers
        from archlint.knowledge.idioms import load_idioms

        hold = markers(load_idioms()).hold
        found = [path for path in found if hold(path.read_bytes())]
    return [(path.relative_to(tree.parent).as_posix(), path) for path in found]


def extract_all(files: list[tuple[str, Path]], sink=None) -> tuple[float, float, int]:
    """(extract seconds, parse seconds, bytes); each file's facts go to `sink` when given."""
    from archlint.extract.python.facts import extract_python
    from archlint.extract.python.walk import parse
    from archlint.knowledge.idioms import load_idioms

    idioms = load_idioms()
    datas = [(rel, path.read_bytes()) for rel, path in files]
    start = time.process_time()
    for _, data in datas:
        parse(data)
    parse_s = time.process_time() - start
    extract_s = 0.0
    for rel, data in datas:
        start = time.process_time()
        facts = extract_python(rel, data, idioms)
        extract_s += time.process_time() - start
        if sink is not None:
            pickle.dump((rel, facts), sink, protocol=pickle.HIGHEST_PROTOCOL)
    return extract_s, parse_s, sum(len(data) for _, data in datas)


def dump_child(tree: Path, marked: bool, out: Path) -> None:
    """Runs under the reference checkout: writes its archlint's location, then every file's facts, then timings."""
    import archlint

    with open(out, "wb") as sink:
        pickle.dump(str(Path(archlint.__file__).parent), sink)
        timing = extract_all(python_files(tree, marked), sink)
        pickle.dump(("", timing), sink)


def reference_stream(reference: Path, tree: Path, marked: bool, cache: Path | None):
    key = hashlib.sha256(f"{reference.resolve()}|{tree.resolve()}|{marked}".encode()).hexdigest()[:16]
    folder = cache or Path(tempfile.mkdtemp(prefix="pyfacts-"))
    folder.mkdir(parents=True, exist_ok=True)
    out = folder / f"reference-{key}.pickles"
    if cache is None or not out.exists():
        env = dict(os.environ, PYTHONPATH=str(reference.resolve()))
        command = [sys.executable, __file__, "--dump-child", str(out), str(tree)] + (["--marked"] if marked else [])
        subprocess.run(command, env=env, check=True, cwd=reference)
    with open(out, "rb") as source:
        where = pickle.load(source)
        if Path(where).resolve() != (reference / "archlint").resolve():
            raise SystemExit(f"the reference run imported archlint from {where}, not {reference}")
        while True:
            rel, facts = pickle.load(source)
            if not rel:
                yield "", facts
                return
            yield rel, facts
    if cache is None:
        out.unlink()


def first_differences(old, new, limit: int = 3) -> list[str]:
    fields = [name for name in old.__dataclass_fields__ if getattr(old, name) != getattr(new, name)
              or repr(getattr(old, name)) != repr(getattr(new, name))]
    return fields[:limit]


def speed(label: str, timing: tuple[float, float, int]) -> str:
    extract_s, parse_s, size = timing
    return (f"  {label}: extract {extract_s:.2f} s, {size / 1e6 / extract_s:.2f} MB/s "
            f"({extract_s / parse_s:.1f}x tree-sitter's parse, {parse_s:.2f} s)")


def compare(reference: Path, tree: Path, marked: bool, cache: Path | None) -> bool:
    from archlint.extract.python.facts import extract_python
    from archlint.knowledge.idioms import load_idioms

    idioms = load_idioms()
    equal = 0
    different: list[str] = []
    old_timing = None
    for rel, old in reference_stream(reference, tree, marked, cache):
        if not rel:
            old_timing = old
            break
        new = extract_python(rel, (tree.parent / rel).read_bytes(), idioms)
        if old == new and repr(old) == repr(new):
            equal += 1
        else:
            different.append(f"{rel}: {', '.join(first_differences(old, new)) or 'unequal'}")
    new_timing = extract_all(python_files(tree, marked))
    print(f"{tree}: {equal + len(different)} files, {equal} equal, {len(different)} different")
    for line in different[:10]:
        print("  differs:", line)
    if old_timing is not None:
        print(speed("reference", old_timing))
    print(speed("this checkout", new_timing))
    if old_timing is not None:
        print(f"  speed-up {old_timing[0] / new_timing[0]:.2f}x")
    return not different


def profile(tree: Path, marked: bool, top: int) -> None:
    import cProfile
    import pstats

    profiler = cProfile.Profile()
    files = python_files(tree, marked)
    profiler.enable()
    timing = extract_all(files)
    profiler.disable()
    print(speed("this checkout (profiled)", timing))
    pstats.Stats(profiler).sort_stats("tottime").print_stats(top)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("trees", nargs="+", type=Path)
    parser.add_argument("--reference", type=Path, help="a folder with another archlint's archlint/ and rules/")
    parser.add_argument("--marked", action="store_true", help="only the files the byte prefilter passes")
    parser.add_argument("--cache", type=Path, help="keep and reuse the reference facts here")
    parser.add_argument("--profile", type=int, metavar="N", help="print cProfile's top N (this checkout)")
    parser.add_argument("--dump-child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.dump_child:
        dump_child(args.trees[0], args.marked, args.dump_child)
        return 0
    ok = True
    for tree in args.trees:
        if args.reference:
            ok = compare(args.reference, tree, args.marked, args.cache) and ok
        elif args.profile:
            profile(tree, args.marked, args.profile)
        else:
            print(f"{tree}:")
            print(speed("this checkout", extract_all(python_files(tree, args.marked))))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
