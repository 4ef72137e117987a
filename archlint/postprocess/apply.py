"""The one post-processing path: `archlint scan` and `archlint runtime` both take it (`archlint
graph` reports no findings; it shares only the config reading, `config.read_settings`).

From a ScanResult and the settings, in this order: every path is made relative to the report root
(the repository's top, see postprocess/paths.py); findings of rules that do not run are dropped;
in-source suppressions are matched (AL900 for an unused one, AL901 for an unknown id, AL903 for
a `# noqa:` naming archlint rules); each finding takes its rule's level (`none` drops it);
per-file ignores and the report paths (pre-commit: a finding stays when its location or any hop
of its evidence is in one of them) leave findings out; a baseline sets aside the findings an earlier report had.
The settings come in as values: the config file is read above this stage.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import TypeVar

from archlint.knowledge.rules import RuleInfo, load_rules
from archlint.model.findings import Diagnostic, Finding, Level
from archlint.model.gates import GateReport
from archlint.model.scan import ScanResult
from archlint.postprocess.baseline import filter_new
from archlint.postprocess.levels import relevel
from archlint.postprocess.paths import gate_paths, rebase, scan_prefix, touched_paths
from archlint.postprocess.per_file_ignores import ignored_by_path
from archlint.postprocess.suppress import META_RULES, apply_suppressions

_Item = TypeVar("_Item")


@dataclass(frozen=True)
class PostprocessSettings:
    """Which findings are reported, and at which level: config and flags, rule names resolved to ids."""

    active: frozenset[str]  # rules that run: select (or every rule) minus ignore
    levels: Mapping[str, Level] = field(default_factory=dict)  # rule id -> effective level
    per_file_ignores: tuple[tuple[str, frozenset[str]], ...] = ()  # (glob, rule ids)
    no_suppress: bool = False  # every `archlint: ignore[...]` comment is passed over; no AL900/AL901/AL903
    show_suppressed: bool = False  # suppressed findings are listed too
    report_paths: tuple[str, ...] = ()  # report-root-relative files to report on; () = all
    report_root: str = ""  # absolute folder reported paths are relative to; "" = the scan root
    baseline: Mapping[str, int] | None = None  # fingerprint -> count, from an earlier report


@dataclass(frozen=True)
class Postprocessed:
    """What a front end reports, counts and acts on."""

    root: str  # absolute: the folder every path below is relative to
    shown: tuple[Finding, ...]  # sorted: the new findings, and the suppressed ones when asked for
    unsuppressed: tuple[Finding, ...]  # before the baseline is applied (what a new baseline records)
    new: tuple[Finding, ...]  # unsuppressed, not in the baseline: what fails the run, what fixes apply to
    suppressed: int  # findings silenced in source, shown or not
    baselined: int  # findings the baseline matched, left out
    diagnostics: tuple[Diagnostic, ...]  # those in the report paths
    gates: tuple[GateReport, ...]  # those in the report paths

    def fails(self, fail_on: Level) -> bool:
        """Some new finding is at or above `fail_on` (never, for `none`)."""
        return fail_on is not Level.NONE and any(f.level.rank >= fail_on.rank for f in self.new)


def postprocess(
    result: ScanResult, settings: PostprocessSettings, rules: Mapping[str, RuleInfo] | None = None
) -> Postprocessed:
    rules = load_rules() if rules is None else rules
    prefix = ""
    if settings.report_root:
        prefix = scan_prefix(result.root, settings.report_root)
        result = rebase(result, settings.report_root)
    findings = _settled(result, settings, rules, prefix)
    unsuppressed = [f for f in findings if not f.suppressed]
    suppressed = [f for f in findings if f.suppressed]
    new, baselined = unsuppressed, 0
    if settings.baseline is not None:
        new, baselined = filter_new(unsuppressed, Counter(settings.baseline))
    shown = new + (suppressed if settings.show_suppressed else [])
    return Postprocessed(
        root=result.root,
        shown=tuple(sorted(shown, key=Finding.sort_key)),
        unsuppressed=tuple(unsuppressed),
        new=tuple(new),
        suppressed=len(suppressed),
        baselined=baselined,
        diagnostics=_in_reported(result.diagnostics, settings.report_paths, lambda d: {d.path}),
        gates=_in_reported(result.gates, settings.report_paths, gate_paths),
    )


def _settled(result: ScanResult, settings: PostprocessSettings, rules: Mapping[str, RuleInfo], prefix: str) -> list[Finding]:
    """Select/ignore, suppressions (AL900/AL901/AL903), levels, per-file ignores, report paths; sorted.
    Per-file-ignore globs match a path from the report root or from the scan root (`prefix` below it)."""
    findings = [f for f in result.findings if f.rule in settings.active and f.rule not in META_RULES]
    if settings.no_suppress:
        findings = [replace(f, suppressed=False) if f.suppressed else f for f in findings]
    else:
        by_path = {path: tuple(suppressions) for path, suppressions in result.suppressions}
        findings, meta = apply_suppressions(findings, by_path, rules, active_rules=settings.active)
        findings += [m for m in meta if m.rule in settings.active]
    findings = relevel(findings, settings.levels)
    findings = [f for f in findings if not ignored_by_path(f, settings.per_file_ignores, prefix)]
    if settings.report_paths:
        wanted = set(settings.report_paths)
        findings = [f for f in findings if not wanted.isdisjoint(touched_paths(f))]
    return sorted(findings, key=Finding.sort_key)


def _in_reported(items: Iterable[_Item], report_paths: tuple[str, ...], paths_of: Callable[[_Item], set[str]]) -> tuple[_Item, ...]:
    if not report_paths:
        return tuple(items)
    wanted = set(report_paths)
    return tuple(item for item in items if not wanted.isdisjoint(paths_of(item)))
