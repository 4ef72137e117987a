"""The compiler's side: the builds a sample needs, running them through `archlint.runtime.compile_probe`
(cached on disk), and reading each pair's answer from the cache."""

from __future__ import annotations

import os
import time
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import asdict, replace
from pathlib import Path

from .projects import PROJECTS, arch_defines


def aggregate(outcomes: list[str]) -> str:
    """One compiler answer for a pair from its units' answers: the worst wins
    (arch-error > inconclusive > built-empty/built-trap > built)."""
    if not outcomes:
        return "inconclusive"
    if "arch-error" in outcomes:
        return "arch-error"
    if "inconclusive" in outcomes:
        return "inconclusive"
    if any(o in ("built-empty", "built-trap") for o in outcomes):
        return "built-empty"
    return "built"


# What the FlashInfer specs that build certain units add (extra_include_paths, -I and other nvcc
# flags): (text in the unit's path or its #include lines, folders under data/csrc or "package:<name>"
# for the include folder of a package from PyPI, given with --headers <name>=<folder>, flags).
SPEC_ADDITIONS = (
    # jit/comm.py, fp4_quantization.py, moe_utils.py, gemm/fp8_blockscale.py: TensorRT-LLM-derived sources
    ("tensorrt_llm/", ("nv_internal", "nv_internal/include", "nv_internal/tensorrt_llm/cutlass_extensions/include"), ()),
    # jit/comm.py _dcp_alltoall_include_paths (cake_dcp_alltoall.py's spec too): the dispatch header
    # includes tensorrt_llm/kernels/helixAllToAll.h
    ("cake_dcp_alltoall", ("nv_internal", "nv_internal/include"), ()),
    # jit/attention/modules.py, the fmha_v2 specs: -I csrc/fmha_v2; its utilities include <cublasLt.h>,
    # which the JIT finds in the CUDA toolkit and the bench in the nvidia-cublas wheel
    ("fused_multihead_attention", ("fmha_v2", "package:cublas"), ()),
    ("fmha_v2", ("fmha_v2", "package:cublas"), ()),
    # jit/comm.py gen_mixed_comm_module: nvidia.nvshmem's include folder (--nvshmem) and -rdc=true
    ("nvshmem", (), ("-rdc=true",)),
    # jit/gemm/fp8_blockscale.py, jit/fused_moe.py: `-DENABLE_FP8_BLOCK_SCALE if is_cuda_version_at_least("12.8")`,
    # true for the nvcc 13 these builds use; the only file that reads it is this unit, which includes <cublasLt.h>
    ("fp8_blockscale_gemm.cu", ("package:cublas",), ("-DENABLE_FP8_BLOCK_SCALE",)),
    # jit/comm.py gen_dcp_lse_reduce_module: torch.utils.cpp_extension.include_paths(device_type="cuda") and
    # the nvidia-nccl wheel's include folder (NCCL's device API)
    ("dcp_lse_reduce", ("package:torch", "package:torch-api", "package:nccl"), ()),
    # jit/mamba/selective_state_update.py, the SM90/SM100 variants: their host launcher
    # (kernel_selective_state_update_stp.cuh, `{1, DSTATE, DSTATE * DIM, params.state_stride_batch}`)
    # narrows an int64_t in a braced list, which nvcc 13.0 rejects (EDG diagnostic 2361) on every
    # target, admitted ones included; made a warning so that the device code is what is measured
    ("selective_state_update", (), ("-Xcudafe", "--diag_warning=2361")),
)


def pair_includes(pair, includes_by_release: dict[str, tuple[str, ...]],
                  packages: dict[str, str] | None = None) -> tuple[str, ...]:
    """The release's include folders, plus those the spec adds for the pair's units, plus the folder of
    generated units (the specs that generate sources pass it with -I)."""
    base = includes_by_release[pair.release]
    csrc = next((d for d in base if d.endswith("/data/csrc")), None)
    if csrc is None:
        return base
    extra = [_addition_folder(folder, csrc, packages or {})
             for marker, folders, _ in _additions(pair.units) for folder in folders]
    extra += [str(Path(unit).parent) for unit in pair.units if "/generated/" in unit]
    return base + tuple(d for d in dict.fromkeys(extra) if d and d not in base and Path(d).is_dir())


def _addition_folder(folder: str, csrc: str, packages: dict[str, str]) -> str:
    if folder.startswith("package:"):
        return packages.get(folder.split(":", 1)[1], "")
    return str(Path(csrc) / folder)


def pair_flags(pair) -> tuple[str, ...]:
    return tuple(dict.fromkeys(flag for _, _, flags in _additions(pair.units) for flag in flags))


def _additions(units) -> list[tuple]:
    texts = [(unit, _include_lines(unit)) for unit in units]
    return [addition for addition in SPEC_ADDITIONS
            if any(addition[0] in unit or addition[0] in text for unit, text in texts)]


def _include_lines(unit: str) -> str:
    try:
        text = Path(unit).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(line for line in text.splitlines() if line.lstrip().startswith("#include"))


def probe_options(includes: tuple[str, ...], defines: tuple[str, ...], timeout_s: float, cache_dir: str | None,
                  project: str = "flashinfer", target: str = "", flags: tuple[str, ...] = ()):
    """The compile options of one build; a project's arch macro follows the build's own target."""
    from archlint.runtime.compile_probe import ProbeOptions

    spec = PROJECTS[project]
    every = spec.defines + defines + arch_defines(spec, target)
    return ProbeOptions(include_dirs=includes, defines=tuple(dict.fromkeys(every)), std=spec.std,
                        timeout_s=timeout_s, extra_flags=spec.flags + tuple(flags), cache_dir=cache_dir, jobs=1)


def plan(pairs: list, includes_by_release: dict[str, tuple[str, ...]], packages: dict[str, str] | None = None) -> list[dict]:
    """The builds the pairs need, each once: unit, target, defines, include folders, reference build."""
    jobs: dict[tuple, dict] = {}
    for pair in pairs:
        includes, flags = pair_includes(pair, includes_by_release, packages), pair_flags(pair)
        for unit in pair.units:
            # a generated unit can be the same file for two releases, built against each one's headers
            key = (unit, pair.target, pair.defines, includes, flags)
            job = jobs.setdefault(key, {"unit": unit, "target": pair.target, "defines": list(pair.defines),
                                        "includes": list(includes), "flags": list(flags),
                                        "references": [], "project": pair.project})
            for ref in pair.references:
                if ref not in job["references"]:
                    job["references"].append(ref)
    return list(jobs.values())


def execute(jobs: list[dict], budget_s: float, workers: int, timeout_s: float, cache_dir: str | None,
            log=print, on_record=None) -> list[dict]:
    """Build every job (then its reference builds where kernels came out empty), `workers` at a time,
    starting none after the budget. Returns one record per build done: job fields + result + deps."""
    from archlint.runtime.compile_probe import probe_unit

    started = time.monotonic()
    records: list[dict] = []

    def one(unit: str, target: str, job: dict) -> dict:
        project = job.get("project", "flashinfer")
        options = probe_options(tuple(job["includes"]), tuple(job["defines"]), timeout_s, cache_dir, project, target,
                                tuple(job.get("flags", ())))
        result = probe_unit(unit, target, options)
        return {"unit": unit, "target": target, "defines": job["defines"], "includes": job["includes"],
                "flags": job.get("flags", []), "project": project, "result": asdict(result)}

    queue = [(job["unit"], job["target"], job) for job in jobs]
    queued = {(unit, target, tuple(job["defines"]), tuple(job["includes"])) for unit, target, job in queue}
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        pending: dict[Future[dict], dict] = {}
        while queue or pending:
            while queue and len(pending) < workers and time.monotonic() - started < budget_s:
                unit, target, job = queue.pop(0)
                pending[pool.submit(one, unit, target, job)] = job
            if not pending:
                break
            done = next(as_completed(pending))
            job = pending.pop(done)
            record = done.result()
            records.append(record)
            if on_record is not None:
                on_record(records)
            result = record["result"]
            log(f"  [{len(records)}] {os.path.basename(record['unit'])} {record['target']}: {result['outcome']}"
                f" ({result['seconds']:.0f} s{', cached' if result['cached'] else ''}) {result['message'][:160]}")
            unexplained = result["outcome"] == "inconclusive" and "not tied to the target" in result["message"]
            traps = result["outcome"] == "built" and any(count for _, count in result.get("trap_sites") or ())
            if (result["outcome"] in ("built-empty", "built-trap") or unexplained or traps) and record["target"] == job["target"]:
                for ref in job["references"]:
                    key = (job["unit"], ref, tuple(job["defines"]), tuple(job["includes"]))
                    if key not in queued:
                        queued.add(key)
                        queue.insert(0, (job["unit"], ref, job))
    return records


def is_cached(job: dict, timeout_s: float, cache_dir: str | None) -> bool:
    """Whether this machine's compile cache already answers the job (its target build)."""
    from archlint.runtime.compile_probe import (
        cache_key,
        cache_load,
        default_cache_dir,
        find_nvcc,
    )

    nvcc, unit = find_nvcc(), Path(job["unit"]).resolve()
    if nvcc is None or not unit.is_file():
        return False
    options = probe_options(tuple(job["includes"]), tuple(job["defines"]), timeout_s, cache_dir,
                            job.get("project", "flashinfer"), job["target"], tuple(job.get("flags", ())))
    directory = Path(cache_dir) if cache_dir else default_cache_dir()
    result = cache_load(directory, cache_key(unit, job["target"], options, nvcc))
    if result is None or result.outcome not in ("built", "arch-error"):
        return False
    return result.outcome == "arch-error" or not _needs_references(result)


def _needs_references(result) -> bool:
    """A build that says nothing until compared with an admitted target's: trap sites never counted,
    or kernels with a body that also trap."""
    return result.trap_sites is None or any(count for _, count in result.trap_sites)


def import_records(records: list[dict], timeout_s: float, cache_dir: str | None) -> int:
    """Store builds done elsewhere (same paths, same nvcc release) in this machine's compile cache; none
    without an nvcc here, whose release is part of every cache key."""
    from archlint.runtime.compile_probe import (
        ProbeResult,
        cache_key,
        cache_store,
        default_cache_dir,
        find_nvcc,
    )

    nvcc = find_nvcc()
    if nvcc is None:
        return 0
    directory = Path(cache_dir) if cache_dir else default_cache_dir()
    stored = 0
    for record in records:
        fields = dict(record["result"])
        deps = fields.pop("deps", None) or record.get("deps", [])
        fields["empty_kernels"] = tuple(fields["empty_kernels"])
        fields["trap_kernels"] = tuple(fields["trap_kernels"])
        if fields.get("trap_sites") is not None:
            fields["trap_sites"] = tuple((name, count) for name, count in fields["trap_sites"])
        fields["cached"] = False
        result = ProbeResult(**fields)
        if result.message.startswith("nvcc timed out"):
            continue
        options = probe_options(tuple(record["includes"]), tuple(record["defines"]), timeout_s, cache_dir,
                                record.get("project", "flashinfer"), record["target"], tuple(record.get("flags", ())))
        unit = Path(record["unit"]).resolve()
        if not unit.is_file():
            continue
        cache_store(directory, cache_key(unit, record["target"], options, nvcc), result, list(deps) + [str(unit)])
        stored += 1
    return stored


def classify(pairs: list, includes_by_release: dict[str, tuple[str, ...]], timeout_s: float,
             cache_dir: str | None, packages: dict[str, str] | None = None) -> list:
    """Fill in each pair's compiler answer from the compile cache (builds not in it: `not-run`)."""
    from archlint.runtime.compile_probe import (
        cache_key,
        cache_load,
        default_cache_dir,
        find_nvcc,
        kernel_key,
    )

    nvcc = find_nvcc()
    directory = Path(cache_dir) if cache_dir else default_cache_dir()

    def lookup(unit: str, target: str, pair):
        options = probe_options(pair_includes(pair, includes_by_release, packages), pair.defines, timeout_s, cache_dir,
                                pair.project, target, pair_flags(pair))
        path = Path(unit).resolve()
        if not path.is_file() or nvcc is None:
            return None
        return cache_load(directory, cache_key(path, target, options, nvcc))

    out = []
    for pair in pairs:
        answers, kernels = [], 0
        for unit in pair.units:
            result = lookup(unit, pair.target, pair)
            if result is None:
                answers.append((unit, "not-run", "not built within the budget"))
                continue
            kernels += result.kernels
            outcome, message = result.outcome, result.message
            refs = [r for r in (lookup(unit, ref, pair) for ref in pair.references) if r is not None]
            built_refs = [r for r in refs if r.outcome.startswith("built")]
            if outcome in ("built-empty", "built-trap") and built_refs:
                # arch-dependent only if some admitted build has the kernel with a body
                without_body = [{kernel_key(n) for n in (*r.empty_kernels, *r.trap_kernels)} for r in built_refs]
                odd = [k for k in (*result.empty_kernels, *result.trap_kernels)
                       if any(kernel_key(k) not in keys for keys in without_body)]
                if not odd:
                    outcome = "built"
                    message = f"{message} (as on {', '.join(r.target for r in built_refs)}: not arch-dependent)"
                else:
                    message = f"{len(odd)} kernel(s) empty or trapping here but not on an admitted build: {', '.join(odd[:3])}"
            elif outcome == "inconclusive" and "not tied to the target" in message and built_refs:
                outcome = "arch-error"
                message = f"builds for {built_refs[0].target}, not here: {message.split(': ', 1)[-1]}"
            elif outcome == "built" and result.trap_sites is None:
                outcome, message = "not-run", "built before trap instructions were counted: build again"
            elif outcome == "built" and any(count for _, count in result.trap_sites):
                outcome, message = _traps_against(result, built_refs, message)
            answers.append((unit, outcome, message))
        if not answers or any(a[1] == "not-run" for a in answers):
            out.append(replace(pair, compiler="not-run", unit_outcomes=tuple(answers)))
            continue
        compiler = aggregate([a[1] for a in answers])
        if compiler == "built" and kernels == 0:
            # Nothing compiled for the device (a header with no template instance): no evidence either way.
            compiler = "inconclusive"
            answers = [(u, "inconclusive", f"built, but no kernel compiled: {m}") for u, _, m in answers]
        detail = next((a[2] for a in answers if _agg_name(a[1]) == compiler), answers[0][2])
        out.append(replace(pair, compiler=compiler, compiler_detail=detail, unit_outcomes=tuple(answers)))
    return out


def _traps_against(result, references: list, message: str) -> tuple[str, str]:
    """A kernel with a body that traps is arch-dependent if an admitted build has it with fewer traps
    (an instruction where this build has a trap); one no admitted build names cannot be compared."""
    from archlint.runtime.compile_probe import arch_traps, unmatched_traps

    measured = [r for r in references if r.trap_sites is not None]
    if not measured:
        return "not-run", "kernels with a body trap; no admitted build to compare with yet"
    odd = sorted({name for ref in measured for name in arch_traps(result, ref)})
    if odd:
        return "built-trap", f"{len(odd)} kernel(s) trap where an admitted build has instructions: {', '.join(odd[:3])}"
    unmatched = unmatched_traps(result, measured)
    if unmatched:
        return "inconclusive", (f"{len(unmatched)} kernel(s) trap and no admitted build has one of that name to "
                                f"compare with: {', '.join(unmatched[:3])}")
    return "built", f"{message} (traps as on {', '.join(r.target for r in measured)}: not arch-dependent)"


def _agg_name(outcome: str) -> str:
    return "built-empty" if outcome == "built-trap" else outcome
