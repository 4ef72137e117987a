"""AL204 smem-over-budget: a shared-memory request above a target's per-block limit (a constant, or
a size computed for every instantiation of the function that makes it), and a CUTLASS tile whose
tactics' lower bound is above it (`smem_tactics`)."""

from __future__ import annotations

from typing import Iterator

from archlint.checks import smem_tactics
from archlint.checks.context import Context, target_list
from archlint.judge.smem import HOST_SMEM_KINDS, arithmetic, least_bytes, smem_limit
from archlint.model.findings import Evidence, EvidenceKind, Finding, Location


def check(ctx: Context) -> Iterator[Finding]:
    for path in ctx.file_paths():
        facts = ctx.index.files[path]
        for request in facts.smem:
            nbytes = least_bytes(request)
            if nbytes is None:
                continue
            host = request.kind in HOST_SMEM_KINDS
            over = [t for t in ctx.targets_at(path, request.function, request.region)
                    if nbytes > smem_limit(ctx.kb, t, request) and ctx.view(t).truth(path, request.region, host=host) != 0]
            if not over:
                continue
            location = Location(path, request.line, request.col)
            names = tuple(t.name for t in over)
            limit = smem_limit(ctx.kb, over[0], request)
            profile = ctx.kb.profile(over[0].cc)
            computed = (Evidence(location, arithmetic(request, request.sizes), EvidenceKind.SMEM),) if request.sizes else ()
            yield ctx.finding(
                "AL204", location, targets=names, symbol=request.function,
                properties=(("nbytes", str(nbytes)), ("limit", str(limit)), ("kind", request.kind)),
                evidence=computed + (Evidence(location, f"{profile.name}: {profile.smem_per_block_optin:,} bytes per block opt-in, "
                                              f"{profile.smem_per_sm:,} per SM; {profile.source}", EvidenceKind.LIMIT),),
                request=request.text, nbytes=f"{nbytes:,}", arch=target_list(names), limit=f"{limit:,} bytes",
            )
    yield from smem_tactics.check(ctx)
