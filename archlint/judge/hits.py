"""What one translation unit means for one target: a Hit, with the evidence chain that leads to it."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from archlint.model.findings import Evidence, Location
from archlint.model.records import fast_pickling


class HitKind(Enum):
    """What a Hit is; the last hop of its chain says it (an UNRESOLVED hit has no hop of its own)."""

    INSTRUCTION = "instruction"
    ARCH_TAG = "arch-tag"  # a CUTLASS arch tag: the collectives built for an arch the target lacks
    ASSERT = "assert"
    SMEM = "smem"
    EMPTY_KERNEL = "empty-kernel"
    TRAP_KERNEL = "trap-kernel"
    TRAP_CALL = "trap-call"
    UNRESOLVED = "unresolved"
    ASSUMED = "assumed"
    ARCH_CHECK = "arch-check"  # host code keeps the target from the unit's prebuilt kernels
    PREBUILT = "prebuilt"  # the unit runs prebuilt kernels archlint cannot judge
    LIBRARY = "library"  # a vendor library call: what the library documents for it (judge/libraries.py)
    NO_IMAGE = "no-image"  # a prebuilt extension module the gate's code calls carries no image for the target
    IMAGE = "image"  # ... carries one: the module can load there, which is all its images show


@dataclass(frozen=True, slots=True)
class Hit:
    """One reason a unit matters for a target, with the chain that leads to it."""

    kind: HitKind
    location: Location
    message: str
    chain: tuple[Evidence, ...]
    certain: bool  # False: compiled only under a condition archlint could not decide
    settle: str = ""  # what would decide it, for the verdict's reason ('' when nothing the user gives would)


SETTLE_BY_INCLUDE_DIR = "settle by scanning the folder that holds it or passing it with --include-dir"


def settle_by_define(macros: tuple[str, ...]) -> str:
    """How to decide a condition that hangs on macros no read flag sets ('' for none)."""
    if not macros:
        return ""
    shown = ", ".join(f"`{name}`" for name in macros[:3])
    example = " ".join(f"--define {name}=VALUE" for name in macros[:2])
    return f"it hangs on {shown}, which the build sets where archlint cannot read it: settle with {example}"


fast_pickling(globals())
