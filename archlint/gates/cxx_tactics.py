"""CUTLASS tiles written in C++ linked to the gates whose builds compile them.

A launcher header's CuTe tiles (`extract/cuda/tiles.py`) are linked to every gate whose units can
include the header; a kernel template's loops over tile extents to every gate whose units are
rendered from it, with the launcher header the template includes. The SM is the launcher's
architecture tag (`cutlass::arch::Sm120`): a gate admits a target for the tiles when it admits the
target and the launcher builds for its major. The evidence chain: the gate, its hops to the unit,
the tiles.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Iterable, Mapping

from archlint.link.cuda import CudaIndex, include_closure
from archlint.model.findings import Evidence, EvidenceKind, Location
from archlint.model.gates import Gate, GuardedUnits, gate_location
from archlint.model.tactics import LinkedTileList, TileListFact


def link_cxx_tile_lists(index: CudaIndex, judged: Iterable[tuple[Gate, GuardedUnits, frozenset[str]]],
                        facts: Mapping[str, tuple[TileListFact, ...]],
                        launchers: Mapping[str, int | None]) -> tuple[LinkedTileList, ...]:
    """`judged`: each gate with its units and every file they can include; `facts`: the C++ tiles
    of the files that hold some; `launchers`: the files that define a kernel type, with the SM
    their architecture tag names (None: none or several)."""
    linked: list[LinkedTileList] = []
    for gate, units, closure in judged:
        for path in sorted(closure & facts.keys()):
            for fact in facts[path]:
                launcher = path if fact.kind != "loops" else next(
                    (e.target for e in index.resolved(path) if e.target in launchers), None)
                arch = launchers.get(launcher) if launcher else None
                if launcher is None or arch is None:
                    continue
                defines = tuple(dict.fromkeys(f[2:] if f.startswith("-D") else f for f in units.spec_defines + gate.defines))
                linked.append(LinkedTileList(replace(fact, arch=arch), gate.id, gate.admits,
                                             _hops(index, gate, units, path, fact), launcher, defines))
    return tuple(sorted(linked, key=lambda t: (t.fact.path, t.fact.line, t.gate)))


def _hops(index: CudaIndex, gate: Gate, units: GuardedUnits, path: str, fact: TileListFact) -> tuple[Evidence, ...]:
    head = (Evidence(gate_location(gate), f"gate `{gate.text}`", EvidenceKind.GATE),)
    source = next((s for s in sorted(units.evidence) if s == path), None) or next(
        (s for s in sorted(units.evidence) if path in include_closure(index, [s])), None)
    middle = tuple(units.evidence.get(source, ())) if source else ()
    what = {"cute": "CuTe tile shape", "alias": "tactic aliases", "loops": "template loops over the tile"}.get(fact.kind, fact.variable)
    tile = Evidence(Location(fact.path, fact.line, fact.col), f"{what} ({len(fact.tiles)} tile(s)), compiled by the gate's units",
                    EvidenceKind.CONSTRUCT, name=fact.variable)
    return head + middle + (tile,)
