"""`archlint tactics`: every CUTLASS tactic a gate admits for a target, with its lower bound on
shared memory per block and the static verdict (does not fit / cannot tell) against that target."""

from __future__ import annotations

import json
from dataclasses import dataclass

from archlint.judge.smem_bound import fit, tactic_bound
from archlint.knowledge.arch import Target
from archlint.knowledge.cutlass import CutlassKnowledge, load_cutlass
from archlint.knowledge.kb import KnowledgeBase
from archlint.model.tactics import LinkedTileList, TacticChoice


@dataclass(frozen=True)
class TacticRow:
    path: str
    line: int
    generator: str
    gate: str
    launcher: str
    tile: str
    axes: str
    target: str
    bound: int | None
    arithmetic: str
    limit: int
    verdict: str  # 'does not fit' | 'cannot tell' | 'filtered at run time' | 'unknown size'
    settle: str  # what settles a 'cannot tell'


def tactic_rows(tile_lists: tuple[LinkedTileList, ...], targets: tuple[Target, ...], kb: KnowledgeBase,
                knowledge: CutlassKnowledge | None = None) -> list[TacticRow]:
    knowledge = knowledge or load_cutlass()
    rows: list[TacticRow] = []
    seen: set[tuple] = set()
    for linked in tile_lists:
        launcher = knowledge.launcher_for(linked.launcher, linked.fact.arch) if linked.launcher else None
        for target in (t for t in targets if linked.serves(t.cc)):
            limit = kb.profile(target.cc).smem_per_block_optin
            for choice in linked.fact.choices:
                key = (linked.fact.path, linked.fact.line, choice, target.name)
                if key not in seen:
                    seen.add(key)
                    rows.append(_row(linked, choice, target, limit, launcher, knowledge))
    return rows


def _row(linked: LinkedTileList, choice: TacticChoice, target: Target, limit: int, launcher, knowledge) -> TacticRow:
    fact = linked.fact
    tile = fact.tiles[choice.tile]
    bound = tactic_bound(fact, choice, launcher, knowledge)
    settle = ""
    if launcher is not None and launcher.runtime_filter:
        verdict = "filtered at run time"
    elif bound is None:
        verdict = "unknown size"
    else:
        verdict = fit(bound, limit).value
        if verdict == "cannot tell":
            settle = f"measure sizeof(GemmKernel::SharedStorage) with nvcc for {target.name} (compile probe)"
    axes = ", ".join(f"{role}={value}" for role, value in choice.axes) + ("" if choice.sure else " (filter not read)")
    return TacticRow(fact.path, tile.line, fact.function, linked.gate, linked.launcher, tile.text(), axes, target.name,
                     bound.nbytes if bound else None, bound.arithmetic if bound else "", limit, verdict, settle)


def render_text(rows: list[TacticRow]) -> str:
    lines = []
    for row in rows:
        bound = f"≥ {row.bound:,} B" if row.bound is not None else "? B"
        lines.append(f"{row.path}:{row.line}  {row.target}  {row.tile}  {row.axes}  {bound} / {row.limit:,} B  {row.verdict}")
        if row.arithmetic:
            lines.append(f"    {row.arithmetic}")
    verdicts: dict[str, int] = {}
    for row in rows:
        verdicts[row.verdict] = verdicts.get(row.verdict, 0) + 1
    summary = ", ".join(f"{count} {verdict}" for verdict, count in sorted(verdicts.items())) or "no tactics"
    lines.append(f"{len(rows)} tactic(s) × target: {summary}")
    return "\n".join(lines) + "\n"


def render_json(rows: list[TacticRow]) -> str:
    return json.dumps([row.__dict__ for row in rows], indent=2, ensure_ascii=False) + "\n"
