"""Filters after a full scan, as ratios to a warm scan: each narrows what the stored scan judged.

    python bench/filter_bench.py [--tree DIR] [--cache-dir DIR] [--rounds N]

From DIR's parent (default: the FlashInfer wheel at /tmp/wheels/fi-0.7.2.post1, scanned as
`archlint scan flashinfer`), with ARCHLINT_CACHE_DIR set to --cache-dir (a fresh temporary folder
by default, then first filled by a full scan), times the warm scan and each filter. A --target
subset is timed as it runs first (narrowed from the stored scan: its own stored result is removed
before each round) and again (answered from its own stored result). Every run must exit 0 or 1.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FILTERS = [
    ("select AL101", ["--select", "AL101"]),
    ("fail-on error", ["--fail-on", "error"]),
    ("ignore AL2", ["--ignore", "AL2"]),
    ("target sm_120a", ["--target", "sm_120a"]),
    ("target sm_90a,sm_100a select AL1", ["--target", "sm_90a,sm_100a", "--select", "AL1"]),
]


def _run(tree: Path, args: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "archlint", "scan", tree.name, *args], cwd=tree.parent, env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"archlint scan {' '.join(args)}: exit {done.returncode}\n{done.stderr.decode()}")
    return elapsed


def _forget_subsets(cache: Path) -> None:
    """Remove the stored results of target lists that are not the full scan's, so that the next
    --target run narrows the stored scan again."""
    for path in (cache / "facts-v1" / "scans").glob("*-result.pkl"):
        if not path.with_name(path.name.replace("-result.pkl", "-state.pkl")).exists():
            path.unlink()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, default=Path("/tmp/wheels/fi-0.7.2.post1/flashinfer"))
    parser.add_argument("--cache-dir", type=Path, default=None)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    cache = args.cache_dir or Path(tempfile.mkdtemp(prefix="archlint-filters-"))
    env = {**os.environ, "ARCHLINT_CACHE_DIR": str(cache)}
    print(f"full scan (fills {cache} if empty): {_run(args.tree, [], env):.2f} s")
    for round_ in range(1, args.rounds + 1):
        warm = _run(args.tree, [], env)
        print(f"round {round_}: warm {warm:.2f} s")
        for name, options in FILTERS:
            _forget_subsets(cache)
            first = _run(args.tree, options, env)
            again = _run(args.tree, options, env)
            print(f"  {name:<34} {first:6.2f} s {first / warm:5.2f}x warm   again {again:6.2f} s {again / warm:5.2f}x")


if __name__ == "__main__":
    main()
