"""Scan benchmark: every figure of the speed goals in one run, as ratios to `grep -r` timed in it.

    python bench/scan_bench.py WHEEL_DIR [--skip-jobs1] [--no-reference] [--check-edits] [--eager] [--no-compile] [--keep]

WHEEL_DIR holds the package folder (`flashinfer/` for /tmp/wheels/fi-0.7.2.post1). The folder is
copied into a temporary one made a git repository (the hook's call needs a repository root), so
the input is never edited, and every scan uses a cache folder of its own. In order, each as a
user would run it, from the copy's root:

    grep        grep -rlE PATTERN PACKAGE               (page cache warm, best of 2; timed again just
                                                         before each step below, whose ratio divides by it)
    cold        archlint scan PACKAGE --jobs 2          (empty cache; its peak RSS is the goal's)
    warm        the same again, nothing changed
    root        archlint scan .                          (after the scan of the package)
    cu-edit     one line appended to a .cu file (a comment), then archlint scan PACKAGE
    cu-code     a statement added to that file's first function instead (its facts change), the
                same scan (no goal of its own: what an edit of the code costs beside cu-edit)
    py-edit     one line appended to a Python gate module, then archlint scan PACKAGE
    hook        a literal of that module changed, then archlint scan PACKAGE/MODULE (pre-commit)
    cold-j1     archlint scan PACKAGE --jobs 1           (its own empty cache; then the speed-up, and the
                                                         most it could be while some stages run in one process)
    reference   archlint scan PACKAGE --no-cache --jobs 1

Each edit is made, then the bench waits out the two-second window in which archlint does not
trust a file's stat (engine/cache.py), as a user who saves and then commits would, so each scan
starts from the state the one before stored. The SARIF of cold, warm, root and cold-j1 must be
byte-identical to the reference's; with --check-edits the edit scans' SARIF are compared with a
`--no-cache --jobs 1` scan of the edited tree too (four more cold-length runs), and --eager the cold
SARIF with that of the scan that reads every file in full (ARCHLINT_EAGER=1). Each line gives
the wall time, the ratio to grep, the peak RSS of the whole process tree (polled from /proc) and
archlint's stage lines (ARCHLINT_PROFILE=1).
"""

from __future__ import annotations

import argparse
import compileall
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GREP_PATTERN = r"sm_90|sm_100|__SM_|arch.*90|arch.*100|__CUDA_ARCH__"
CU_FILE = "data/csrc/norm.cu"  # inside the package
PY_FILE = "jit/comm.py"  # a Python gate module of the package
RACY_WAIT = 2.2  # seconds: engine.cache.RACY_SECONDS and a little
# goal per measure: (ratio to grep, or seconds, whichever is easier to meet); None: no such goal
GOALS = {"cold": (60.0, None), "warm": (2.0, None), "root": (2.0, None), "cu-edit": (1.5, 0.5),
         "py-edit": (3.0, 1.0), "hook": (3.0, 1.0)}


def _byte_compile() -> None:
    """Write archlint's bytecode (__pycache__, git-ignored), as installing the package does."""
    import archlint

    package = Path(archlint.__file__).resolve().parent
    compileall.compile_dir(str(package), quiet=1)


def _tree_rss(root_pid: int) -> int:
    """Sum of VmRSS (bytes) over root_pid and its descendants."""
    parents: dict[int, int] = {}
    rss: dict[int, int] = {}
    page = os.sysconf("SC_PAGE_SIZE")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
            parents[int(entry)] = int(fields[1])
            rss[int(entry)] = int(fields[21]) * page
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
    goal = GOALS.get(name)
    verdict = ""
    if goal is not None:
        times, seconds = goal
        met = ratio <= times or (seconds is not None and result["wall"] <= seconds)
        verdict = f"  goal <= {times:g}x" + (f" or <= {seconds:g} s" if seconds else "") + (": met" if met else ": NOT met")
    print(f"{name:<10} {result['wall']:8.2f} s  {ratio:7.1f}x grep ({grep:.2f} s)  peak RSS {result['rss'] / 2**20:7.0f} MiB  rc={result['rc']}{verdict}",
          flush=True)
    for line in result["stages"]:
        print(f"{'':12}{line}")
    if result["rc"] not in (0, 1):
        print(result["stderr"][-3000:])


def _append(path: Path, text: bytes) -> None:
    path.write_bytes(path.read_bytes() + text)
    time.sleep(RACY_WAIT)


def _add_statement(path: Path) -> str:
    """Add a statement at the top of the first function body (every line below it moves, and the
    file's facts change with them), else append one."""
    text = path.read_text(encoding="utf-8")
    body = re.search(r"\)\s*(?:const\s*)?\{\n", text)
    at = body.end() if body is not None else len(text)
    path.write_text(text[:at] + "  (void)sizeof(int);\n" + text[at:], encoding="utf-8")
    time.sleep(RACY_WAIT)
    return f"a statement added at line {text.count(chr(10), 0, at) + 1}"


def _change_literal(path: Path) -> str:
    """Change the last integer literal on the first line that names compute capabilities (a gate's
    `supported_major_versions=[9, 10]` becomes `[9, 12]`), else append a comment line."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    for number, line in enumerate(lines):
        if re.search(r"major_versions|capability|\bsm_?\d", line) and not line.lstrip().startswith("#"):
            found = list(re.finditer(r"(?<![\w.])(\d+)(?![\w.])", line))
            if found:
                match = found[-1]
                value = str(int(match.group(1)) + 2)
                lines[number] = line[: match.start()] + value + line[match.end():]
                path.write_text("".join(lines), encoding="utf-8")
                time.sleep(RACY_WAIT)
                return f"line {number + 1}: {match.group(1)} -> {value}"
    _append(path, b"# bench edit 2\n")
    return "comment appended"


def _same(out: Path, a: str, b: str) -> str:
    first, second = out / f"{a}.sarif", out / f"{b}.sarif"
    if not first.exists() or not second.exists():
        return f"{a} vs {b}: a SARIF is missing"
    return f"{a} SARIF {'identical to' if first.read_bytes() == second.read_bytes() else 'DIFFERS from'} {b} SARIF"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("wheel_dir", type=Path, help="the folder holding the package folder")
    parser.add_argument("--package", default="flashinfer", help="the package folder inside it")
    parser.add_argument("--skip-jobs1", action="store_true", help="leave out the cold --jobs 1 run")
    parser.add_argument("--no-reference", action="store_true", help="leave out the --no-cache --jobs 1 run")
    parser.add_argument("--check-edits", action="store_true",
                        help="compare the edit scans' SARIF with --no-cache --jobs 1 scans of the edited tree")
    parser.add_argument("--eager", action="store_true",
                        help="also run the scan that reads every file in full (ARCHLINT_EAGER=1, --no-cache) and compare its SARIF")
    parser.add_argument("--no-compile", action="store_true", help="do not byte-compile archlint's modules first")
    parser.add_argument("--keep", action="store_true", help="keep the copy, the caches and the reports")
    args = parser.parse_args()
    if not args.no_compile:
        _byte_compile()
    source = args.wheel_dir / args.package
    if not source.is_dir():
        print(f"{source} is not a folder", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="archlint-bench-"))
    try:
        return _run(args, source, work)
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


def _run(args, source: Path, work: Path) -> int:
    tree, out = work / "tree", work / "out"
    out.mkdir()
    shutil.copytree(source, tree / args.package, symlinks=True)
    subprocess.run(["git", "init", "-q", str(tree)], check=True)
    package, env = args.package, dict(os.environ, ARCHLINT_PROFILE="1")
    scan = [sys.executable, "-m", "archlint", "scan"]

    def run(name: str, argv: list[str], cache: str, sarif: str | None = None) -> dict:
        outputs = ["--format", "sarif", "-o", str(out / f"{sarif or name}.sarif")]
        near = timed_grep()  # on a shared machine the load moves: each ratio is to a grep timed just before
        result = measure([*scan, *argv, *outputs], tree, dict(env, ARCHLINT_CACHE_DIR=str(work / cache)))
        report(name, result, near)
        return result

    def timed_grep() -> float:
        return min(measure(["grep", "-rlE", GREP_PATTERN, package], tree, env)["wall"] for _ in range(2))

    print(f"archlint {_commit()}  {time.strftime('%Y-%m-%d %H:%M:%S')}  load {os.getloadavg()[0]:.2f} "
          f"{os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}  cores {os.cpu_count()}  tree {source}")
    measure(["grep", "-rlE", GREP_PATTERN, package], tree, env)  # warm the page cache
    grep = timed_grep()
    print(f"{'grep':<10} {grep:8.2f} s      1.0x grep  (best of 2, timed again before each step)")
    cold = run("cold", [package, "--jobs", "2"], "cache")
    run("warm", [package, "--jobs", "2"], "cache")
    run("root", [".", "--jobs", "2"], "cache")
    cu, py = tree / package / CU_FILE, tree / package / PY_FILE
    cu_bytes, py_bytes = cu.read_bytes(), py.read_bytes()
    _append(cu, b"// bench edit\n")
    run("cu-edit", [package, "--jobs", "2"], "cache")
    if args.check_edits:
        run("cu-edit-ref", [package, "--no-cache", "--jobs", "1"], "none")
    print(f"{'':12}({CU_FILE}: {_add_statement(cu)})")
    run("cu-code", [package, "--jobs", "2"], "cache")
    if args.check_edits:
        run("cu-code-ref", [package, "--no-cache", "--jobs", "1"], "none")
    cu.write_bytes(cu_bytes)
    time.sleep(RACY_WAIT)
    measure([*scan, package, "--jobs", "2"], tree, dict(env, ARCHLINT_CACHE_DIR=str(work / "cache")))  # settle
    _append(py, b"# bench edit\n")
    run("py-edit", [package, "--jobs", "2"], "cache")
    if args.check_edits:
        run("py-edit-ref", [package, "--no-cache", "--jobs", "1"], "none")
    what = _change_literal(py)
    run("hook", [f"{package}/{PY_FILE}", "--jobs", "2"], "cache")
    print(f"{'':12}({PY_FILE}: {what})")
    if args.check_edits:
        run("hook-ref", [f"{package}/{PY_FILE}", "--no-cache", "--jobs", "1"], "none")
    py.write_bytes(py_bytes)
    cold_j1 = None
    if not args.skip_jobs1:
        cold_j1 = run("cold-j1", [package, "--jobs", "1"], "cache-j1")
        print(f"{'':12}--jobs 1 -> --jobs 2 cold speed-up: {cold_j1['wall'] / cold['wall']:.2f}x (goal >= 1.7x)")
        print(f"{'':12}{_parallel_bound(cold_j1, cold)}")
    print(f"{'':12}peak RSS cold: {cold['rss'] / 2**20:.0f} MiB (goal <= 1024 MiB)")
    if not args.no_reference:
        run("reference", [package, "--no-cache", "--jobs", "1"], "none")
        for name in ("cold", "warm", "root", *(("cold-j1",) if cold_j1 else ())):
            print(_same(out, name, "reference"))
    if args.eager:
        near = timed_grep()
        result = measure([*scan, package, "--no-cache", "--format", "sarif", "-o", str(out / "eager.sarif")], tree,
                         dict(env, ARCHLINT_EAGER="1"))
        report("eager", result, near)
        print(_same(out, "cold", "eager"))
    if args.check_edits:
        print(_same(out, "cu-edit", "cu-edit-ref"))
        print(_same(out, "cu-code", "cu-code-ref"))
        print(_same(out, "py-edit", "py-edit-ref"))
        print(_same(out, "hook", "hook-ref"))
    print(f"load at the end {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")
    return 0


# the stages that run in one process whatever --jobs says (engine/timing.py's names)
ONE_PROCESS_STAGES = ("discover", "pylink", "outline", "index", "verdicts", "checks")


def _parallel_bound(cold_j1: dict, cold: dict) -> str:
    """The most --jobs 2 could gain on this tree (Amdahl's law): every other stage twice as fast,
    those that run in one process as they were with one job. Those take the same work in both
    runs, so what they took in each also shows how far the machine's speed drifted between them."""
    alone, alone_j2 = _one_process(cold_j1), _one_process(cold)
    bound = cold_j1["wall"] / (alone + (cold_j1["wall"] - alone) / 2)
    return (f"the one-process stages ({', '.join(ONE_PROCESS_STAGES)}) took {alone:.1f} s of cold-j1's "
            f"{cold_j1['wall']:.1f} s ({alone_j2:.1f} s in cold): with the rest twice as fast, --jobs 2 "
            f"would gain at most {bound:.2f}x")


def _one_process(run: dict) -> float:
    times = {match.group(1): float(match.group(2)) for line in run["stages"]
             if (match := re.match(r"(\S+(?: \S+)?)\s+([\d.]+) s", line))}
    return sum(times.get(name, 0.0) for name in ONE_PROCESS_STAGES)


def _commit() -> str:
    try:
        done = subprocess.run(["git", "-C", str(Path(__file__).resolve().parent), "describe", "--always", "--dirty"],
                              capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return "(unknown commit)"
    return done.stdout.strip()


if __name__ == "__main__":
    raise SystemExit(main())
