"""Variant macros: `-D` names only gate-holding specs pass, each picking a variant of sources several
specs build, and which of them a gate's own build lacks."""

from __future__ import annotations

from dataclasses import replace

from archlint.gates.flagrefs import with_constants
from archlint.link.python import PyIndex
from archlint.model.gates import Gate, GuardedUnits
from archlint.model.python import FlagList, split_define


def _macro(define: str) -> str:
    return split_define(define)[0]


def variant_macros(index: PyIndex, gates: tuple[Gate, ...]) -> frozenset[str]:
    """Macros only the specs that hold gates pass with -D (`-DFLASHINFER_MAMBA_ENABLE_SM100`): each
    picks a variant of sources several specs build. A macro some other function passes (a flag all
    builds get) is not one."""
    return variants_of(macro_passers(index), gates)


MacroPassers = tuple[tuple[str, frozenset[str]], ...]  # macro -> the functions whose own flag lists pass it


def macro_passers(index: PyIndex) -> MacroPassers:
    """Each macro the modules read so far pass with -D in a flag list of their own, with the
    functions passing it. A list's own flags only: a module constant (`common_nvcc_flags`) is flags
    every build may get, as the arch-flags call's common defines are, never a variant."""
    passed_by: dict[str, set[str]] = {}
    for module, facts in index.loaded():
        for flags in facts.flags:
            for define in (*flags.defines, *flags.maybe_defines):
                passed_by.setdefault(_macro(define), set()).add(index.qualify(module, flags.function))
    return tuple((name, frozenset(functions)) for name, functions in passed_by.items())


def variants_of(passers: MacroPassers, gates: tuple[Gate, ...]) -> frozenset[str]:
    owners = {owner for gate in gates for owner in gate.guards}
    if not owners:
        return frozenset()
    return frozenset(name for name, functions in passers if functions <= owners)


def passed_macros(index: PyIndex) -> frozenset[str]:
    """Every macro some scanned build function passes with -D, on any path, the module constants its
    lists name included (every module with a `"-D` string or a flag keyword is read:
    `extract/python/markers.py`)."""
    return frozenset(_macro(define) for _, flags in _every_flag_list(index)
                     for define in (*flags.defines, *flags.maybe_defines))


def _every_flag_list(index: PyIndex) -> list[tuple[str, FlagList]]:
    return [(module, with_constants(index, module, flags)) for module, facts in index.loaded() for flags in facts.flags]


def with_absent_variant_macros(gated: list[tuple[Gate, GuardedUnits]], variants: frozenset[str],
                               passed: frozenset[str] = frozenset()) -> list[tuple[Gate, GuardedUnits]]:
    """(gate, guarded units) pairs, each gate told which variant macros its build lacks: those the
    specs of gates guarding some of the same sources pass and its own spec, whose flags are all read,
    does not. They are undefined in its build. A gate whose flags are all read is also told every
    macro some scanned build passes (`passed`): no other can come from a -D flag."""
    sources = [set(units.sources) for _, units in gated]
    out = []
    for index, (gate, units) in enumerate(gated):
        absent: set[str] = set()
        if gate.flags_complete and units.sources:
            for other_index, (other, _) in enumerate(gated):
                if other_index != index and sources[other_index] & sources[index]:
                    absent.update(_macro(d) for d in other.defines)
            passes = (*gate.defines, *gate.maybe_defines, *(flag.flag for flag in gate.versioned_defines))
            absent = (absent & variants) - {_macro(d) for d in passes}
        passable = tuple(sorted(passed)) if gate.flags_complete and units.sources else None
        out.append((replace(gate, absent_defines=tuple(sorted(absent)), passable_defines=passable), units))
    return out
