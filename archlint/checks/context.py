"""What every check sees: linked facts, the knowledge base, targets and gate verdicts. No file access."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from ..analysis import Analysis, TargetView
from ..arch import Target
from ..engine import TargetVerdict
from ..kb import KnowledgeBase
from ..link import CudaIndex
from ..model import Evidence, Finding, Fix, Location
from ..registry import RuleInfo, effective_level, load_rules


@dataclass(frozen=True)
class GateResult:
    gate: object  # gates.Gate
    sources: tuple[str, ...]
    excluded: tuple[TargetVerdict, ...]  # one per excluded target
    admitted: tuple[Analysis, ...]  # analyses for admitted targets (AL105)


@dataclass
class Context:
    index: CudaIndex
    kb: KnowledgeBase
    targets: tuple[Target, ...]
    gate_results: tuple[GateResult, ...] = ()
    file_targets: dict[str, tuple[Target, ...]] = field(default_factory=dict)
    levels: dict[str, str] = field(default_factory=dict)
    live: set[tuple[str, str]] | None = None  # with gates: (path, function) compiled by an admitted build

    def is_live(self, path: str, function: str) -> bool:
        """In a scan with gates, CUDA-side rules speak only of code some gate's build compiles;
        without gates (a plain CUDA library) every file counts."""
        return self.live is None or (path, function) in self.live

    @cached_property
    def rules(self) -> dict[str, RuleInfo]:
        return load_rules()

    def targets_for(self, path: str) -> tuple[Target, ...]:
        """Targets a file is built for: those of the gates that reach it, else every scan target."""
        return self.file_targets.get(path, self.targets)

    def view(self, target: Target) -> TargetView:
        cache = self.__dict__.setdefault("_views", {})
        if target not in cache:
            cache[target] = TargetView(self.index, self.kb, target)
        return cache[target]

    def finding(self, rule_id: str, location: Location, *, targets: tuple[str, ...] = (), evidence: tuple[Evidence, ...] = (),
                symbol: str = "", fixes: tuple[Fix, ...] = (), **fields: object) -> Finding:
        rule = self.rules[rule_id]
        return Finding(
            rule=rule_id,
            level=effective_level(rule_id, self.levels),
            message=rule.format_message(**fields),
            location=location,
            targets=targets,
            evidence=evidence,
            symbol=symbol,
            fixes=fixes,
        )


def target_list(names) -> str:
    names = list(names)
    return ", ".join(names) if len(names) <= 4 else ", ".join(names[:4]) + f" and {len(names) - 4} more"
