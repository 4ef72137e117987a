"""Scan benchmark on the FlashInfer wheel: grep vs archlint cold, warm and one changed file.

    python bench/scan_bench.py [--wheel-dir DIR] [--skip-cold] [--jobs N] [--reference] [--eager] [--no-compile]

Downloads flashinfer-python==0.7.2.post1 into DIR (default /tmp/wheels/fi-0.7.2.post1) when
absent and unpacks `flashinfer/*`. Every run prints its wall time, the ratio to grep, the peak
RSS of its whole process tree (polled from /proc) and archlint's per-stage times and the files
each stage read (ARCHLINT_PROFILE=1). `--eager` also runs the scan that reads every file in full
(ARCHLINT_EAGER=1, `--no-cache`) and says whether its SARIF equals the cold scan's.

archlint's modules are byte-compiled first, as `pip install` leaves them: from a source checkout
under PYTHONDONTWRITEBYTECODE=1 every run would compile them again (about 0.1 s, a third of grep's
time). `--no-compile` measures without that step.
"""

from __future__ import annotations

import argparse
import compileall
import glob
import os
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

WHEEL = "flashinfer-python==0.7.2.post1"
GREP_PATTERN = r"sm_90|sm_100|__SM_|arch.*90|arch.*100|__CUDA_ARCH__"
CHANGED_FILE = "data/csrc/norm.cu"


def ensure_wheel(folder: Path) -> Path:
    tree = folder / "flashinfer"
    if tree.is_dir():
        return tree
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", WHEEL, "-d", str(folder)], check=True)
    wheel = sorted(glob.glob(str(folder / "flashinfer_python-*.whl")))[-1]
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(folder, [n for n in archive.namelist() if n.startswith("flashinfer/")])
    return tree


def _byte_compile() -> None:
    """Write archlint's bytecode (__pycache__, git-ignored), as installing the package does."""
    import archlint

    package = Path(archlint.__file__).resolve().parent
    compileall.compile_dir(str(package), quiet=1)
    print(f"byte-compiled {package} (as an install leaves it; --no-compile to measure without)")


def _tree_rss(root_pid: int) -> int:
    """Sum of VmRSS (bytes) over root_pid and its descendants."""
    parents: dict[int, int] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
            parents[int(entry)] = int(fields[1])
            rss[int(entry)] = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, IndexError, ValueError):
            continue
    total, todo = 0, [root_pid]
    while todo:
        pid = todo.pop()
        total += rss.get(pid, 0)
        todo.extend(child for child, parent in parents.items() if parent == pid)
    return total


def measure(argv: list[str], cwd: Path, env: dict) -> dict:
    start = time.perf_counter()
    with tempfile.TemporaryFile("w+") as err:
        process = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=err, text=True)
        peak = 0
        while process.poll() is None:
            peak = max(peak, _tree_rss(process.pid))
            time.sleep(0.05)
        wall = time.perf_counter() - start
        err.seek(0)
        stderr = err.read()
    stages = [line.split("stage", 1)[1].strip() for line in stderr.splitlines() if line.startswith("archlint: stage")]
    return {"wall": wall, "rss": peak, "rc": process.returncode, "stages": stages, "stderr": stderr}


def report(name: str, result: dict, grep: float) -> None:
    ratio = result["wall"] / grep if grep else float("nan")
    print(f"{name:<10} {result['wall']:8.2f} s  {ratio:7.1f}x grep  peak RSS {result['rss'] / 2**20:7.0f} MiB  rc={result['rc']}")
    for line in result["stages"]:
        print(f"{'':12}{line}")
    if result["rc"] not in (0, 1):
        print(result["stderr"][-2000:])


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--wheel-dir", type=Path, default=Path("/tmp/wheels/fi-0.7.2.post1"))
    parser.add_argument("--skip-cold", action="store_true", help="assume the cache is already filled")
    parser.add_argument("--jobs", type=int, default=0)
    parser.add_argument("--cache-dir", type=Path, default=None, help="default: a fresh temporary folder")
    parser.add_argument("--reference", action="store_true",
                        help="also run `--no-cache --jobs 1` and compare its SARIF with the cold scan's")
    parser.add_argument("--eager", action="store_true",
                        help="also run the scan that reads every file in full and compare its SARIF with the cold scan's")
    parser.add_argument("--no-compile", action="store_true", help="do not byte-compile archlint's modules first (bytecode already written is still used)")
    args = parser.parse_args()
    if not args.no_compile:
        _byte_compile()
    tree = ensure_wheel(args.wheel_dir)
    if not (tree / ".git").exists():
        subprocess.run(["git", "init", "-q", str(tree)], check=True)  # one-file mode needs a repository root
    cache = args.cache_dir or Path(tempfile.mkdtemp(prefix="archlint-bench-cache-"))
    env = dict(os.environ, ARCHLINT_CACHE_DIR=str(cache), ARCHLINT_PROFILE="1")
    out = Path(tempfile.mkdtemp(prefix="archlint-bench-out-"))
    archlint = [sys.executable, "-m", "archlint", "scan", "--jobs", str(args.jobs)]

    measure(["grep", "-rlE", GREP_PATTERN, "."], tree, env)  # warm the page cache
    grep = measure(["grep", "-rlE", GREP_PATTERN, "."], tree, env)
    report("grep", grep, grep["wall"])
    if not args.skip_cold:
        report("cold", measure([*archlint, ".", "--format", "sarif", "-o", str(out / "cold.sarif")], tree, env), grep["wall"])
    report("warm", measure([*archlint, ".", "--format", "sarif", "-o", str(out / "warm.sarif")], tree, env), grep["wall"])
    if not args.skip_cold:
        same = (out / "cold.sarif").read_bytes() == (out / "warm.sarif").read_bytes()
        print(f"warm SARIF {'identical to' if same else 'DIFFERS from'} cold SARIF")
    # right after the warm run, like it with the page cache warm (as grep is): the long runs below
    # would push the cache folder's files out of it
    changed = tree / CHANGED_FILE
    original = changed.read_bytes()
    try:
        changed.write_bytes(original + b"\n// bench edit\n")
        one = measure([*archlint, CHANGED_FILE, "--format", "sarif", "-o", str(out / "one.sarif")], tree, env)
    finally:
        changed.write_bytes(original)
    report("one-file", one, grep["wall"])
    if args.reference and not args.skip_cold:
        serial = [sys.executable, "-m", "archlint", "scan", "--no-cache", "--jobs", "1"]
        report("reference", measure([*serial, ".", "--format", "sarif", "-o", str(out / "reference.sarif")], tree, env), grep["wall"])
        same = (out / "cold.sarif").read_bytes() == (out / "reference.sarif").read_bytes()
        print(f"cold SARIF {'identical to' if same else 'DIFFERS from'} the --no-cache --jobs 1 SARIF")
    if args.eager and not args.skip_cold:
        eager = [sys.executable, "-m", "archlint", "scan", "--no-cache", "--jobs", str(args.jobs)]
        report("eager", measure([*eager, ".", "--format", "sarif", "-o", str(out / "eager.sarif")], tree,
                                dict(env, ARCHLINT_EAGER="1")), grep["wall"])
        same = (out / "cold.sarif").read_bytes() == (out / "eager.sarif").read_bytes()
        print(f"cold SARIF {'identical to' if same else 'DIFFERS from'} the eager (every file in full) SARIF")
    print(f"cache {cache}  reports {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
