"""Measure archlint's gate verdicts against the compiler.

For a FlashInfer wheel (or any tree whose JIT builds CUDA sources behind Python gates), this:

1. scans the tree with `archlint scan ... --format json` (the JSON is kept on disk and reused),
2. takes every (gate, excluded target) verdict for the targets asked for,
3. picks a stratified sample (every verdict kind represented, cheap translation units first),
4. builds every guarded translation unit of each sampled pair with `nvcc -cubin -arch=<target>`
   through `archlint.runtime.compile_probe` (cached on disk), with the include folders and the
   defines the project's JIT would pass,
5. prints a confusion matrix (archlint verdict x compiler outcome), POLICY precision and recall,
   and every disagreement with archlint's evidence chain and the compiler's first error line.

Usage, from the repository root (see docs/accuracy.md):

    python -m bench.accuracy --wheel /tmp/wheels/fi-0.7.2.post1 --tvm-ffi /tmp/tvmffi/x/tvm_ffi \
        --workdir /tmp/acc --budget-minutes 20

The compiler's answer for a pair is the worst over the pair's units: an arch error in any unit
makes the pair `arch-error`; otherwise any inconclusive unit makes it `inconclusive`; otherwise
a unit with kernels that are empty (or only trap) on the target but not on an admitted target
makes it `built-empty`; otherwise `built`.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections import Counter
from dataclasses import asdict
from pathlib import Path

from .builds import classify, execute, import_records, is_cached, plan
from .pairs import Pair, build_list_units, gate_units, load_pairs, sample
from .projects import (
    FLASHINFER,
    SGLANG,
    VLLM,
    flashinfer_includes,
    project_of,
    sglang_includes,
    vllm_includes,
)
from .scoring import decisive_shares, render

REPO = Path(__file__).resolve().parents[2]
DEFAULT_TARGETS = ("sm_80", "sm_89", "sm_100a", "sm_103a", "sm_110a", "sm_120a", "sm_121a")
# Targets scanned alongside, so that gates admitting them are read with their suffixes.
SCAN_EXTRA_TARGETS = ("sm_90a",)


def _dependency_folders(flashinfer_wheel: Path) -> tuple[str, ...]:
    """The FlashInfer header folders an SGLang JIT build includes (its registered dependencies, whose
    `cutlass` is CUTLASS's include and tools/util/include folders)."""
    data = flashinfer_wheel.resolve() / "flashinfer" / "data"
    folders = ("include", "cutlass/include", "cutlass/tools/util/include", "csrc/nv_internal")
    return tuple(str(data / folder) for folder in folders if (data / folder).is_dir())


def scan_release(wheel: Path, json_path: Path, targets: tuple[str, ...], rescan: bool, log=print,
                 folders: tuple[str, ...] = FLASHINFER.scan_folders, extra: tuple[str, ...] = ()) -> dict:
    if json_path.is_file() and not rescan:
        log(f"reusing {json_path}")
        return json.loads(json_path.read_text(encoding="utf-8"))
    paths = [str(wheel / folder) for folder in folders] + list(extra)
    command = [sys.executable, "-m", "archlint", "scan", *paths, "--format", "json", "--fail-on", "none",
               "-o", str(json_path)]
    for target in dict.fromkeys(targets + SCAN_EXTRA_TARGETS):
        command += ["--target", target]
    log("scanning: " + " ".join(command))
    started = time.monotonic()
    subprocess.run(command, check=True, cwd=str(REPO))
    log(f"scan took {time.monotonic() - started:.0f} s")
    return json.loads(json_path.read_text(encoding="utf-8"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.accuracy", description=__doc__.split("\n\n")[0])
    parser.add_argument("--wheel", action="append", default=[],
                        help="extracted wheel folder holding flashinfer/ or sglang/ (repeatable); its name is the "
                             "release label")
    parser.add_argument("--flashinfer-deps", type=Path,
                        help="extracted FlashInfer wheel whose headers SGLang's JIT dependencies (cutlass) come from")
    parser.add_argument("--cutlass", type=Path,
                        help="for a CMake project (vLLM): CUTLASS's source folder at the revision it pins")
    parser.add_argument("--tvm-ffi", type=Path, help="folder of the apache-tvm-ffi package (its include/ is used)")
    parser.add_argument("--nvshmem", type=Path,
                        help="folder of the nvidia-nvshmem package (nvidia/nvshmem; its include/ is used)")
    parser.add_argument("--headers", action="append", default=[], metavar="NAME=FOLDER",
                        help="include folder of a PyPI package some specs add (cublas, torch, torch-api, nccl; "
                             "see bench/accuracy/builds.py SPEC_ADDITIONS), repeatable")
    parser.add_argument("--target", action="append", help=f"targets (default: {' '.join(DEFAULT_TARGETS)})")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/archlint-accuracy"),
                        help="scan JSON, the sample, the results and the report go here")
    parser.add_argument("--rescan", action="store_true", help="scan again even if the scan JSON is on disk")
    parser.add_argument("--sample", type=int, default=60, help="pairs to check with the compiler")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--budget-minutes", type=float, default=30.0, help="start no compile after this")
    parser.add_argument("--jobs", type=int, default=2, help="parallel compiles")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per compile")
    parser.add_argument("--max-units", type=int, default=3, help="leave out gates with more translation units")
    parser.add_argument("--cache-dir", help="compile cache (default: archlint's)")
    parser.add_argument("--only", action="append", default=[], help="only pairs whose key contains this (repeatable)")
    parser.add_argument("--no-compile", action="store_true", help="report from the compile cache only")
    parser.add_argument("--export-jobs", type=Path, help="write the builds the sample needs to this file and stop")
    parser.add_argument("--run-jobs", type=Path, help="build the jobs in this file (from --export-jobs) and stop")
    parser.add_argument("--records", type=Path, help="with --run-jobs: write the builds here; else: import them")
    args = parser.parse_args(argv)
    budget = args.budget_minutes * 60

    if args.run_jobs:  # a build machine: no scan, only nvcc
        jobs = json.loads(args.run_jobs.read_text(encoding="utf-8"))
        out = args.records or args.run_jobs.with_suffix(".records.json")

        def save(records: list[dict]) -> None:  # after every build, so a run cut short keeps what it did
            out.write_text(json.dumps(records, indent=1, sort_keys=True), encoding="utf-8")

        records = execute(jobs, budget, args.jobs, args.timeout, args.cache_dir, on_record=save)
        save(records)
        print(f"{len(records)} builds written to {out}")
        return 0
    if not args.wheel:
        parser.error("--wheel is required")

    targets = tuple(args.target or DEFAULT_TARGETS)
    args.workdir.mkdir(parents=True, exist_ok=True)
    all_pairs: list[Pair] = []
    includes_by_release: dict[str, tuple[str, ...]] = {}
    for wheel_arg in args.wheel:
        wheel = Path(wheel_arg).resolve()
        release = wheel.name
        project = project_of(wheel)
        # SGLang's JIT compiles against FlashInfer's headers (CuTe, TensorRT-LLM's): scanned with them.
        deps = _dependency_folders(args.flashinfer_deps) if project is SGLANG and args.flashinfer_deps else ()
        scan = scan_release(wheel, args.workdir / f"scan-{release}.json", targets, args.rescan,
                            folders=project.scan_folders, extra=deps)
        packages = dict(item.split("=", 1) for item in args.headers)
        if project is VLLM:
            root, units = str(wheel), build_list_units(scan, str(wheel))
            torch = Path(packages["torch"]) if "torch" in packages else None
            libraries = Path(packages["cuda-libraries"]) if "cuda-libraries" in packages else None
            includes_by_release[release] = vllm_includes(wheel, args.cutlass, torch, libraries)
        else:
            kinds = (".cu", ".cpp", ".cc", ".cuh") if project is SGLANG else (".cu", ".cpp", ".cc")
            root, units = gate_units([str(wheel / f) for f in project.scan_folders] + list(deps),
                                     targets + SCAN_EXTRA_TARGETS, kinds)
            includes_by_release[release] = (sglang_includes(wheel, args.tvm_ffi, args.flashinfer_deps)
                                            if project is SGLANG
                                            else flashinfer_includes(wheel, args.tvm_ffi, args.nvshmem))
        pairs = load_pairs(scan, release, targets, units, root, project, args.workdir)
        print(f"{release}: {len(scan.get('gates', []))} gates, {len(pairs)} (gate, target) verdicts: "
              + ", ".join(f"{k} {v}" for k, v in sorted(Counter(p.verdict for p in pairs).items())))
        all_pairs += pairs
    population = Counter(p.verdict for p in all_pairs)
    if args.only:
        chosen = [p for p in all_pairs if any(o in p.key for o in args.only)]
    else:
        chosen = sample(all_pairs, args.sample, args.seed, args.max_units)
    print(f"sample: {len(chosen)} pairs: " + ", ".join(f"{k} {v}" for k, v in sorted(Counter(p.verdict for p in chosen).items())))
    packages = dict(item.split("=", 1) for item in args.headers)
    jobs = plan(chosen, includes_by_release, packages)
    if args.export_jobs:
        jobs = [job for job in jobs if not is_cached(job, args.timeout, args.cache_dir)]
        args.export_jobs.write_text(json.dumps(jobs, indent=1, sort_keys=True), encoding="utf-8")
        print(f"{len(jobs)} builds written to {args.export_jobs}")
        return 0
    if args.records:
        stored = import_records(json.loads(args.records.read_text(encoding="utf-8")), args.timeout, args.cache_dir)
        print(f"imported {stored} builds from {args.records}")
    if not args.no_compile:
        execute(jobs, budget, args.jobs, args.timeout, args.cache_dir)
    checked = classify(chosen, includes_by_release, args.timeout, args.cache_dir, packages)
    report = "Decisive share (POLICY, GENUINE or EMPTY) per target:\n" + decisive_shares(all_pairs) + "\n\n" \
        + render(checked, population)
    print()
    print(report)
    (args.workdir / "results.json").write_text(
        json.dumps([asdict(p) for p in checked], indent=1, sort_keys=True), encoding="utf-8")
    (args.workdir / "report.txt").write_text(report + "\n", encoding="utf-8")
    return 0




if __name__ == "__main__":
    sys.exit(main())
