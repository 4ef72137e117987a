"""What the layer rules (AL106-AL108) share: a scan's gates by id, the build lists compiling each
unit, and the hops that name each layer. A Python gate reaches C++ through the custom ops it calls
(model.host.OpLink); a host check reaches units through its arms (model.host.ArmReach); a build
list is a gate whose units are the sources it compiles (gates.build_lists)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from archlint.checks.context import Context, GateResult
from archlint.model.findings import Evidence, EvidenceKind, Location
from archlint.model.gates import BUILD_LIST_KIND, HOST_KIND, Gate, gate_location
from archlint.model.host import ArmReach, OpLink


def results_by_id(ctx: Context) -> dict[str, GateResult]:
    return {result.gate.id: result for result in ctx.gate_results}


def host_results(ctx: Context) -> list[GateResult]:
    return [r for r in ctx.gate_results if r.gate.kind == HOST_KIND and r.layers is not None]


Lists = dict[str, list[GateResult]]  # translation unit -> the build lists (as judged gates) compiling it


def lists_by_unit(ctx: Context) -> Lists:
    found: Lists = {}
    for result in ctx.gate_results:
        if result.gate.kind == BUILD_LIST_KIND:
            for unit in result.sources:
                found.setdefault(unit, []).append(result)
    return found


def built_by(units: Iterable[str], lists: Lists) -> list[tuple[str, GateResult]]:
    """Each (unit, build list) pair among `units` that some build list compiles."""
    return [(unit, result) for unit in units for result in lists.get(unit, ())]


def host_arms(ctx: Context, lists: Lists) -> Iterator[tuple[GateResult, list[tuple[ArmReach, list[tuple[str, GateResult]]]]]]:
    """Each host check with its arms, each arm with the (unit, build list) pairs compiling what it reaches."""
    for result in host_results(ctx):
        assert result.layers is not None
        yield result, [(arm, built_by(arm.units, lists)) for arm in result.layers.arms]


def native(result: GateResult) -> frozenset[int]:
    """The capabilities a build list builds code of their own major for."""
    return frozenset(result.layers.native) if result.layers is not None else frozenset()


def cc_text(ccs: Iterable[int]) -> str:
    return ", ".join(f"{cc // 10}.{cc % 10}" for cc in sorted(ccs))


def gate_hop(gate: Gate, says: str) -> Evidence:
    return Evidence(gate_location(gate), says, EvidenceKind.GATE)


def op_hops(link: OpLink) -> tuple[Evidence, ...]:
    """The op call and the registration binding it."""
    call, registration = link.call, link.registration
    return (
        Evidence(Location(call.path, call.line, call.col), f"calls op `{call.namespace}.{call.op}`", EvidenceKind.CALL,
                 name=call.op),
        Evidence(Location(link.registration_path, registration.line, registration.col),
                 f"`{registration.op}` is registered to `{registration.function}`", EvidenceKind.CALL,
                 name=registration.function),
    )


def list_hop(unit: str, gate: Gate, says: str) -> Evidence:
    return Evidence(gate_location(gate), f"{unit} is compiled by `{gate.text}`, {says}", EvidenceKind.BUILDS, source=unit)


def where(gate: Gate) -> str:
    return f"{gate.path}:{gate.line}"
