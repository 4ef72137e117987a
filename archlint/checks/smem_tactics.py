"""AL204 for CUTLASS tactics: a tile whose tactics of one element type and stage count (every
cluster, epilogue fusion and swap the generator pairs with them) all need more shared memory than
a target the gate admits for them allows, by the lower bound of `judge/smem_bound.py`. One finding
per tile, element type and fixed stage count, at the tile's line.

With the compile probe's measurements (`scan --compile-probe`), each measured tactic is judged by
its measured size instead: one finding per tactic over a served target's limit, naming the tactic;
a tactic nvcc could not size is left to the bound."""

from __future__ import annotations

from typing import Iterator

from archlint.checks.context import Context, target_list
from archlint.judge.smem_bound import fit, measured_fit, tactic_bound
from archlint.knowledge.arch import Target
from archlint.knowledge.cutlass import CutlassKnowledge, load_cutlass
from archlint.model.findings import Evidence, EvidenceKind, Finding, Location
from archlint.model.tactics import Bound, Fit, LinkedTileList, TacticChoice, tactics_of


def check(ctx: Context) -> Iterator[Finding]:
    knowledge = load_cutlass()
    reported: set[tuple[str, int, int, str]] = set()
    reported_tactics: set[tuple[str, int, TacticChoice]] = set()
    for linked in ctx.tile_lists:
        fact = linked.fact
        if ctx.paths is not None and fact.path not in ctx.paths:
            continue
        launcher = knowledge.launcher_for(linked.launcher, fact.arch) if linked.launcher else None
        if launcher is not None and launcher.runtime_filter:
            continue  # the project drops a tactic over the device's limit before it runs
        targets = tuple(t for t in ctx.targets if linked.serves(t.cc))
        measured = _measured(ctx, linked, targets)
        for choice, sizes in measured.items():
            if (fact.path, fact.line, choice) in reported_tactics:
                continue  # the same list linked to another gate: one finding per tactic
            finding = _measured_finding(ctx, linked, choice, sizes, knowledge)
            if finding is not None:
                reported_tactics.add((fact.path, fact.line, choice))
                yield finding
        groups: dict[tuple[int, str], list[TacticChoice]] = {}
        for choice in (c for c in fact.choices if c not in measured):  # a fixed stage count is a kernel of its own, as an element type is
            groups.setdefault((choice.tile, f"{choice.axis('dtype')}/{choice.axis('stages')}"), []).append(choice)
        for (index, kind), choices in groups.items():
            row = fact.tiles[index]
            if (fact.path, row.line, row.col, kind) in reported:
                continue
            finding = _tile_finding(ctx, linked, index, choices, targets, knowledge)
            if finding is not None:
                reported.add((fact.path, row.line, row.col, kind))
                yield finding


def _tile_finding(ctx: Context, linked: LinkedTileList, index: int, choices: list[TacticChoice],
                  targets: tuple[Target, ...], knowledge: CutlassKnowledge) -> Finding | None:
    fact = linked.fact
    launcher = knowledge.launcher_for(linked.launcher, fact.arch) if linked.launcher else None
    bounds = [(bound, choice) for choice in choices if (bound := tactic_bound(fact, choice, launcher, knowledge))]
    if not bounds or len(bounds) < len(choices):
        return None  # a tactic of the tile whose size is not known may fit
    bound, choice = min(bounds, key=lambda pair: pair[0].nbytes)
    over = tuple(t for t in targets if fit(bound, ctx.kb.profile(t.cc).smem_per_block_optin) is Fit.DOES_NOT_FIT)
    if not over:
        return None
    row = fact.tiles[index]
    location = Location(fact.path, row.line, row.col)
    limit = ctx.kb.profile(over[0].cc).smem_per_block_optin
    names = tuple(t.name for t in over)
    return ctx.finding(
        "AL204", location, targets=names, symbol=fact.function,
        properties=(("nbytes", str(bound.nbytes)), ("limit", str(limit)), ("kind", "tactic"),
                    ("tactics", str(len(choices)))),
        evidence=linked.chain + _tactic_evidence(location, bound, choice, len(choices), linked, launcher_source(knowledge, linked))
        + (_limit_hop(ctx, over[0], location),),
        request=f"{fact.variable}[{index}] = [{row.m}, {row.n}, {row.k}]", nbytes=f"at least {bound.arithmetic}",
        arch=target_list(names), limit=f"{limit:,} bytes",
    )


def _measured(ctx: Context, linked: LinkedTileList, targets: tuple[Target, ...]) -> dict[TacticChoice, dict[Target, int]]:
    """The tactics nvcc sized for every served target: choice -> target -> bytes."""
    if ctx.tactic_sizes is None or not targets:
        return {}
    fact = linked.fact
    sizes = {(size.choice, size.target): size.nbytes for size in ctx.tactic_sizes
             if size.path == fact.path and size.line == fact.line and size.nbytes is not None}
    out: dict[TacticChoice, dict[Target, int]] = {}
    for choice in tactics_of(fact, {choice for choice, _ in sizes}):
        found = {t: sizes[(choice, t.name)] for t in targets if (choice, t.name) in sizes}
        if len(found) == len(targets):
            out[choice] = found
    return out


def _measured_finding(ctx: Context, linked: LinkedTileList, choice: TacticChoice, sizes: dict[Target, int],
                      knowledge: CutlassKnowledge) -> Finding | None:
    over = tuple(t for t, nbytes in sizes.items()
                 if measured_fit(nbytes, ctx.kb.profile(t.cc).smem_per_block_optin) is Fit.DOES_NOT_FIT)
    if not over:
        return None
    fact = linked.fact
    row = fact.tiles[choice.tile]
    location = Location(fact.path, row.line, row.col)
    nbytes, limit = sizes[over[0]], ctx.kb.profile(over[0].cc).smem_per_block_optin
    names = tuple(t.name for t in over)
    tactic = f"{fact.variable}[{choice.tile}] = [{row.m}, {row.n}, {row.k}]" + (f" with {_axes(choice)}" if choice.axes else "")
    hop = Evidence(location, f"nvcc measures sizeof(SharedStorage) of tactic {_axes(choice) or 'the tile alone'} "
                             f"for {over[0]}: {nbytes:,} bytes", EvidenceKind.VERDICT, name=Fit.DOES_NOT_FIT.value)
    launcher = launcher_source(knowledge, linked)
    hops = (hop,) + ((Evidence(location, f"launcher `{linked.launcher}`: {launcher}", EvidenceKind.COMPILES,
                               source=linked.launcher),) if launcher else ())
    return ctx.finding(
        "AL204", location, targets=names, symbol=fact.function,
        properties=(("nbytes", str(nbytes)), ("limit", str(limit)), ("kind", "tactic"), ("measured", "nvcc"),
                    ("tactic", _axes(choice))),
        evidence=linked.chain + hops + (_limit_hop(ctx, over[0], location),),
        request=tactic, nbytes=f"{nbytes:,}", arch=target_list(names), limit=f"{limit:,} bytes",
    )


def _axes(choice: TacticChoice) -> str:
    return ", ".join(f"{role} {value}" for role, value in choice.axes)


def launcher_source(knowledge: CutlassKnowledge, linked: LinkedTileList) -> str:
    launcher = knowledge.launcher_for(linked.launcher, linked.fact.arch) if linked.launcher else None
    return launcher.source if launcher else ""


def _tactic_evidence(location: Location, bound: Bound, choice: TacticChoice, count: int, linked: LinkedTileList,
                     launcher: str) -> tuple[Evidence, ...]:
    axes = _axes(choice) or "the tile alone"
    unsure = "" if choice.sure else "; a filter of the generator archlint does not read may drop it"
    hops = [Evidence(location, f"the smallest of the tile's {count} tactic(s) of these element types: {axes} ({bound.elements}); "
                               f"{bound.stage_policy}; lower bound {bound.nbytes:,} bytes, the epilogue, barriers "
                               f"and alignment padding not counted{unsure}", EvidenceKind.VERDICT, name=Fit.DOES_NOT_FIT.value)]
    if launcher:
        hops.append(Evidence(location, f"launcher `{linked.launcher}`: {launcher}", EvidenceKind.COMPILES, source=linked.launcher))
    return tuple(hops)


def _limit_hop(ctx: Context, target: Target, location: Location) -> Evidence:
    profile = ctx.kb.profile(target.cc)
    return Evidence(location, f"{profile.name}: {profile.smem_per_block_optin:,} bytes per block opt-in, "
                              f"{profile.smem_per_sm:,} per SM; {profile.source}", EvidenceKind.LIMIT)
