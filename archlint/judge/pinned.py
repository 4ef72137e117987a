"""Builds pinned to targets: code a unit hands to a run-time compiler for one arch (DeepGEMM's NVRTC
options `"--gpu-architecture=sm_90a"`), whose kernels are not in the unit and run only there; and a
JIT spec whose flag list pins what every build of an unreadable unit compiles for (FlashInfer's
`*NVCC_FLAGS[module.target]`), which decides where that unit can run whatever its code holds."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from archlint.judge.hits import Hit, HitKind
from archlint.judge.view import TargetView
from archlint.knowledge.arch import Target, TargetError, parse_target
from archlint.model.cuda import CudaFacts, RuntimeArch
from archlint.model.gates import GuardedUnits, PinnedUnit
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
    """(why, evidence) where a guarded unit whose source cannot be read has every build pinned to
    targets none of which runs on `target`: the gate's code would load a module with nothing for it."""
    out = [unit for unit in units.pinned if not unit.read and not _any_runs(unit.codes, target)]
    if not out:
        return None
    hop = out[0].evidence[-1]
    specs = {unit.evidence[-1].location for unit in out}
    more = f" (+{len(specs) - 1} more spec{'s' if len(specs) > 2 else ''})" if len(specs) > 1 else ""
    message = (f"`{hop.name}` is built for {', '.join(out[0].codes)} only ({hop.location.path}:{hop.location.line}):"
               f" none runs on {target} (rules/kb/targets.toml){more}")
    return message, out[0].evidence


def pinned_specs(units: GuardedUnits, target: Target) -> tuple[PinnedUnit, ...]:
    """A unit per guarded spec whose flag list is a gate of its own that pins every build to
    targets none of which runs on `target`: that gate excludes the target too."""
    found = {unit.evidence[-1].location: unit for unit in units.pinned
             if unit.flag_gate and not _any_runs(unit.codes, target)}
    return tuple(unit for _, unit in sorted(found.items()))


def pinned_policy_note(specs: tuple[PinnedUnit, ...]) -> str:
    """For a POLICY verdict: the spec flag lists (`pinned_specs`) to widen as well; '' for none."""
    if not specs:
        return ""
    named = ", ".join(f"`{unit.evidence[-1].name}` ({unit.evidence[-1].location.path}:{unit.evidence[-1].location.line},"
                      f" built for {', '.join(unit.codes)} only)" for unit in specs[:2])
    more = f" (+{len(specs) - 2} more)" if len(specs) > 2 else ""
    return f"; the build pins targets too: widen the flag list of {named}{more} as well"


_CODE_RE = re.compile(r"^(sm|compute)_(\d{2,3})([af]?)$")


def _any_runs(codes: tuple[str, ...], target: Target) -> bool:
    return any(_code_runs_on(code, target) for code in codes)


def _code_runs_on(code: str, target: Target) -> bool:
    """`runs_on` for a `code=` value, whose suffix says where it runs even where the knowledge base
    does not know its capability (`sm_107a` runs on 10.7 only); a value not read claims nothing."""
    match = _CODE_RE.match(code)
    if match is None:
        return True
    kind, cc, suffix = match.group(1), int(match.group(2)), match.group(3)
    if suffix == "a":
        return target.cc == cc
    if kind == "compute" and not suffix:
        return target.cc >= cc  # PTX: compiled again by the driver for newer GPUs
    return target.cc // 10 == cc // 10 and target.cc >= cc


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
