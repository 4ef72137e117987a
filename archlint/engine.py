"""The pipeline: discover → extract facts → link graph → evaluate per target → findings → suppress."""

from __future__ import annotations

from dataclasses import dataclass, field

from .model import Diagnostic, Finding, Suppression, Verdict, Evidence, Location


@dataclass(frozen=True)
class ScanOptions:
    paths: tuple[str, ...]
    targets: tuple[str, ...] = ()  # target names ('sm_120a'); empty = config, else the KB defaults
    jobs: int = 0  # 0 = CPU count
    use_cache: bool = True
    include_dirs: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()  # glob patterns, relative to the root
    select: tuple[str, ...] = ()  # rule ids or names; empty = all
    ignore: tuple[str, ...] = ()
    report_paths: tuple[str, ...] = ()  # pre-commit style: only report findings in these files (root-relative)
    max_file_bytes: int = 4 * 1024 * 1024


@dataclass(frozen=True)
class TargetVerdict:
    target: str
    verdict: Verdict
    reason: str
    evidence: tuple[Evidence, ...] = ()
    empty_kernels: tuple[str, ...] = ()  # kernels left empty for this target, also when GENUINE


@dataclass(frozen=True)
class GateReport:
    """One gate and its verdict for every target it excludes."""

    gate_id: str
    text: str
    location: Location
    admits: tuple[str, ...]  # target names admitted, among those evaluated
    verdicts: tuple[TargetVerdict, ...]
    sources: tuple[str, ...] = ()  # root-relative translation units the gate's builds compile


@dataclass(frozen=True)
class ScanResult:
    root: str  # absolute path all finding paths are relative to
    findings: tuple[Finding, ...]
    diagnostics: tuple[Diagnostic, ...]
    gates: tuple[GateReport, ...] = ()
    files_scanned: int = 0
    targets: tuple[str, ...] = ()
    suppressions: tuple[tuple[str, tuple[Suppression, ...]], ...] = field(default=())


def scan(options: ScanOptions) -> ScanResult:
    """Run the whole pipeline over the given paths."""
    from .pipeline import run

    return run(options)
