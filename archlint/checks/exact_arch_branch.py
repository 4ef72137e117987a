"""AL203 exact-arch-branch: `__CUDA_ARCH__ == N` or a closed range keeps newer targets off a path."""

from __future__ import annotations

from typing import Iterator

from archlint.checks.context import Context, target_list
from archlint.knowledge.arch import Target, known_ccs
from archlint.lang.cpp.evaluate import Evaluator
from archlint.model.cexpr import Binary, Expr
from archlint.model.cuda import Region
from archlint.model.findings import Evidence, EvidenceKind, Finding, Location


def check(ctx: Context) -> Iterator[Finding]:
    plain = tuple(Target(cc, "") for cc in known_ccs())
    evaluators = {t: Evaluator(t, ctx.index.bindings) for t in plain}
    for path in ctx.file_paths():
        if ctx.live is not None and not ctx.targets_for(path):
            continue  # no gate's build compiles this file
        for region in ctx.index.files[path].regions:
            if "__CUDA_ARCH__" not in region.text or region.directive not in ("if", "elif"):
                continue
            own = _own_condition(region)
            admitted = [t for t in plain if evaluators[t].truth(own) == 1]
            decided = all(evaluators[t].truth(own) is not None for t in plain)
            if not admitted or not decided or admitted[0] == plain[0] or admitted[-1] == plain[-1]:
                continue
            newer = tuple(t.name for t in plain if t > admitted[-1])
            location = Location(path, region.line)
            yield ctx.finding(
                "AL203", location, targets=newer,
                evidence=(Evidence(location, f"true only for {target_list(t.name for t in admitted)}", EvidenceKind.CONDITION),),
                condition=region.text, admitted=target_list(t.name for t in admitted), arch=target_list(newer),
            )


def _own_condition(region: Region) -> Expr:
    """An #elif's own condition, without the negations of the earlier branches."""
    if region.directive == "elif" and isinstance(region.cond, Binary) and region.cond.op == "&&":
        return region.cond.right
    return region.cond
