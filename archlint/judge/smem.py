"""Shared-memory requests against a target's per-block limit.

A request's size is a constant (`nbytes`), or one size per instantiation of the function that makes
it (`sizes`, computed by extract/cuda/sizes.py), or chosen from the device's own limit (`adaptive`),
or not known. Every instantiation over the limit is a blocker, with the arithmetic, and so are some
over it while the rest fit (the code launches those for some inputs, and sizes none for the device);
some over it while the rest are not known, a possible one; all within it, or a size the code chooses for the device it runs on, no obstacle. An
opt-in of a size nothing computes leaves POLICY unsaid where the target has less shared memory per
block than every build the gate admits: it was sized for those.
"""

from __future__ import annotations

from archlint.judge.hits import Hit, HitKind
from archlint.knowledge.arch import Target
from archlint.knowledge.kb import KnowledgeBase
from archlint.model.cuda import SmemRequest, SmemSize
from archlint.model.findings import Evidence, EvidenceKind, Location

HOST_SMEM_KINDS = ("dynamic-attr", "launch")
SETTLE_BY_LAUNCH = "settle with `archlint runtime --launch-probe` on the GPU"


def smem_limit(kb: KnowledgeBase, target: Target, request: SmemRequest) -> int:
    profile = kb.profile(target.cc)
    if request.kind == "static" and target.suffix != "a":
        return profile.smem_per_block  # ptxas's static limit off `a` targets (rules/kb/devices.toml)
    return profile.smem_per_block_optin


def least_bytes(request: SmemRequest) -> int | None:
    """The fewest bytes the request asks on any build: its constant size, or the least of its
    instantiations' where the size of every one is known and none adapts to the device."""
    if request.adaptive:
        return None
    if request.nbytes is not None:
        return request.nbytes
    if request.sizes and not request.unsized:
        return min(size.nbytes for size in request.sizes)
    return None


def arithmetic(request: SmemRequest, sizes: tuple[SmemSize, ...]) -> str:
    """`smem_bytes` = 197,632 bytes for f<8> (tile_k = 256, stage_cnt = 16); ... """
    parts = []
    for size in sizes[:3]:
        where = f" for {size.instance}" if size.instance else ""
        steps = f" ({size.steps})" if size.steps else ""
        parts.append(f"{size.nbytes:,} bytes{where}{steps}")
    more = f"; and {len(sizes) - 3} more" if len(sizes) > 3 else ""
    return f"`{request.text}` = " + "; ".join(parts) + more


def _sizes(sizes: tuple[SmemSize, ...]) -> str:
    return ", ".join(f"{size.nbytes:,} bytes for {size.instance}" if size.instance else f"{size.nbytes:,} bytes" for size in sizes[:3])


def judge_smem(view, path: str, request: SmemRequest, state: int | None, chain: tuple[Evidence, ...],
               hits: tuple[list[Hit], list[Hit], list[Hit]], references: tuple) -> None:
    """Adds what a request reached on the target means to (blockers, possible, unresolved). `state`:
    whether its region compiles there (0 never, 1 surely, None undecided)."""
    blockers, possible, unresolved = hits
    limit = smem_limit(view.kb, view.target, request)
    location = Location(path, request.line, request.col)
    if request.adaptive:
        return
    if request.nbytes is not None:
        if request.nbytes > limit:
            message = (f"shared memory request of {request.nbytes:,} bytes ({request.text}) exceeds "
                       f"{view.target}'s limit of {limit:,} bytes")
            _add(blockers if state == 1 else possible, location, message, chain, state == 1)
        return
    over = tuple(size for size in request.sizes if size.nbytes > limit)
    if over and len(over) == len(request.sizes) and not request.unsized:
        every = "every instantiation" if len(over) > 1 else "it"
        message = f"{arithmetic(request, over)}: {every} exceeds {view.target}'s limit of {limit:,} bytes per block"
        _add(blockers if state == 1 else possible, location, message, chain, state == 1)
    elif over and not request.unsized:
        # Some instantiations fit and some do not: the code launches those that do not for some
        # inputs, and nothing in it sizes them for the device.
        fits = tuple(size for size in request.sizes if size.nbytes <= limit)
        message = (f"{arithmetic(request, over)}: over {view.target}'s limit of {limit:,} bytes per block, "
                   f"while {_sizes(fits)} fit{'s' if len(fits) == 1 else ''}")
        _add(blockers if state == 1 else possible, location, message, chain, state == 1)
    elif over:
        message = (f"{arithmetic(request, over)}: over {view.target}'s limit of {limit:,} bytes per block; "
                   f"the other instantiations are not known ({request.unsized})")
        _add(possible, location, message, chain, False)
    elif request.sizes and not request.unsized:
        return
    elif request.kind == "dynamic-attr" and _sized_for_more(view, request, references):
        why = f" ({request.unsized})" if request.unsized else ""
        message = (f"dynamic shared memory opted into with `{request.text}` is a size archlint cannot compute{why}; "
                   f"{view.target} allows {limit:,} bytes per block")
        unresolved.append(Hit(HitKind.UNRESOLVED, location, message, chain + (Evidence(location, message, EvidenceKind.SMEM),),
                              False, SETTLE_BY_LAUNCH))


def _sized_for_more(view, request: SmemRequest, references: tuple) -> bool:
    """Whether every build the gate admits (`references`) has more shared memory per block than the target."""
    limit = smem_limit(view.kb, view.target, request)
    return bool(references) and all(limit < smem_limit(view.kb, ref.target, request) for ref in references)


def _add(hits: list[Hit], location: Location, message: str, chain: tuple[Evidence, ...], certain: bool) -> None:
    hits.append(Hit(HitKind.SMEM, location, message, chain + (Evidence(location, message, EvidenceKind.SMEM),), certain))
