"""The C++ tiles of the files the gates' units can include (extract/cuda/tiles.py), read once per
scan from the scanned tree and linked to the gates (gates/cxx_tactics.py). A re-scan links again
only the gates it judged again (relinked_cxx_tiles)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterable

from archlint.extract.cuda.tiles import cxx_tile_lists, launcher_arch
from archlint.gates.cxx_tactics import link_cxx_tile_lists
from archlint.knowledge.cutlass import load_cutlass
from archlint.link.cuda import CudaIndex
from archlint.model.gates import Gate, GuardedUnits
from archlint.model.tactics import LinkedTileList, TileListFact


def holds_tiles(data: bytes) -> bool:
    """Whether linked_cxx_tiles would read something of a file holding `data`: a launcher's
    kernel type, or what a tile list is spelled with."""
    alias = load_cutlass().cxx.kernel_alias
    return bool(alias) and (_kernel(alias).search(data) is not None or _may_hold_tiles(data))


def _kernel(alias: str) -> re.Pattern[bytes]:
    return re.compile(alias.encode())


def _may_hold_tiles(data: bytes) -> bool:
    return b"Shape" in data or b"{%" in data


def linked_cxx_tiles(root: str, index: CudaIndex,
                     judged: Iterable[tuple[Gate, GuardedUnits, frozenset[str]]]) -> tuple[LinkedTileList, ...]:
    knowledge = load_cutlass()
    if not knowledge.cxx.kernel_alias:
        return ()
    judged = list(judged)
    kernel = _kernel(knowledge.cxx.kernel_alias)
    facts: dict[str, tuple[TileListFact, ...]] = {}
    launchers: dict[str, int | None] = {}
    for path in sorted(set().union(*(closure for _, _, closure in judged)) if judged else ()):
        try:
            data = (Path(root) / path).read_bytes()
        except OSError:
            continue
        if kernel.search(data):
            launchers[path] = launcher_arch(data, knowledge)
        if _may_hold_tiles(data):
            found = cxx_tile_lists(path, data, knowledge)
            if found:
                facts[path] = found
    return link_cxx_tile_lists(index, judged, facts, launchers)


def relinked_cxx_tiles(root: str, index: CudaIndex, tile_lists: tuple[LinkedTileList, ...],
                       judged: Iterable[tuple[Gate, GuardedUnits, frozenset[str]]], again: set[str]) -> tuple[LinkedTileList, ...]:
    """A re-scan's tile lists: the Python generators' and the other gates' C++ tiles as the stored
    scan linked them, and the C++ tiles of the gates judged again (`again`, gate ids) linked anew
    from the files they can include. A gate is judged again when a changed file is among those, and
    nothing else its C++ tiles are linked from can change: the others' stand."""
    python = tuple(t for t in tile_lists if not t.fact.kind)
    kept = [t for t in tile_lists if t.fact.kind and t.gate not in again]
    relinked = linked_cxx_tiles(root, index, [one for one in judged if one[0].id in again]) if again else ()
    # in link_cxx_tile_lists's order, which keeps a gate's lists at one place in the order they were linked
    return python + tuple(sorted([*kept, *relinked], key=lambda t: (t.fact.path, t.fact.line, t.gate)))
