"""CUTLASS tactics as facts: the tiles a kernel generator offers, the element types, clusters,
epilogue fusions and swaps it crosses them with, and the stage policy its launcher builds them
with. Read from the generator's lists (never by running it); judged against a target's shared
memory per block by a lower bound (`judge/smem_bound.py`)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from archlint.model.findings import Evidence
from archlint.model.records import fast_pickling


@dataclass(frozen=True, slots=True)
class TileRow:
    """One entry of a tile list: M×N×K in elements, where it is written."""

    m: int
    n: int
    k: int
    line: int
    col: int

    def text(self) -> str:
        return f"{self.m}×{self.n}×{self.k}"


@dataclass(frozen=True, slots=True)
class TacticChoice:
    """One combination the generator emits for a tile: each axis role ('dtype', 'cluster',
    'fusion', 'swap') with the value it takes, as the generator spells it ('e2m1',
    "('DataType.e4m3', 'e2m1')", 'True'). `sure`: False where a filter of the generator could not be
    read, so the combination may be dropped."""

    tile: int  # index into TileListFact.tiles
    axes: tuple[tuple[str, str], ...]
    sure: bool = True

    def axis(self, role: str) -> str:
        for name, value in self.axes:
            if name == role:
                return value
        return ""


@dataclass(frozen=True, slots=True)
class TileListFact:
    """A generator function's tile list and the tactics it builds from it."""

    path: str
    function: str  # the generator function's local qualname
    variable: str  # the list's name ('cta_shapes_mnk')
    line: int
    col: int
    tiles: tuple[TileRow, ...]
    choices: tuple[TacticChoice, ...]
    arch: int | None  # the SM the generator builds for (`arch = 120`), None when not read
    stages: int | None  # the generator's stage count; the vocabulary says which value means "auto"
    note: str = ""  # what was not read (a filter, an axis), '' when the lists were read whole
    # where the tiles are written: '' a Python generator's list; 'cute' CuTe shapes in a launcher's
    # body, 'alias' CuTe shapes a type alias passes to a config template (one tactic each), 'loops'
    # a kernel template's loops over tile extents (the C++ kinds are measured by compiling the unit)
    kind: str = ""


class Fit(str, Enum):
    DOES_NOT_FIT = "does not fit"  # the lower bound exceeds the limit
    CANNOT_TELL = "cannot tell"  # the lower bound is at or under the limit: only a measurement settles it
    FITS = "fits"  # measured (compile probe) at or under the limit: a block may use exactly its limit


@dataclass(frozen=True, slots=True)
class Bound:
    """A lower bound on one tactic's shared memory per block, with the arithmetic that gives it."""

    nbytes: int
    arithmetic: str  # "2 stages × (128×128 A + 256×128 B) × 1 B (e4m3) = 98,304 B"
    stages: int
    stage_policy: str  # 'StageCountAutoCarveout (at least 2 stages)', 'StageCount<3>'
    elements: str  # 'e2m1 × e2m1, ue4m3 scale factors per 16'


@dataclass(frozen=True, slots=True)
class LinkedTileList:
    """A tile list with a gate that admits targets for it: the evidence chain runs from the gate
    through the calls to the generator and its list."""

    fact: TileListFact
    gate: str  # gate id
    admits: tuple[int, ...]  # the compute capabilities the gate admits
    chain: tuple[Evidence, ...]
    launcher: str = ""  # the file name of the launcher the generated instantiations include, '' when not named
    defines: tuple[str, ...] = ()  # 'NAME' or 'NAME=VALUE': what the gate's spec passes with -D (the compile probe builds with them)

    def serves(self, cc: int) -> bool:
        """The gate admits `cc` and the generator builds for its major (an SM120 generator for 12.x)."""
        return cc in self.admits and self.fact.arch is not None and self.fact.arch // 10 == cc // 10


@dataclass(frozen=True, slots=True)
class TacticSize:
    """The compiler's measurement of one tactic for one target (`scan --compile-probe`): the size of
    its kernel's whole shared storage, or why there is none."""

    path: str  # the tile list's file and line
    line: int
    choice: TacticChoice
    target: str
    nbytes: int | None
    note: str = ""  # why `nbytes` is None: a compile error, a timeout, a tactic the rows cannot spell


def tactics_of(fact: TileListFact, measured: set[TacticChoice] | frozenset[TacticChoice]) -> tuple[TacticChoice, ...]:
    """The tactics of a tile list: its choices, where the tiles are C++ the instantiations the
    compile probe told apart instead (each tile's measured variants; a tile with none stays whole)."""
    if not fact.kind:
        return fact.choices
    found = sorted((c for c in measured if 0 <= c.tile < len(fact.tiles)), key=lambda c: (c.tile, c.axes))
    sized = {c.tile for c in found}
    return tuple(sorted([*found, *(c for c in fact.choices if c.tile not in sized)], key=lambda c: (c.tile, c.axes)))


fast_pickling(globals())
