"""What a scan is asked to do, and what it returns."""

from __future__ import annotations

from dataclasses import dataclass, field

from archlint.model.binary import BinaryFacts
from archlint.model.findings import Diagnostic, Finding, Suppression
from archlint.model.gates import GateReport
from archlint.model.records import fast_pickling


@dataclass(frozen=True, slots=True)
class ScanOptions:
    paths: tuple[str, ...]
    targets: tuple[str, ...] = ()  # target names ('sm_120a'); empty = config, else the KB defaults
    jobs: int = 0  # 0 = CPU count
    use_cache: bool = True
    include_dirs: tuple[str, ...] = ()
    defines: tuple[str, ...] = ()  # `NAME[=VALUE]` (--define): set in every build, over the spec's own -D flags
    exclude: tuple[str, ...] = ()  # glob patterns, relative to the root
    select: tuple[str, ...] = ()  # rule ids or names; empty = all
    ignore: tuple[str, ...] = ()
    report_paths: tuple[str, ...] = ()  # pre-commit style: only report findings in these files (root-relative)
    max_file_bytes: int = 4 * 1024 * 1024
    toolkit: str = ""  # the CUDA toolkit version the project's flag code is read for ('12.8'); '' = the newest known
    compile_probe: bool = False  # measure each CUTLASS tactic's shared storage with nvcc's front end


@dataclass(frozen=True, slots=True)
class ScanResult:
    root: str  # absolute path all finding paths are relative to
    findings: tuple[Finding, ...]
    diagnostics: tuple[Diagnostic, ...]
    gates: tuple[GateReport, ...] = ()
    files_scanned: int = 0
    targets: tuple[str, ...] = ()
    suppressions: tuple[tuple[str, tuple[Suppression, ...]], ...] = field(default=())
    binaries: tuple[BinaryFacts, ...] = ()  # the prebuilt extension modules scanned and the images each carries


fast_pickling(globals())
