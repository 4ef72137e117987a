"""Code a unit hands to a run-time compiler for one pinned arch (DeepGEMM's NVRTC options
`"--gpu-architecture=sm_90a"`): the kernels it builds then are not in the unit, and run only there."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from archlint.knowledge.arch import Target
from archlint.model.cuda import CudaFacts, RuntimeArch
from archlint.model.findings import Location

if TYPE_CHECKING:
    from archlint.judge.analysis import TargetView

_PINNED_RE = re.compile(r"(sm|compute)_(\d+)([af]?)")


def pinned_runtime_builds(view: "TargetView", facts: CudaFacts,
                          compiled: Callable[[RuntimeArch], bool]) -> Iterator[tuple[Location, str, str]]:
    """(where, why, arch) for each live run-time build pinned to an arch the target cannot run."""
    for pin in facts.runtime_archs:
        if not compiled(pin) or view.truth(facts.path, pin.region, host=True) == 0 or runs_on(pin.arch, view.target):
            continue
        message = (f"kernels compiled at run time for `{pin.arch}` only (a run-time compiler option), which "
                   f"{view.target} cannot run; archlint does not see their code")
        yield Location(facts.path, pin.line, pin.col), message, pin.arch


def runs_on(arch: str, target: Target) -> bool:
    """Whether code built for `arch` (as a compiler option spells it) runs on the target's GPU."""
    match = _PINNED_RE.fullmatch(arch)
    if match is None:
        return True
    kind, cc, suffix = match.group(1), int(match.group(2)), match.group(3)
    if suffix == "a":
        return target.cc == cc
    if kind == "compute" and not suffix:
        return target.cc >= cc  # PTX: compiled again by the driver for newer GPUs
    return target.cc // 10 == cc // 10 and target.cc >= cc
