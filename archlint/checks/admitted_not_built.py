"""AL107 admitted-not-built: a host check (or a Python gate, through a custom op with no host check)
admits a target into code that every build list compiling it leaves that target out of: nothing is
built for it."""

from __future__ import annotations

from typing import Iterator

from archlint.checks.context import Context, GateResult, target_list
from archlint.knowledge.arch import known_ccs
from archlint.checks.layers import built_by, gate_hop, host_arms, list_hop, lists_by_unit, op_hops, where
from archlint.model.findings import Evidence, Finding
from archlint.model.gates import Gate, gate_location


def check(ctx: Context) -> Iterator[Finding]:
    lists = lists_by_unit(ctx)
    if not lists:
        return
    for result, arms in host_arms(ctx, lists):
        gate = result.gate
        for arm, built in arms:
            assert result.layers is not None
            missing = _unbuilt(ctx, arm.ccs, result.layers.refused, built)
            if missing:
                head = gate_hop(gate, f"host check `{gate.text}` lets {target_list(missing)} take `{arm.text}`")
                yield _finding(ctx, gate, missing, (head,), built)
    for result in ctx.gate_results:
        gate, layers = result.gate, result.layers
        if layers is None or not layers.ops or not gate.exact:
            continue
        for link in layers.ops:
            if link.checks:
                continue  # the host check is the layer below: its own finding
            built = built_by(dict.fromkeys((*link.units, *link.reached)), lists)
            missing = _unbuilt(ctx, gate.admits, tuple(cc for cc in known_ccs() if cc not in set(gate.admits)), built)
            if missing:
                head = gate_hop(gate, f"gate `{gate.text}` admits {target_list(missing)}")
                yield _finding(ctx, gate, missing, (head, *op_hops(link)), built)
                break


def _unbuilt(ctx: Context, admitted: tuple[int, ...], refused: tuple[int, ...],
             built: list[tuple[str, GateResult]]) -> tuple[str, ...]:
    """The scan targets `admitted` lets in that no build list compiling the reached units builds
    (every such list leaves them out). Only a target above some capability the gate refuses counts:
    a check that refuses 12.x alone (`if (version_num >= 120) NOT_IMPLEMENTED(...)` for one dtype)
    lets older GPUs through because it is no capability gate for them, not because it admits them."""
    if not built:
        return ()
    return tuple(t.name for t in ctx.targets if t.cc in set(admitted) and any(cc < t.cc for cc in refused)
                 and all(t.cc not in set(block.gate.admits) for _, block in built))


def _finding(ctx: Context, gate: Gate, missing: tuple[str, ...], head: tuple[Evidence, ...],
             built: list[tuple[str, GateResult]]) -> Finding:
    unit, block = built[0][0], built[0][1].gate
    hops = tuple(list_hop(u, b.gate, f"which leaves out {target_list(missing)}") for u, b in built[:4])
    return ctx.finding(
        "AL107", gate_location(gate), targets=missing, symbol=gate.function, evidence=head + hops,
        gate=gate.text, arch=target_list(missing), unit=unit, build_list=block.text, list_at=where(block),
    )
