"""A lower bound on a CUTLASS tactic's shared memory per block, and the static verdict it gives.

The bound counts what every stage of the mainloop must hold, at the fewest stages the tactic's
stage policy allows (rules/kb/cutlass.toml): the A tile (M×K), the B tile (N×K) and, for a
block-scaled pair, one scale factor per `vector` elements of each along K. Nothing else is counted
(the epilogue's tensors, pipeline barriers, TMA descriptors, the `alignas(1024)` padding of the
operand buffers, scale-factor layouts padded to 128 rows): each only adds, so the bound is below
what the compiler lays out (`sizeof(GemmKernel::SharedStorage)`). Over the limit, the tactic does
not fit; at or under it, only a measurement (the compile probe) can tell, since CUTLASS's own stage
count fills the limit by its estimate, which leaves those additions out.
"""

from __future__ import annotations

from archlint.knowledge.cutlass import CutlassKnowledge, Element, Launcher
from archlint.model.tactics import Bound, Fit, TacticChoice, TileListFact, TileRow


def tactic_bound(fact: TileListFact, choice: TacticChoice, launcher: Launcher | None,
                 knowledge: CutlassKnowledge) -> Bound | None:
    """The bound for one tactic, or None where its element types or stage count are not known."""
    operands = _operands(choice.axis("dtype") or _fixed(launcher), knowledge)
    stages = _stages(fact, choice, launcher, knowledge)
    if operands is None or stages is None:
        return None
    count, policy = stages
    act, weight = operands
    a, b = (weight, act) if choice.axis("swap") == "True" else (act, weight)
    tile = fact.tiles[choice.tile]
    a_bits, b_bits = tile.m * tile.k * a.bits, tile.n * tile.k * b.bits
    scale = launcher.scale if launcher is not None and launcher.scale else knowledge.block_scale(act, weight, fact.arch or 0)
    sf_bits = (tile.m + tile.n) * tile.k // scale.vector * scale.sf_bits if scale else 0
    per_stage = (a_bits + b_bits + sf_bits) // 8
    total = count * per_stage
    terms = _operand_terms(tile, a, b)
    if scale:
        terms += f" + ({tile.m} + {tile.n})×{tile.k}/{scale.vector} × {_size(scale.sf_bits)} ({scale.sf} scale factors)"
    arithmetic = f"{count} stage{'s' if count != 1 else ''} × ({terms}) = {total:,}"
    elements = f"{a.name} × {b.name}" + (f", {scale.sf} scale factors per {scale.vector}" if scale else "")
    return Bound(total, arithmetic, count, policy, elements)


def fit(bound: Bound, limit: int) -> Fit:
    return Fit.DOES_NOT_FIT if bound.nbytes > limit else Fit.CANNOT_TELL


def measured_fit(nbytes: int, limit: int) -> Fit:
    """What a measured `sizeof(SharedStorage)` says: a block may use exactly its opt-in limit."""
    return Fit.DOES_NOT_FIT if nbytes > limit else Fit.FITS


def _operands(text: str, knowledge: CutlassKnowledge) -> tuple[Element, Element] | None:
    """(activation, weight) from a dtype axis value: 'e2m1' for both, '(DataType.e4m3, e2m1)' a pair."""
    if not text:
        return None
    names = [part.strip() for part in text.strip("()").split(",") if part.strip()]
    elements = [knowledge.element(name) for name in names]
    if not elements or len(elements) > 2 or any(e is None for e in elements):
        return None
    act = elements[0]
    weight = elements[-1]
    assert act is not None and weight is not None
    return act, weight


def _fixed(launcher: Launcher | None) -> str:
    """The element types a launcher fixes, spelled as a dtype axis value."""
    return "(" + ", ".join(launcher.elements) + ")" if launcher is not None and launcher.elements else ""


def _stages(fact: TileListFact, choice: TacticChoice, launcher: Launcher | None,
            knowledge: CutlassKnowledge) -> tuple[int, str] | None:
    """(the fewest stages the tactic can have, the policy in words)."""
    axis = choice.axis("stages")
    if axis.isdigit() and int(axis) > 0:
        return int(axis), f"StageCount<{axis}> (the generator's stage count)"
    if fact.stages is not None and fact.stages != knowledge.auto_stages:
        return fact.stages, f"StageCount<{fact.stages}> (the generator's stage count)"
    policy = knowledge.policies.get(launcher.stage_policy) if launcher else None
    if policy is None or policy.min_stages <= 0:
        return None
    return policy.min_stages, f"{policy.name}: at least {policy.min_stages} stages ({policy.source.split(':')[0]})"


def _operand_terms(tile: TileRow, a: Element, b: Element) -> str:
    if a.bits == b.bits:
        return f"({tile.m}×{tile.k} A + {tile.n}×{tile.k} B) × {_size(a.bits)} ({a.name})"
    return f"{tile.m}×{tile.k} A × {_size(a.bits)} ({a.name}) + {tile.n}×{tile.k} B × {_size(b.bits)} ({b.name})"


def _size(bits: int) -> str:
    return f"{bits // 8} B" if bits % 8 == 0 else f"{bits} bits"
