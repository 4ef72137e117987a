"""CUTLASS tiles written in C++ linked to the gates whose builds compile them.

A launcher header's CuTe tiles (`extract/cuda/tiles.py`) are linked to every gate whose units can
include the header; a kernel template's loops over tile extents to every gate whose units are
rendered from it, with the launcher header the template includes. The SM is the launcher's
architecture tag (`cutlass::arch::Sm120`): a gate admits a target for the tiles when it admits the
target and the launcher builds for its major. The evidence chain: the gate, its hops to the unit,
the launcher.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Iterable

from archlint.extract.cuda.tiles import cxx_tile_lists, launcher_arch
from archlint.knowledge.cutlass import CutlassKnowledge, load_cutlass
from archlint.link.cuda import CudaIndex, include_closure
from archlint.model.findings import Evidence, EvidenceKind, Location
from archlint.model.gates import Gate, GuardedUnits, gate_location
from archlint.model.tactics import LinkedTileList, TileListFact


def link_cxx_tile_lists(root: str, index: CudaIndex, judged: Iterable[tuple[Gate, GuardedUnits, frozenset[str]]],
                        knowledge: CutlassKnowledge | None = None) -> tuple[LinkedTileList, ...]:
    """`judged`: each gate with its units and every file they can include."""
    knowledge = knowledge or load_cutlass()
    if not knowledge.cxx.kernel_alias:
        return ()
    read: dict[str, bytes | None] = {}

    def data(path: str) -> bytes | None:
        if path not in read:
            try:
                read[path] = (Path(root) / path).read_bytes()
            except OSError:
                read[path] = None
        return read[path]

    facts: dict[str, tuple[TileListFact, ...]] = {}
    linked: list[LinkedTileList] = []
    for gate, units, closure in judged:
        for path in sorted(closure):
            if path not in facts:
                raw = data(path)
                facts[path] = cxx_tile_lists(path, raw, knowledge) if raw and (b"Shape" in raw or b"{%" in raw) else ()
            for fact in facts[path]:
                launcher = path if fact.kind != "loops" else _included_launcher(index, path, data, knowledge)
                raw = data(launcher) if launcher else None
                arch = launcher_arch(raw, knowledge) if raw else None
                if launcher is None or arch is None:
                    continue
                hops = _hops(index, gate, units, path, fact)
                linked.append(LinkedTileList(replace(fact, arch=arch), gate.id, gate.admits, hops, launcher,
                                             tuple(dict.fromkeys(f[2:] if f.startswith("-D") else f for f in units.spec_defines + gate.defines))))
    return tuple(sorted(linked, key=lambda t: (t.fact.path, t.fact.line, t.gate)))


def _included_launcher(index: CudaIndex, template: str, data, knowledge: CutlassKnowledge) -> str | None:
    """The header a kernel template includes that defines the kernel type."""
    for edge in index.resolved(template):
        raw = data(edge.target) if edge.target else None
        if raw and re.search(knowledge.cxx.kernel_alias.encode(), raw):
            return edge.target
    return None


def _hops(index: CudaIndex, gate: Gate, units: GuardedUnits, path: str, fact: TileListFact) -> tuple[Evidence, ...]:
    head = (Evidence(gate_location(gate), f"gate `{gate.text}`", EvidenceKind.GATE),)
    source = next((s for s in sorted(units.evidence) if s == path), None) or next(
        (s for s in sorted(units.evidence) if path in include_closure(index, [s])), None)
    middle = tuple(units.evidence.get(source, ())) if source else ()
    what = {"cute": "CuTe tile shape", "alias": "tactic aliases", "loops": "template loops over the tile"}.get(fact.kind, fact.variable)
    tile = Evidence(Location(fact.path, fact.line, fact.col), f"{what} ({len(fact.tiles)} tile(s)), compiled by the gate's units",
                    EvidenceKind.CONSTRUCT, name=fact.variable)
    return head + middle + (tile,)
