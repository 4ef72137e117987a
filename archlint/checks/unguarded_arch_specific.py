"""AL201 unguarded-arch-specific: an instruction only some targets have, compiled for one that lacks it."""

from __future__ import annotations

from typing import Iterator

from archlint.checks.context import Context, target_list
from archlint.judge.analysis import emits_instruction
from archlint.model.findings import Evidence, EvidenceKind, Finding, Location


def check(ctx: Context) -> Iterator[Finding]:
    for path in ctx.file_paths():
        facts = ctx.index.files[path]
        for construct in facts.constructs:
            targets = ctx.targets_at(path, construct.function, construct.region)
            if not emits_instruction(construct):
                continue
            requirement = ctx.kb.requirement(construct.kind, construct.name)
            if requirement is None:
                continue
            lacking = [t for t in targets if not requirement.supports(t) and ctx.view(t).truth(path, construct.region) == 1]
            if not lacking:
                continue
            location = Location(path, construct.line, construct.col)
            names = tuple(t.name for t in lacking)
            region = facts.regions[construct.region] if construct.region >= 0 else None
            guard = f"under `{region.text}` (line {region.line})" if region else "with no arch guard"
            said = f"compiled for {target_list(names)} {guard}; {requirement.source}"
            evidence = (Evidence(location, said, EvidenceKind.REQUIREMENT, name=construct.name),)
            yield ctx.finding(
                "AL201", location, targets=names, evidence=evidence, symbol=construct.function,
                construct=construct.name, requirement=requirement.describe().removeprefix("needs "),
            )
