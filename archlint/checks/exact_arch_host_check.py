"""AL108 exact-arch-host-check: a host check admits a capability (`version_num == 120`) and refuses
a newer one of the same major, for which the build list compiling the kernels it reaches builds
them too (`12.0f` serves 12.1, plain `12.0` runs there as well)."""

from __future__ import annotations

from typing import Iterator

from archlint.checks.context import Context, target_list
from archlint.checks.layers import cc_text, gate_hop, host_arms, list_hop, lists_by_unit, native, where
from archlint.knowledge.arch import Target
from archlint.model.findings import Finding
from archlint.model.gates import gate_location


def check(ctx: Context) -> Iterator[Finding]:
    lists = lists_by_unit(ctx)
    if not lists:
        return
    for result, arms in host_arms(ctx, lists):
        assert result.layers is not None
        gate, refused = result.gate, result.layers.refused
        for arm, built in arms:
            newer = sorted({cc for cc in refused for admitted in arm.ccs
                            if cc // 10 == admitted // 10 and cc > admitted
                            and any(cc in native(block) for _, block in built)})
            if not newer:
                continue
            names = tuple(Target(cc, "").name for cc in newer)
            serving = [(unit, block.gate) for unit, block in built if any(cc in native(block) for cc in newer)]
            unit, block = serving[0]
            evidence = (gate_hop(gate, f"host check `{gate.text}` takes `{arm.text}` for {cc_text(arm.ccs)} only"),
                        *(list_hop(u, b, f"which builds {target_list(names)} too") for u, b in serving[:4]))
            yield ctx.finding(
                "AL108", gate_location(gate), targets=names, symbol=gate.function, evidence=evidence,
                check=gate.text, admitted=cc_text(arm.ccs), arch=target_list(names), unit=unit,
                build_list=block.text, list_at=where(block),
            )
            break
