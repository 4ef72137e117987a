"""Builds pinned to targets: code a unit hands to a run-time compiler for one arch (DeepGEMM's NVRTC
options `"--gpu-architecture=sm_90a"`), whose kernels are not in the unit and run only there; and a
JIT spec whose flag list pins what every build of an unreadable unit compiles for (FlashInfer's
`*NVCC_FLAGS[module.target]`), which decides where that unit can run whatever its code holds."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from archlint.judge.hits import Hit, HitKind
from archlint.judge.view import TargetView
from archlint.knowledge.arch import Target, TargetError, parse_target
from archlint.model.cuda import CudaFacts, RuntimeArch
from archlint.model.gates import GuardedUnits
from archlint.model.findings import Evidence, EvidenceKind, Location


def runtime_builds(view: TargetView, facts: CudaFacts, reach, chain: tuple[Evidence, ...],
                   blockers: list[Hit], possible: list[Hit]) -> None:
    """Kernels built at run time for one arch the target cannot run: a blocker where the code that
    builds them surely compiles and its condition holds."""
    compiled, surely = reach
    for pin, location, message in pinned_runtime_builds(view, facts, compiled):
        certain = (facts.path, pin.function) in surely and view.truth(facts.path, pin.region, host=True) == 1
        hop = Evidence(location, message, EvidenceKind.CONSTRUCT, name=pin.arch)
        (blockers if certain else possible).append(Hit(HitKind.INSTRUCTION, location, message, chain + (hop,), certain))


def pinned_runtime_builds(view: TargetView, facts: CudaFacts,
                          compiled: Callable[[RuntimeArch], bool]) -> Iterator[tuple[RuntimeArch, Location, str]]:
    """(pin, where, why) for each live run-time build pinned to an arch the target cannot run."""
    for pin in facts.runtime_archs:
        if not compiled(pin) or view.truth(facts.path, pin.region, host=True) == 0 or runs_on(pin.arch, view.target):
            continue
        message = (f"kernels compiled at run time for `{pin.arch}` only (a run-time compiler option): "
                   f"{_runs_where(pin.arch)}, not on {view.target} (rules/kb/targets.toml)")
        yield pin, Location(facts.path, pin.line, pin.col), message


def pinned_unit_blocker(units: GuardedUnits, target: Target) -> tuple[str, tuple[Evidence, ...]] | None:
    """(why, evidence) where a guarded unit's every build is pinned to targets none of which runs on
    `target`: the gate's code would load a module with nothing for it."""
    out = [unit for unit in units.pinned if not any(runs_on(code, target) for code in unit.codes)]
    if not out:
        return None
    hop = out[0].evidence[-1]
    specs = {unit.evidence[-1].location for unit in out}
    more = f" (+{len(specs) - 1} more spec{'s' if len(specs) > 2 else ''})" if len(specs) > 1 else ""
    message = (f"`{hop.name}` is built for {', '.join(out[0].codes)} only ({hop.location.path}:{hop.location.line}):"
               f" none runs on {target} (rules/kb/targets.toml){more}")
    return message, out[0].evidence


def _runs_where(arch: str) -> str:
    pinned = parse_target(arch)
    major, minor = divmod(pinned.cc, 10)
    if pinned.suffix == "a":
        return f"`{arch}` code runs only on compute capability {major}.{minor}"
    if arch.startswith("compute_") and not pinned.suffix:
        return f"`{arch}` code runs from compute capability {major}.{minor} up"
    return f"`{arch}` code runs on compute capability {major}.x from {major}.{minor} up"


def runs_on(arch: str, target: Target) -> bool:
    """Whether code built for `arch` (as a compiler option spells it) runs on the target's GPU; an
    arch the knowledge base does not know claims nothing."""
    try:
        pinned = parse_target(arch)
    except TargetError:
        return True
    if pinned.suffix == "a":
        return target.cc == pinned.cc
    if arch.startswith("compute_") and not pinned.suffix:
        return target.cc >= pinned.cc  # PTX: compiled again by the driver for newer GPUs
    return target.cc // 10 == pinned.cc // 10 and target.cc >= pinned.cc
