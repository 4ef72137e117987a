"""AL202 silent-noop-branch: an arch conditional covers a kernel's whole body with no #else fallback."""

from __future__ import annotations

from typing import Iterator

from archlint.checks.context import Context, target_list
from archlint.judge.analysis import Hit, HitKind, empty_kernel
from archlint.knowledge.arch import Target
from archlint.model.cuda import CudaFacts, Function
from archlint.model.findings import Finding


def check(ctx: Context) -> Iterator[Finding]:
    for path in ctx.file_paths():
        facts = ctx.index.files[path]
        for function in facts.functions:
            targets = ctx.targets_for(path, function.qualname)
            if function.kind != "global" or not function.body or not targets:
                continue
            hits = {t: empty_kernel(ctx.view(t), facts, function) for t in targets}
            empty: dict[Target, Hit] = {t: hit for t, hit in hits.items() if hit is not None and hit.kind is HitKind.EMPTY_KERNEL}
            if not empty or len(empty) == len(targets):
                continue  # built on none of the targets, or empty everywhere: not an arch question
            first = next(iter(empty.values()))
            names = tuple(t.name for t in empty)
            condition = _condition(facts, function)
            yield ctx.finding(
                "AL202", first.location, targets=names, symbol=function.qualname, evidence=first.chain,
                condition=condition, kernel=function.name, arch=target_list(names),
            )


def _condition(facts: CudaFacts, function: Function) -> str:
    regions = [line.region for line in function.body if line.region >= 0]
    return facts.regions[regions[0]].text if regions else "#if"
