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

Usage (see docs/accuracy.md):

    python bench/accuracy.py --wheel /tmp/wheels/fi-0.7.2.post1 --tvm-ffi /tmp/tvmffi/x/tvm_ffi \
        --workdir /tmp/acc --budget-minutes 20

The compiler's answer for a pair is the worst over the pair's units: an arch error in any unit
makes the pair `arch-error`; otherwise any inconclusive unit makes it `inconclusive`; otherwise
a unit with kernels that are empty (or only trap) on the target but not on an admitted target
makes it `built-empty`; otherwise `built`.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from acc_compile import (aggregate, classify, execute, import_records, plan, probe_options,  # noqa: E402,F401
                         _cached, pair_flags, pair_includes)
from acc_generated import generated_units  # noqa: E402
from acc_projects import FLASHINFER, SGLANG, Project, flashinfer_includes, project_of, sglang_includes, sglang_unit  # noqa: E402

VERDICTS = ("POLICY", "GENUINE", "EMPTY", "UNKNOWN")
COMPILER = ("built", "arch-error", "built-empty", "inconclusive", "not-run")
# The compiler outcome that proves each verdict right.
EXPECTED = {"POLICY": "built", "GENUINE": "arch-error", "EMPTY": "built-empty"}
DEFAULT_TARGETS = ("sm_80", "sm_89", "sm_100a", "sm_103a", "sm_110a", "sm_120a", "sm_121a")
# Targets scanned alongside, so that gates admitting them are read with their suffixes.
SCAN_EXTRA_TARGETS = ("sm_90a",)
SCAN_FOLDERS = FLASHINFER.scan_folders
JIT_DEFINES = FLASHINFER.defines
# Defines a spec computes from its arguments (f-strings archlint cannot read): one representative
# instance per parameterised unit, from the spec's own code (flashinfer/jit/xqa.py gen_xqa_module_mla,
# DeepSeek MLA: head_dim 576, fp8 KV cache, page size 64, 128 query heads per KV head).
INSTANCE_DEFINES = {
    "csrc/xqa/mla_sm120.cu": ("NDEBUG=1", "BEAM_WIDTH=1", "USE_INPUT_KV=0", "USE_CUSTOM_BARRIER=1",
                              "TOKENS_PER_PAGE=64", "HEAD_ELEMS=576", "CACHE_ELEM_ENUM=2", "HEAD_GRP_SIZE=128",
                              "SLIDING_WINDOW=0", "MLA_WRAPPER=1"),
    # sglang/kernels/kda_kernels/ltx2_qknorm_split_rope_jit.py passes it for its sm_90 source
    "kda_kernels/csrc/diffusion/ltx2_qknorm_split_rope_sm90.cuh": ("KDA_SPLIT_THRESHOLD=1000000000",),
}
JIT_FLAGS = FLASHINFER.flags


# ---------------------------------------------------------------- data


@dataclass(frozen=True)
class Pair:
    """One (gate, excluded target) verdict and what the compiler said about it."""

    release: str
    gate_id: str
    gate_text: str
    target: str  # the build archlint judged (`sm_120a`)
    verdict: str
    reason: str
    evidence: tuple[str, ...] = ()
    units: tuple[str, ...] = ()  # absolute paths of the guarded translation units
    defines: tuple[str, ...] = ()
    references: tuple[str, ...] = ()  # admitted builds, to tell arch-dependent empty kernels from plain ones
    compiler: str = "not-run"
    compiler_detail: str = ""
    unit_outcomes: tuple[tuple[str, str, str], ...] = ()  # (unit, outcome, message)
    project: str = "flashinfer"
    uninstantiated: tuple[str, ...] = ()  # header units built with no template instance: no kernel to judge

    @property
    def key(self) -> str:
        return f"{self.release}:{self.gate_id}:{self.target}"


@dataclass
class Metrics:
    matrix: dict = field(default_factory=dict)  # verdict -> compiler -> count
    agree: int = 0
    disagree: int = 0
    inconclusive: int = 0
    judged: int = 0  # pairs with a conclusive compiler answer and a POLICY/GENUINE/EMPTY verdict
    policy_precision: float | None = None
    policy_recall: float | None = None
    accuracy: float | None = None
    inconclusive_rate: float | None = None


def is_agreement(verdict: str, compiler: str) -> bool | None:
    """True/False when the pair counts; None when it does not (UNKNOWN, inconclusive, not run)."""
    if verdict not in EXPECTED or compiler in ("inconclusive", "not-run"):
        return None
    return EXPECTED[verdict] == compiler


def metrics(pairs: list[Pair]) -> Metrics:
    out = Metrics(matrix={v: {c: 0 for c in COMPILER} for v in VERDICTS})
    run = [p for p in pairs if p.compiler != "not-run"]
    for pair in pairs:
        out.matrix.setdefault(pair.verdict, {c: 0 for c in COMPILER})[pair.compiler] += 1
        verdict_ok = is_agreement(pair.verdict, pair.compiler)
        if verdict_ok is True:
            out.agree += 1
        elif verdict_ok is False:
            out.disagree += 1
    out.inconclusive = sum(1 for p in run if p.compiler == "inconclusive")
    out.judged = out.agree + out.disagree
    conclusive = [p for p in run if p.compiler != "inconclusive"]
    said_policy = [p for p in conclusive if p.verdict == "POLICY"]
    builds = [p for p in conclusive if p.compiler == "built"]
    if said_policy:
        out.policy_precision = sum(p.compiler == "built" for p in said_policy) / len(said_policy)
    if builds:
        out.policy_recall = sum(p.verdict == "POLICY" for p in builds) / len(builds)
    if out.judged:
        out.accuracy = out.agree / out.judged
    if run:
        out.inconclusive_rate = out.inconclusive / len(run)
    return out


def disagreements(pairs: list[Pair]) -> list[Pair]:
    return [p for p in pairs if is_agreement(p.verdict, p.compiler) is False]


# ---------------------------------------------------------------- reading the scan


def load_pairs(scan: dict, release: str, targets: tuple[str, ...], units: dict, root: str,
               project: Project = FLASHINFER, workdir: Path | None = None) -> list[Pair]:
    """Every (gate, excluded target) verdict of a scan report for the wanted targets."""
    wanted = set(targets)
    pairs = []
    for gate in scan.get("gates", []):
        info = units.get(gate["id"], {})
        for verdict in gate.get("verdicts", []):
            if verdict["target"] not in wanted and _plain(verdict["target"]) not in {_plain(t) for t in wanted}:
                continue
            evidence = tuple(f"{e['path']}:{e['line']}: {e['message']}" for e in verdict.get("evidence", []))
            sources = tuple(info.get("sources", ()))
            defines = tuple(info.get("defines", ()))
            for suffix, extra in INSTANCE_DEFINES.items():
                if any(u.endswith(suffix) for u in sources):
                    defines = tuple(dict.fromkeys(defines + extra))
            paths = tuple(os.path.join(root, u) for u in sources)
            bare: tuple[str, ...] = ()
            generated = (generated_units(Path(root), gate["id"], gate["text"], workdir)
                         if project is FLASHINFER and workdir is not None else None)
            if generated is not None:
                paths = generated
            if project is SGLANG and workdir is not None:
                built = [sglang_unit(path, workdir) for path in paths]
                paths, bare = tuple(b[0] for b in built), tuple(b[0] for b in built if not b[1])
            pairs.append(Pair(
                release=release, gate_id=gate["id"], gate_text=gate["text"], target=verdict["target"],
                verdict=verdict["verdict"], reason=verdict["reason"], evidence=evidence, units=paths,
                defines=defines,
                references=tuple(info.get("references", ())), project=project.name, uninstantiated=bare,
            ))
    return pairs


def _arch_specific(target: str) -> str:
    """FlashInfer builds its admitted 9.x-12.x targets arch-specific (`sm_100a`)."""
    if target[-1].isdigit() and int(target[3:]) >= 90:
        return target + "a"
    return target


def _plain(target: str) -> str:
    return target.rstrip("af")


def gate_units(paths: list[str], targets: tuple[str, ...], sources_kinds=(".cu", ".cpp", ".cc")) -> tuple[str, dict]:
    """{gate id: {sources, defines, reference}} from archlint's own reading of the Python side."""
    from archlint.knowledge.arch import parse_target
    from archlint.discover import discover
    from archlint.extract.files import extract_all
    from archlint.link.python import link_python
    from archlint.judge.verdicts import guarded_units

    found = discover(tuple(paths))
    python_files = [f for f in found.files if f.language == "python"]
    facts = extract_all(python_files, 1, 4 * 1024 * 1024, None)
    pyindex = link_python([f.python for f in facts if f.python is not None], [found.root],
                          {f.path for f in found.files})
    parsed = tuple(parse_target(t) for t in targets)
    out = {}
    for gate in pyindex.gates:
        gate_id = f"{gate.path}:{gate.line}:{gate.col}"
        units = guarded_units(pyindex, gate)
        admitted = sorted(t.cc for t in parsed if t.cc in set(gate.admits))
        out[gate_id] = {
            "sources": [s for s in units.sources if s.endswith(sources_kinds)],
            "defines": [d[2:] if d.startswith("-D") else d for d in getattr(gate, "defines", ())],
            "references": [_arch_specific(f"sm_{cc}") for cc in admitted],
        }
    return found.root, out


# ---------------------------------------------------------------- sampling


def unit_cost(path: str, cache: dict) -> int:
    """A cheap proxy for compile time: bytes of the unit plus its local includes, one level deep."""
    if path in cache:
        return cache[path]
    cost = 0
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
        cost = len(text)
        cost += 20000 * text.count("cutlass") + 200000 * text.count("#include \"cutlass") + 200000 * text.count("#include <cutlass")
    except OSError:
        cost = 10 ** 9
    cache[path] = cost
    return cost


def sample(pairs: list[Pair], size: int, seed: int = 0, max_units: int = 3, max_cost: int = 5_000_000) -> list[Pair]:
    """A stratified sample: round-robin over (verdict, target) strata, cheapest pairs first,
    so every verdict kind and target is represented; a (unit, target) build shared with an
    already chosen pair costs nothing and is preferred."""
    rng = random.Random(seed)
    costs: dict[str, int] = {}
    usable = [p for p in pairs if p.units and len(p.units) <= max_units]
    strata: dict[tuple[str, str], list[Pair]] = defaultdict(list)
    for pair in usable:
        strata[(pair.verdict, _plain(pair.target))].append(pair)
    for members in strata.values():
        rng.shuffle(members)
        members.sort(key=lambda p: sum(unit_cost(u, costs) for u in p.units))
    chosen: list[Pair] = []
    builds: set[tuple[str, str]] = set()
    order = sorted(strata, key=lambda k: (VERDICTS.index(k[0]) if k[0] in VERDICTS else 9, k[1]))
    # Rarer verdicts first in each round so that they are always in.
    order.sort(key=lambda k: sum(len(v) for (vk, _), v in strata.items() if vk == k[0]))
    while len(chosen) < size and any(strata[k] for k in order):
        for key in order:
            members = strata[key]
            if not members or len(chosen) >= size:
                continue
            # prefer a pair whose builds are already planned
            best = min(range(len(members)), key=lambda i: (
                sum(unit_cost(u, costs) for u in members[i].units if (u, members[i].target) not in builds), i))
            pair = members.pop(best)
            if sum(unit_cost(u, costs) for u in pair.units) > max_cost:
                continue
            chosen.append(pair)
            builds.update((u, pair.target) for u in pair.units)
    return chosen


# ---------------------------------------------------------------- report


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def render(pairs: list[Pair], population: Counter | None = None) -> str:
    m = metrics(pairs)
    lines = []
    if population:
        lines.append("Population (every (gate, excluded target) verdict for the targets asked): "
                     + ", ".join(f"{k} {population[k]}" for k in VERDICTS if population[k]))
    ran = [p for p in pairs if p.compiler != "not-run"]
    lines.append(f"Sample: {len(pairs)} pairs, {len(ran)} compiled")
    lines.append("")
    header = f"{'archlint/nvcc':<16}" + "".join(f"{c:>14}" for c in COMPILER)
    lines.append(header)
    for verdict in VERDICTS:
        row = m.matrix.get(verdict, {})
        lines.append(f"{verdict:<16}" + "".join(f"{row.get(c, 0):>14}" for c in COMPILER))
    lines.append("")
    lines.append(f"verdicts checked (POLICY/GENUINE/EMPTY with a conclusive compile): {m.judged}; "
                 f"right {m.agree}, wrong {m.disagree}; accuracy {_fmt(m.accuracy)}")
    lines.append(f"POLICY precision {_fmt(m.policy_precision)} (POLICY verdicts whose units built), "
                 f"POLICY recall {_fmt(m.policy_recall)} (units that built and archlint called POLICY)")
    lines.append(f"inconclusive compiles: {m.inconclusive} of {len(ran)} ({_fmt(m.inconclusive_rate)})")
    wrong = disagreements(pairs)
    if wrong:
        lines.append("")
        lines.append("Disagreements:")
        for pair in wrong:
            lines.append(f"- [{pair.release}] {pair.gate_id} `{pair.gate_text}` on {pair.target}: "
                         f"archlint {pair.verdict}, nvcc {pair.compiler}")
            lines.append(f"    archlint: {pair.reason}")
            for hop in pair.evidence:
                lines.append(f"      {hop}")
            for unit, outcome, message in pair.unit_outcomes:
                lines.append(f"    nvcc {os.path.basename(unit)}: {outcome}: {message}")
    unknown = [p for p in pairs if p.verdict == "UNKNOWN" and p.compiler not in ("not-run", "inconclusive")]
    if unknown:
        lines.append("")
        lines.append("UNKNOWN verdicts the compiler settled:")
        for pair in unknown:
            lines.append(f"- [{pair.release}] {pair.gate_id} on {pair.target}: nvcc {pair.compiler}; archlint: {pair.reason[:200]}")
    inconclusive = [p for p in pairs if p.compiler == "inconclusive"]
    if inconclusive:
        lines.append("")
        lines.append("Inconclusive (not counted):")
        for pair in inconclusive:
            why = next((m for _, o, m in pair.unit_outcomes if o == "inconclusive"), "")
            lines.append(f"- [{pair.release}] {pair.gate_id} on {pair.target} ({pair.verdict}): {why[:220]}")
    return "\n".join(lines)


# ---------------------------------------------------------------- main


def scan_release(wheel: Path, json_path: Path, targets: tuple[str, ...], rescan: bool, log=print,
                 folders: tuple[str, ...] = SCAN_FOLDERS) -> dict:
    if json_path.is_file() and not rescan:
        log(f"reusing {json_path}")
        return json.loads(json_path.read_text(encoding="utf-8"))
    paths = [str(wheel / folder) for folder in folders]
    command = [sys.executable, "-m", "archlint", "scan", *paths, "--format", "json", "--fail-on", "none",
               "-o", str(json_path)]
    for target in dict.fromkeys(targets + SCAN_EXTRA_TARGETS):
        command += ["--target", target]
    log("scanning: " + " ".join(command))
    started = time.monotonic()
    subprocess.run(command, check=True, cwd=str(HERE.parent))
    log(f"scan took {time.monotonic() - started:.0f} s")
    return json.loads(json_path.read_text(encoding="utf-8"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wheel", action="append", default=[],
                        help="extracted wheel folder holding flashinfer/ or sglang/ (repeatable); its name is the "
                             "release label")
    parser.add_argument("--flashinfer-deps", type=Path,
                        help="extracted FlashInfer wheel whose headers SGLang's JIT dependencies (cutlass) come from")
    parser.add_argument("--tvm-ffi", type=Path, help="folder of the apache-tvm-ffi package (its include/ is used)")
    parser.add_argument("--nvshmem", type=Path,
                        help="folder of the nvidia-nvshmem package (nvidia/nvshmem; its include/ is used)")
    parser.add_argument("--headers", action="append", default=[], metavar="NAME=FOLDER",
                        help="include folder of a PyPI package some specs add (cublas, torch, torch-api, nccl; "
                             "see acc_compile.SPEC_ADDITIONS), repeatable")
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
        scan = scan_release(wheel, args.workdir / f"scan-{release}.json", targets, args.rescan,
                            folders=project.scan_folders)
        kinds = (".cu", ".cpp", ".cc", ".cuh") if project is SGLANG else (".cu", ".cpp", ".cc")
        root, units = gate_units([str(wheel / f) for f in project.scan_folders], targets + SCAN_EXTRA_TARGETS, kinds)
        pairs = load_pairs(scan, release, targets, units, root, project, args.workdir)
        includes_by_release[release] = (sglang_includes(wheel, args.tvm_ffi, args.flashinfer_deps) if project is SGLANG
                                        else flashinfer_includes(wheel, args.tvm_ffi, args.nvshmem))
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
        jobs = [job for job in jobs if not _cached(job, args.timeout, args.cache_dir)]
        args.export_jobs.write_text(json.dumps(jobs, indent=1, sort_keys=True), encoding="utf-8")
        print(f"{len(jobs)} builds written to {args.export_jobs}")
        return 0
    if args.records:
        stored = import_records(json.loads(args.records.read_text(encoding="utf-8")), args.timeout, args.cache_dir)
        print(f"imported {stored} builds from {args.records}")
    if not args.no_compile:
        execute(jobs, budget, args.jobs, args.timeout, args.cache_dir)
    checked = classify(chosen, includes_by_release, args.timeout, args.cache_dir, packages)
    report = render(checked, population)
    print()
    print(report)
    (args.workdir / "results.json").write_text(
        json.dumps([asdict(p) for p in checked], indent=1, sort_keys=True), encoding="utf-8")
    (args.workdir / "report.txt").write_text(report + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
