"""What every check sees: linked facts, the knowledge base, targets and gate verdicts. No file access."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Set
from dataclasses import dataclass, field
from functools import cached_property, lru_cache

from archlint.judge.analysis import Analysis
from archlint.judge.view import Judging, TargetView
from archlint.knowledge.arch import Target, default_targets, known_ccs, sorted_targets
from archlint.knowledge.kb import KnowledgeBase
from archlint.knowledge.rules import RuleInfo, effective_level, load_rules
from archlint.link.cuda import CudaIndex
from archlint.model.findings import Evidence, EvidenceKind, Finding, Fix, Location, Verdict
from archlint.model.gates import Gate, TargetVerdict, gate_location
from archlint.model.host import Layers
from archlint.model.records import fast_pickling
from archlint.model.tactics import LinkedTileList, TacticSize

@lru_cache(maxsize=1)
def reference_targets() -> tuple[Target, ...]:
    """Every plain target and the default ones: what a condition is evaluated for to tell whether it
    depends on the target."""
    return tuple(sorted({*(Target(cc, "") for cc in known_ccs()), *default_targets()}))


# (path, function qualname, '' for file scope) -> the admitted builds that compile it
LiveTable = Mapping[tuple[str, str], frozenset[Target]]


@dataclass(frozen=True, slots=True)
class GateResult:
    gate: Gate
    sources: tuple[str, ...]
    excluded: tuple[TargetVerdict, ...]  # one per excluded target
    admitted: tuple[Analysis, ...]  # analyses for admitted targets (AL105)
    layers: Layers | None = None  # GuardedUnits.layers: the op calls or host-check arms behind the gate


def live_table(results: Iterable[GateResult], only: Set[tuple[str, str]] | None = None,
               paths: Set[str] | None = None) -> LiveTable:
    """For each (path, function) compiled by some admitted build, the builds that compile it;
    `only`: for those (path, function) alone; `paths`: for the functions of those files alone."""
    live: dict[tuple[str, str], set[Target]] = {}
    for result in results:
        for analysis in result.admitted:
            reached: Iterable[tuple[str, str]] = analysis.reached
            if only is not None:
                reached = [key for key in analysis.reached if key in only]
            elif paths is not None:
                reached = [key for key in analysis.reached if key[0] in paths]
            for key in reached:
                live.setdefault(key, set()).add(analysis.target)
    return {key: frozenset(targets) for key, targets in live.items()}


@dataclass(frozen=True)
class Context:
    """Built once, after every gate is judged. `live` is None in a scan without gates (a plain CUDA
    library): then every scan target builds every file. So it does the files no gate's units can
    include (`free`), in a scan with gates."""

    judging: Judging
    targets: tuple[Target, ...]
    gate_results: tuple[GateResult, ...] = ()
    live: LiveTable | None = None  # live_table(gate_results) when there are gates, for `paths` alone if given
    paths: tuple[str, ...] | None = None  # the files the file rules visit; None = every file
    levels: Mapping[str, str] = field(default_factory=dict)
    free: frozenset[str] = frozenset()  # CUDA files outside every gate's units' include closure
    tile_lists: tuple[LinkedTileList, ...] = ()  # CUTLASS generator tile lists with the gates admitting them
    tactic_sizes: tuple[TacticSize, ...] | None = None  # the compile probe's measurements; None: not probed

    @classmethod
    def judged(cls, judging: Judging, targets: tuple[Target, ...], results: tuple[GateResult, ...],
               paths: tuple[str, ...] | None = None, free: frozenset[str] = frozenset(),
               tile_lists: tuple[LinkedTileList, ...] = ()) -> Context:
        live = live_table(results, paths=None if paths is None else set(paths)) if results else None
        return cls(judging, targets, results, live, paths, free=free, tile_lists=tile_lists)

    @property
    def index(self) -> CudaIndex:
        return self.judging.index

    @property
    def kb(self) -> KnowledgeBase:
        return self.judging.kb

    def file_paths(self) -> tuple[str, ...]:
        """The CUDA files the file rules visit (`paths` may name Python files too: a tile list's)."""
        files = self.index.files
        return tuple(sorted(files)) if self.paths is None else tuple(path for path in self.paths if path in files)

    def targets_for(self, path: str, function: str = "") -> tuple[Target, ...]:
        """Targets a piece of code is built for. In a scan with gates: the admitted builds of the
        gates whose units compile it (file scope: whose units include the file); without gates (a
        plain CUDA library), and in a file no gate's units include, every scan target."""
        if self.live is None or path in self.free:
            return self.targets
        return tuple(sorted(self.live.get((path, function), frozenset())))

    def targets_at(self, path: str, function: str, region: int) -> tuple[Target, ...]:
        """Targets a construct or request under `region` is built for: `targets_for`, except that in
        a file no gate builds only code under a condition that depends on the target counts (see
        `selects_targets`)."""
        if path in self.free and not selects_targets(self.judging, path, region):
            return ()
        return self.targets_for(path, function)

    @cached_property
    def rules(self) -> dict[str, RuleInfo]:
        return load_rules()

    def view(self, target: Target) -> TargetView:
        return self.judging.view(target)

    def finding(self, rule_id: str, location: Location, *, targets: tuple[str, ...] = (), evidence: tuple[Evidence, ...] = (),
                symbol: str = "", fixes: tuple[Fix, ...] = (), properties: tuple[tuple[str, str], ...] = (),
                **fields: object) -> Finding:
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
            properties=properties,
        )


def selects_targets(judging: Judging, path: str, region: int) -> bool:
    """Whether the file's own conditions around a region compile it for some targets and not others
    (its truth differs among every plain target and the default ones). In a file no gate builds,
    that is the only evidence of the targets the code is built for: an unguarded instruction there
    may well be compiled for the one target that has it (FlashInfer's generated kernels, each built
    for its own arch by JIT specs archlint cannot read), while one under `#if __CUDA_ARCH__ >= 1000`
    is meant for every target the condition admits."""
    if region < 0:
        return False
    return judging.shared(_selects_targets, (path, region))


def _selects_targets(judging: Judging, key: tuple[str, int]) -> bool:
    path, region = key
    return len({judging.view(target).truth(path, region) for target in reference_targets()}) > 1


_LISTED_TARGETS = 5


def target_list(names: Iterable[str]) -> str:
    """Target names for a message, in arch order; a long list keeps the newest (the targets a reader
    is bringing up) and counts the older ones."""
    ordered = sorted_targets(names)
    if len(ordered) <= _LISTED_TARGETS:
        return ", ".join(ordered)
    return ", ".join(ordered[-_LISTED_TARGETS:]) + f" (+{len(ordered) - _LISTED_TARGETS} more)"


def gate_evidence(gate: Gate, verdict: TargetVerdict) -> tuple[Evidence, ...]:
    """A verdict's evidence chain, or the gate itself where the verdict has none (nothing resolved
    behind it): every gate finding carries at least one hop, so SARIF gives each a code flow."""
    if verdict.evidence:
        return verdict.evidence
    return (Evidence(gate_location(gate), f"gate `{gate.text}` excludes {verdict.target}", EvidenceKind.GATE),)


def verdict_findings(ctx: Context, rule_id: str, verdict: Verdict) -> list[Finding]:
    """One finding per gate for all the excluded targets that got `verdict`, with the first's reason."""
    findings = []
    for result in ctx.gate_results:
        matching = [v for v in result.excluded if v.verdict is verdict]
        if matching:
            names = tuple(v.target for v in matching)
            findings.append(ctx.finding(
                rule_id, gate_location(result.gate), targets=names, symbol=result.gate.function,
                evidence=gate_evidence(result.gate, matching[0]), gate=result.gate.text, arch=target_list(names),
                reason=matching[0].reason,
            ))
    return findings


fast_pickling(globals())
