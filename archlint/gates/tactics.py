"""Tile lists linked to the gates that admit targets for them.

A generator's tile list (`extract/python/tactics.py`) is linked to every gate whose guarded
functions reach the generator through Python calls (`gen_cutlass_fused_moe_sm120_module` ->
`gen_cutlass_fused_moe_module` -> `generate_gemm_operations` -> `generate_sm120_operations` ->
`generate_sm120_grouped_gemm_operations`), and to the launcher its module names for the
generator's arch (rules/kb/cutlass.toml, `[[launcher]]`). The evidence chain is that walk.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import replace

from archlint.gates.units import module_path
from archlint.knowledge.cutlass import CutlassKnowledge, Launcher, load_cutlass
from archlint.link.python import PyIndex
from archlint.model.findings import Evidence, EvidenceKind, Location
from archlint.model.gates import Gate, gate_location
from archlint.model.python import PyExpr
from archlint.model.tactics import LinkedTileList, TileListFact

_MAX_CALL_DEPTH = 8


def link_tile_lists(pyindex: PyIndex | None, gates: tuple[Gate, ...],
                    knowledge: CutlassKnowledge | None = None) -> tuple[LinkedTileList, ...]:
    if pyindex is None:
        return ()
    lists = tile_list_facts(pyindex)
    return ordered_tile_lists(linked for gate in gates for linked in gate_tile_lists(pyindex, gate, lists, knowledge))


TileLists = dict[str, tuple[str, TileListFact]]  # generator function's full qualname -> (module, its tile list)


def tile_list_facts(pyindex: PyIndex) -> TileLists:
    """The tile lists of the modules read so far, by the generator function holding each."""
    return {f"{module}.{fact.function}": (module, fact) for module, facts in pyindex.loaded() for fact in facts.tactics}


def gate_tile_lists(pyindex: PyIndex, gate: Gate, lists: TileLists,
                    knowledge: CutlassKnowledge | None = None) -> tuple[LinkedTileList, ...]:
    """The tile lists of the generators the gate's guarded functions call."""
    if not lists:
        return ()
    knowledge = knowledge or load_cutlass()
    linked = []
    for qualname, chain in _reached(pyindex, gate, set(lists)).items():
        module, fact = lists[qualname]
        launcher = _launcher(pyindex, module, fact, knowledge)
        if fact.arch is None and launcher is not None and len(launcher.archs) == 1:
            fact = replace(fact, arch=launcher.archs[0])  # a list with no arch of its own builds the launcher's
        fact = _with_template_swaps(fact, launcher)
        hop = Evidence(Location(fact.path, fact.line, fact.col),
                       f"tile list `{fact.variable}` of `{fact.function}` ({len(fact.tiles)} tiles)", EvidenceKind.CONSTRUCT,
                       name=fact.variable)
        linked.append(LinkedTileList(fact, gate.id, gate.admits, chain + (hop,),
                                     launcher.names[0] if launcher else "", _defines(pyindex, gate, chain)))
    return tuple(linked)


def ordered_tile_lists(linked: Iterable[LinkedTileList]) -> tuple[LinkedTileList, ...]:
    return tuple(sorted(linked, key=lambda t: (t.fact.path, t.fact.line, t.gate)))


def _with_template_swaps(fact: TileListFact, launcher: Launcher | None) -> TileListFact:
    """A template that instantiates every tile it is rendered with once per swap_ab value (FlashInfer's
    `fp4_gemm_cutlass_sm120.jinja`, `..., true)` and `..., false)`) offers each as a tactic of its own."""
    if launcher is None or not launcher.swaps or any(choice.axis("swap") for choice in fact.choices):
        return fact
    choices = tuple(replace(choice, axes=choice.axes + (("swap", swap),)) for choice in fact.choices for swap in launcher.swaps)
    return replace(fact, choices=choices)


def launcher_of(linked: LinkedTileList, knowledge: CutlassKnowledge) -> Launcher | None:
    return knowledge.launcher_for(linked.launcher, linked.fact.arch) if linked.launcher else None


def _reached(pyindex: PyIndex, gate: Gate, wanted: set[str]) -> dict[str, tuple[Evidence, ...]]:
    """The generator functions among `wanted` the gate's guarded functions call, with the call chain."""
    head: tuple[Evidence, ...] = (Evidence(gate_location(gate), f"gate `{gate.text}`", EvidenceKind.GATE),)
    starts = list(gate.guards) or [gate.function]
    queue = deque((name, head, 0) for name in starts)
    seen = set(starts)
    found: dict[str, tuple[Evidence, ...]] = {}
    module_paths = {module: path for path, module in pyindex.module_of_path.items()}
    while queue:
        name, chain, depth = queue.popleft()
        function = pyindex.functions.get(name)
        hop = chain
        if function is not None and name not in starts:
            hop = chain + (Evidence(Location(module_path(module_paths, name), function.span.line), f"calls `{name}`",
                                    EvidenceKind.CALL, name=name),)
        if name in wanted:
            found[name] = hop
        if depth >= _MAX_CALL_DEPTH:
            continue
        for callee in pyindex.callees(name):
            if callee not in seen:
                seen.add(callee)
                queue.append((callee, hop, depth + 1))
    return found


def _defines(pyindex: PyIndex, gate: Gate, chain: tuple[Evidence, ...]) -> tuple[str, ...]:
    """The -D flags of the gate's spec, and those the functions on the way to the generator write in
    their flag lists (`nvcc_flags = ["-DENABLE_FP4", ...]` handed on to the module generator)."""
    found = list(gate.defines)
    for name in [gate.function] + [hop.name for hop in chain if hop.kind is EvidenceKind.CALL]:
        function = pyindex.functions.get(name)
        module = pyindex.module_of_path.get(function.path) if function is not None else None
        facts = pyindex.modules.get(module) if module else None
        if function is None or facts is None:
            continue
        local = name[len(module) + 1:] if module else name
        for assign in facts.assigns.having(lambda _targets, function: function == local):
            if assign.value.kind == "seq":
                found += [arg.text for arg in assign.value.args if arg.kind == "str" and arg.text.startswith("-D")]
    return tuple(dict.fromkeys(flag[2:] if flag.startswith("-D") else flag for flag in found))


def _launcher(pyindex: PyIndex, module: str, fact: TileListFact, knowledge: CutlassKnowledge) -> Launcher | None:
    """The launcher the generator names (a string holding a known launcher's file name) for the
    generator's arch: in the generator's own function first, then anywhere in its module."""
    facts = pyindex.modules.get(module)
    if facts is None:
        return None
    own = [call.expr for call in facts.calls.having(lambda _callee, function: function == fact.function)]
    own += [assign.value for assign in facts.assigns if assign.function == fact.function]
    rest = [assign.value for assign in facts.assigns if assign.function != fact.function]
    for expr in own + rest:
        for text in _strings(expr):
            launcher = knowledge.launcher_for(text, fact.arch)
            if launcher is not None:
                return launcher
    return None


def _strings(expr: PyExpr) -> list[str]:
    if expr.kind == "str":
        return [expr.text]
    return [text for arg in expr.args for text in _strings(arg)]
