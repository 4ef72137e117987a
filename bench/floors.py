"""What a cold scan cannot go below: the reading and parsing every scan of the wheel does, timed alone.

    python bench/floors.py [--wheel-dir DIR] [--cores N]

On the FlashInfer wheel (downloaded as bench/scan_bench.py does), one process, each step after
the page cache is warm, printed as CPU seconds, as the wall time the step would take spread
perfectly over N cores (default: this machine's), and as a ratio of that to grep over the same
tree in the same invocation:

- read: every file read once, and the byte prefilter run on every Python file;
- python parse: tree-sitter-python's parse of every `.py` file, with no walk. A scan parses every
  Python file at least this far: each one's syntax errors are reported, gate or no gate;
- directives: every CUDA file's preprocessor directives and includes as archlint reads them for the
  macro table and the include graph (`lang.cpp.directives.scan_directives`).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.scan_bench import GREP_PATTERN, ensure_wheel  # noqa: E402


def files_of(tree: Path, suffixes: tuple[str, ...]) -> list[Path]:
    return sorted(p for p in tree.rglob("*") if p.is_file() and p.name.endswith(suffixes))


def cpu(step) -> float:
    start = time.process_time()
    step()
    return time.process_time() - start


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--wheel-dir", type=Path, default=Path("/tmp/wheels/fi-0.7.2.post1"))
    parser.add_argument("--cores", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    tree = ensure_wheel(args.wheel_dir)

    from archlint.extract.python.markers import markers
    from archlint.extract.python.walk import parse
    from archlint.knowledge.idioms import load_idioms
    from archlint.knowledge.languages import CUDA_SUFFIXES
    from archlint.lang.cpp.directives import scan_directives

    grep = ["grep", "-rlE", GREP_PATTERN, "."]
    subprocess.run(grep, cwd=tree, capture_output=True)  # warm the page cache
    start = time.perf_counter()
    subprocess.run(grep, cwd=tree, capture_output=True)
    grep_wall = time.perf_counter() - start

    python = files_of(tree, (".py",))
    cuda = files_of(tree, tuple(CUDA_SUFFIXES))
    marks = markers(load_idioms())
    contents: dict[Path, bytes] = {}

    def read() -> None:
        for path in python + cuda:
            data = path.read_bytes()
            contents[path] = data
            if path.suffix == ".py":
                marks.hold(data)

    def python_parse() -> None:
        for path in python:
            parse(contents[path])

    def directives() -> None:
        for path in cuda:
            scan_directives(str(path), contents[path])

    print(f"grep               {grep_wall:7.2f} s wall")
    for name, step, read_files in (("read", read, python + cuda), ("python parse", python_parse, python),
                                   ("directives", directives, cuda)):
        seconds = cpu(step)
        size = sum(len(contents[p]) for p in read_files)
        wall = seconds / args.cores
        print(f"{name:18s} {seconds:7.2f} s CPU  {size / 1e6:6.1f} MB  {size / 1e6 / seconds:6.1f} MB/s  "
              f"{wall:6.2f} s on {args.cores} cores  {wall / grep_wall:6.1f}x grep")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
