"""`archlint tactics`: every CUTLASS tactic a gate admits for a target, with its lower bound on
shared memory per block and the static verdict (does not fit / cannot tell) against that target."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace

from archlint.judge.smem_bound import fit, measured_fit, tactic_bound
from archlint.knowledge.arch import Target
from archlint.knowledge.cutlass import CutlassKnowledge, load_cutlass
from archlint.knowledge.kb import KnowledgeBase
from archlint.model.tactics import LinkedTileList, TacticChoice, tactics_of


Measured = tuple[int | None, str]  # the compile probe's size, or None and why


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
    verdict: str  # 'does not fit' | 'cannot tell' | 'fits' (measured) | 'filtered at run time' | 'unknown size'
    settle: str  # what settles a 'cannot tell'
    measured: int | None = None  # sizeof(GemmKernel::SharedStorage) from the compile probe
    probe_note: str = ""  # why the probe gave no size


def tactic_rows(tile_lists: tuple[LinkedTileList, ...], targets: tuple[Target, ...], kb: KnowledgeBase,
                knowledge: CutlassKnowledge | None = None, measured: Mapping[tuple, Measured] | None = None) -> list[TacticRow]:
    """One row per (tactic, served target); `measured`: the compile probe's answers by
    (path, line, choice, target name), each (bytes or None, note)."""
    knowledge = knowledge or load_cutlass()
    rows: list[TacticRow] = []
    seen: set[tuple] = set()
    for linked in tile_lists:
        launcher = knowledge.launcher_for(linked.launcher, linked.fact.arch) if linked.launcher else None
        for target in (t for t in targets if linked.serves(t.cc)):
            limit = kb.profile(target.cc).smem_per_block_optin
            sized = {key[2] for key in (measured or {}) if key[:2] == (linked.fact.path, linked.fact.line) and key[3] == target.name}
            for choice in tactics_of(linked.fact, sized):
                key = (linked.fact.path, linked.fact.line, choice, target.name)
                if key not in seen:
                    seen.add(key)
                    row = _row(linked, choice, target, limit, launcher, knowledge)
                    rows.append(_with_measurement(row, (measured or {}).get(key), limit))
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


def _with_measurement(row: TacticRow, answer: Measured | None, limit: int) -> TacticRow:
    if answer is None or row.verdict == "filtered at run time":
        return row
    nbytes, note = answer
    if nbytes is None:
        return replace(row, probe_note=note)
    if row.bound is not None and nbytes < row.bound:  # a kernel that compiles holds at least the bound
        return replace(row, probe_note=f"measured {nbytes:,} B, under the lower bound: the instantiation did not compile as written")
    return replace(row, measured=nbytes, verdict=measured_fit(nbytes, limit).value, settle="")


def render_text(rows: list[TacticRow]) -> str:
    lines = []
    for row in rows:
        bound = f"≥ {row.bound:,} B" if row.bound is not None else "? B"
        measured = f"  measured {row.measured:,} B" if row.measured is not None else ""
        lines.append(f"{row.path}:{row.line}  {row.target}  {row.tile}  {row.axes}  {bound}{measured} / {row.limit:,} B  {row.verdict}")
        if row.probe_note:
            lines.append(f"    probe: {row.probe_note}")
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
