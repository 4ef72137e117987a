"""AL106 host-refuses-admitted: a Python gate admits a target into code that calls a custom op, and
the C++ host check of that op refuses the target."""

from __future__ import annotations

from typing import Iterator

from archlint.checks.context import Context, target_list
from archlint.checks.layers import cc_text, gate_hop, host_results, op_hops, results_by_id, where
from archlint.model.findings import Finding
from archlint.model.gates import gate_location


def check(ctx: Context) -> Iterator[Finding]:
    if not host_results(ctx):
        return
    by_id = results_by_id(ctx)
    for result in ctx.gate_results:
        gate, layers = result.gate, result.layers
        if layers is None or not layers.ops or not gate.exact:
            continue
        admitted = [t for t in ctx.targets if t.cc in set(gate.admits)]
        reported: set[str] = set()
        for link in layers.ops:
            for check_id in link.checks:
                host = by_id.get(check_id)
                if host is None or host.layers is None or check_id in reported:
                    continue
                refused = tuple(t.name for t in admitted if t.cc in set(host.layers.refused))
                if not refused:
                    continue
                reported.add(check_id)
                says = f"refuses {target_list(refused)}; admits {cc_text(host.gate.admits) or 'nothing'}"
                evidence = (gate_hop(gate, f"gate `{gate.text}` admits {target_list(refused)}"), *op_hops(link),
                            gate_hop(host.gate, f"host check `{host.gate.text}` {says}"))
                yield ctx.finding(
                    "AL106", gate_location(gate), targets=refused, symbol=gate.function, evidence=evidence,
                    gate=gate.text, arch=target_list(refused), op=f"{link.call.namespace}.{link.call.op}",
                    check=host.gate.text, check_at=where(host.gate),
                )
