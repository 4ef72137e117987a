"""What a unit leaves unseen: `#include`s not found in the scanned trees, and template placeholders
that stand for code the JIT renders in. A host-only header fetched with prebuilt kernels
(rules/kb/prebuilt.toml) loses nothing archlint could judge, as a toolkit header does not."""

from __future__ import annotations

from archlint.judge.hits import SETTLE_BY_INCLUDE_DIR, Hit, HitKind
from archlint.judge.view import Judging, TargetView
from archlint.knowledge.prebuilt import load_prebuilt
from archlint.link.cuda import ResolvedInclude
from archlint.model.cuda import CudaFacts
from archlint.model.findings import Evidence, EvidenceKind, Location


def lost_includes(judging: Judging, path: str) -> tuple[ResolvedInclude, ...]:
    """A file's includes found neither in the scanned trees nor among the toolkit's or framework
    headers, except host-only headers (what they mean for a unit is judged in judge/prebuilt.py)."""
    knowledge = load_prebuilt()
    return tuple(resolved for resolved in judging.index.resolved(path) if resolved.target is None and not resolved.external
                 and knowledge.host_header(resolved.include.target) is None)


def unresolved_includes(view: TargetView, facts: CudaFacts, chain: tuple[Evidence, ...], out: list[Hit]) -> None:
    for resolved in view.judging.shared(lost_includes, facts.path):
        include = resolved.include
        if view.truth(facts.path, include.region) == 0:
            continue
        location = Location(facts.path, include.line)
        message = f"#include \"{include.target}\" not found in the scanned trees"
        out.append(Hit(HitKind.UNRESOLVED, location, message, chain, False, SETTLE_BY_INCLUDE_DIR))


def code_holes(facts: CudaFacts, chain: tuple[Evidence, ...], unresolved: list[Hit], assumed: list[Hit]) -> None:
    for hole in facts.template_holes:
        if hole.kind not in ("code", "filled"):
            continue
        location = Location(facts.path, hole.line)
        placeholder = f"template placeholder `{{{{ {hole.name} }}}}`"
        if hole.kind == "filled":
            message = f"{placeholder} {hole.why}"
            hop = Evidence(location, message, EvidenceKind.TEMPLATE)
            assumed.append(Hit(HitKind.ASSUMED, location, message, chain + (hop,), True))
        else:
            message = f"{placeholder} stands for code the JIT renders in" + (f" ({hole.why})" if hole.why else "")
            unresolved.append(Hit(HitKind.UNRESOLVED, location, message, chain, False))
