"""`archlint runtime`: the static verdicts, read in the terms of the GPU in this machine (or a profile).

Reads the device, scans for exactly its target, and reports: AL301 for every gate that shuts the
device out by policy, the GENUINE/EMPTY/UNKNOWN gates with their evidence, AL204 requests re-checked
against the device's own limits, and, on request, what nvcc builds (`--compile-probe`) and what
the driver launches (`--launch-probe`).
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, replace
from pathlib import Path

import click

from archlint import engine
from archlint.config import ConfigError, Settings, read_settings
from archlint.discover import report_root
from archlint.knowledge.arch import TargetError, parse_target
from archlint.knowledge.languages import SOURCE_SUFFIXES
from archlint.knowledge.rules import load_rules
from archlint.model.findings import (
    Evidence,
    EvidenceKind,
    Finding,
    Level,
    Location,
    Verdict,
)
from archlint.model.gates import GateReport, TargetVerdict
from archlint.model.scan import ScanOptions, ScanResult
from archlint.postprocess import PostprocessSettings, postprocess
from archlint.postprocess.paths import rebase
from archlint.runtime import compile_probe, launch_probe
from archlint.runtime.compile_probe import ProbeOptions, probe_units
from archlint.runtime.device import (
    DeviceInfo,
    device_dict,
    format_bytes,
    format_device,
    profile_device,
    read_device,
)
from archlint.runtime.driver import DriverError
from archlint.runtime.launch_probe import limit_sizes, probe_smem

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2
_LEVELS = ("error", "warning", "note", "none")


@dataclass(frozen=True)
class DeviceGate:
    """One gate that shuts the device's target out, and why."""

    gate_id: str
    text: str
    location: Location
    target: str
    verdict: Verdict
    reason: str
    evidence: tuple[Evidence, ...]
    empty_kernels: tuple[str, ...]
    units: tuple[str, ...]  # absolute paths of the translation units it guards, where known
    admits: tuple[str, ...] = ()  # targets the gate admits, among those scanned


@dataclass(frozen=True)
class SmemCheck:
    """A static AL204 request held against this device's limit."""

    location: Location
    nbytes: int
    kb_limit: int | None
    device_limit: int | None
    fits: bool | None  # None when the device limit is unknown


@dataclass(frozen=True)
class RuntimeReport:
    device: DeviceInfo
    target: str
    root: str
    files_scanned: int
    gates: tuple[DeviceGate, ...]
    findings: tuple[Finding, ...]
    smem: tuple[SmemCheck, ...]
    other_findings: int
    diagnostics: int
    probes: tuple[tuple[str, tuple], ...] = ()  # (gate id or '--unit', ProbeResults)
    launches: tuple[launch_probe.SmemProbe, ...] = ()
    fail_on: Level = Level.WARNING  # the lowest level that fails the run: --fail-on, else the config's


class UsageError(Exception):
    """A one-line reason to stop with exit code 2."""


# ---------------------------------------------------------------- the command


@click.command("runtime")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("--device", "device_index", type=int, default=None, help="Driver ordinal of the GPU to read (default 0).")
@click.option("--device-profile", default=None, help="Stand in for a GPU: sm_120, sm_90, 12.0 or 120.")
@click.option("--target-suffix", type=click.Choice(["a", "f", "plain"]), default=None,
              help="Build suffix of the device's target (default: a from 9.0 on, else plain).")
@click.option("--compile-probe", is_flag=True, help="Build each excluded gate's units with nvcc for this target.")
@click.option("--launch-probe", is_flag=True, help="Launch a kernel around the device's shared-memory opt-in limit.")
@click.option("-I", "--include-dir", "include_dirs", multiple=True, help="Include folder for the scan and the compile probe.")
@click.option("-D", "--define", "defines", multiple=True, help="Macro for the compile probe (NAME or NAME=VALUE).")
@click.option("--unit", "units", multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="Also compile-probe this translation unit.")
@click.option("--probe-timeout", type=float, default=180.0, show_default=True, help="Seconds per compile.")
@click.option("--no-cache", is_flag=True, help="Neither read nor write the scan and probe caches.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None, help="Write the report here.")
@click.option("--fail-on", type=click.Choice(_LEVELS), default=None,
              help="Lowest level that fails (default: the config's, else warning).")
@click.option("--config", "config_file", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Use this config file instead of the nearest archlint.toml or pyproject.toml.")
def runtime_command(paths, device_index, device_profile, target_suffix, compile_probe, launch_probe, include_dirs,
                    defines, units, probe_timeout, no_cache, fmt, output, fail_on, config_file):
    """Report the gates that shut this machine's GPU (or a --device-profile) out, and why."""
    try:
        report = build_report(
            paths, device_index, device_profile, target_suffix, compile_probe, launch_probe,
            include_dirs, defines, units, probe_timeout, not no_cache, config_file=config_file, fail_on=fail_on,
        )
    except UsageError as exc:
        click.echo(f"archlint runtime: {exc}", err=True)
        sys.exit(EXIT_USAGE)
    text = render_json(report) if fmt == "json" else render_text(report)
    if output:
        Path(output).write_text(text, encoding="utf-8")
    else:
        click.echo(text, nl=False)
    sys.exit(exit_code(report))


def build_report(paths, device_index, device_profile, target_suffix, compile_probe, launch_probe,
                 include_dirs=(), defines=(), units=(), probe_timeout=180.0, use_cache=True,
                 config_file=None, fail_on=None) -> RuntimeReport:
    info = resolve_device(device_index, device_profile)
    if launch_probe and info.source != "driver":
        raise UsageError("--launch-probe needs a real GPU; a --device-profile cannot launch kernels")
    target = target_for(info, target_suffix)
    settings = read_runtime_settings(paths, target, tuple(include_dirs), config_file, fail_on)
    scanned = tuple(str(p) for p in paths)
    result = run_scan(settings.scan_options(scanned, use_cache=use_cache))
    chosen = replace(settings.postprocess_settings(), report_root=str(report_root(scanned)))
    report = device_report(info, target, result, chosen, settings.fail_on)
    if compile_probe or units:
        probes = run_compile_probes(report, paths, settings.include_dirs, defines, units, probe_timeout, use_cache)
        report = replace(report, probes=probes)
    if launch_probe:
        report = replace(report, launches=run_launch_probe(info, report.smem))
    return report


def resolve_device(device_index: int | None, device_profile: str | None):
    if device_index is not None and device_profile:
        raise UsageError("choose one of --device and --device-profile")
    if device_profile:
        try:
            return profile_device(device_profile)
        except ValueError as exc:
            raise UsageError(str(exc)) from exc
    try:
        return read_device(device_index or 0)
    except DriverError as exc:
        raise UsageError(f"no usable GPU: {exc} (use --device-profile sm_120 to stand in for one)") from exc


def target_for(info, suffix: str | None) -> str:
    if suffix is None:
        suffix = "a" if info.cc >= 90 else "plain"
    name = f"sm_{info.cc}{'' if suffix == 'plain' else suffix}"
    try:
        return parse_target(name).name
    except TargetError as exc:
        raise UsageError(f"{info.name} (compute capability {info.cc_text}): {exc}") from exc


def read_runtime_settings(paths, target: str, include_dirs: tuple[str, ...], config_file, fail_on: str | None) -> Settings:
    """The config as `archlint scan` reads it (the nearest one at or above the first path, or
    --config), with the device's target in place of the config's targets."""
    try:
        return read_settings(paths[0], config_file, targets=(target,), include_dirs=include_dirs, fail_on=fail_on)
    except ConfigError as exc:
        raise UsageError(str(exc)) from exc


def run_scan(options: ScanOptions) -> ScanResult:
    return engine.scan(options)


# ---------------------------------------------------------------- from the scan to the device's terms

_DEVICE_RULES = ("AL204", "AL301")  # what runtime reports itself; the rest it only counts


def device_report(info, target: str, result: ScanResult, chosen: PostprocessSettings,
                  fail_on: Level = Level.WARNING) -> RuntimeReport:
    """The scan in the device's terms. AL301 findings join the scan's before post-processing, so
    suppressions, levels and per-file ignores treat them, and AL204, as `archlint scan` treats its own.
    Paths are from `chosen.report_root` (the repository's top), as post-processing gives them."""
    al301 = tuple(policy_finding(gate, info) for gate in excluded_gates(result, target, info.cc)
                  if gate.verdict == Verdict.POLICY)
    processed = postprocess(replace(result, findings=result.findings + al301), chosen)
    if chosen.report_root:
        result = rebase(result, chosen.report_root)
    gates = tuple(sorted(excluded_gates(result, target, info.cc), key=lambda g: (g.location, g.gate_id)))
    smem, al204 = recheck_smem(processed.new, info, target)
    kept_al301 = tuple(f for f in processed.new if f.rule == "AL301")
    others = sum(1 for f in processed.new if f.rule not in _DEVICE_RULES)
    return RuntimeReport(
        device=info, target=target, root=result.root, files_scanned=result.files_scanned, gates=gates,
        findings=tuple(sorted(kept_al301 + al204, key=Finding.sort_key)), smem=smem, other_findings=others,
        diagnostics=len(processed.diagnostics), fail_on=fail_on,
    )


def excluded_gates(result: ScanResult, target: str, cc: int) -> list[DeviceGate]:
    gates = []
    for gate in result.gates:
        verdict = verdict_for_device(gate.verdicts, target, cc)
        if verdict is None:
            continue
        units = gate_units(gate, result.root)
        empty = tuple(hop.message for hop in verdict.empty_kernels)
        gates.append(DeviceGate(gate.gate_id, gate.text, gate.location, verdict.target, verdict.verdict, verdict.reason,
                                verdict.evidence, empty, units, gate.admits))
    return gates


def verdict_for_device(verdicts: tuple[TargetVerdict, ...], target: str, cc: int) -> TargetVerdict | None:
    """The verdict for the device's target; a verdict for another build suffix of the same CC stands in."""
    exact = [v for v in verdicts if v.target == target]
    if exact:
        return exact[0]
    same_cc = [v for v in verdicts if parse_target(v.target).cc == cc]
    return same_cc[0] if same_cc else None


_HEADER_SUFFIXES = (".cuh", ".h", ".hpp", ".inl", ".cuinl")
_SOURCE_HOPS = (EvidenceKind.BUILDS, EvidenceKind.COMPILES)


def gate_units(gate: GateReport, root: str) -> tuple[str, ...]:
    """Translation units a gate guards: the report's `sources` if it lists them, else those its
    evidence names (the sources its hops build or compile, and locations in translation units)."""
    named = list(gate.sources)
    for verdict in gate.verdicts:
        for hop in verdict.evidence:
            if hop.kind in _SOURCE_HOPS:
                named.append(hop.source)
            if hop.location.path.endswith(SOURCE_SUFFIXES):
                named.append(hop.location.path)
    for verdict in gate.verdicts:  # headers stand in (wrapped in a one-line unit) when no unit is named
        named.extend(hop.location.path for hop in verdict.evidence if hop.location.path.endswith(_HEADER_SUFFIXES))
    units = _existing(root, [p for p in named if p.endswith(SOURCE_SUFFIXES)])
    return units or _existing(root, [p for p in named if p.endswith(_HEADER_SUFFIXES)])


def _existing(root: str, relative: list[str]) -> tuple[str, ...]:
    found = {os.path.normpath(os.path.join(root, p)) for p in relative}
    return tuple(sorted(p for p in found if os.path.isfile(p)))


def policy_finding(gate: DeviceGate, info) -> Finding:
    fields = {"device": info.name, "arch": gate.target, "gate": gate.text}
    message = load_rules()["AL301"].format_message(**fields)
    why = Evidence(gate.location, f"static verdict for {gate.target}: POLICY: {gate.reason}", EvidenceKind.VERDICT)
    return Finding(
        rule="AL301", level=Level.WARNING, message=message, location=gate.location, targets=(gate.target,),
        evidence=(why, *gate.evidence), symbol=gate.gate_id,
        properties=(("device", info.name), ("compute_capability", info.cc_text), ("source", info.source)),
    )


_STATIC_DEFAULT = 48 * 1024


def _int_property(finding: Finding, key: str) -> int | None:
    value = dict(finding.properties).get(key)
    return int(value) if value is not None else None


def recheck_smem(findings: tuple[Finding, ...], info, target: str) -> tuple[tuple[SmemCheck, ...], tuple[Finding, ...]]:
    """Hold each AL204 request against the device's own limit: the opt-in maximum, or the 48 KB
    default when the KB's limit was the default (static arrays on a non-`a` target)."""
    checks, kept = [], []
    for finding in findings:
        if finding.rule != "AL204":
            continue
        nbytes = _int_property(finding, "nbytes")  # the bytes the request needs
        if nbytes is None:
            continue
        kb_limit = _int_property(finding, "limit")  # what the KB allows the first target it is over on
        limit = info.smem_per_block if kb_limit == _STATIC_DEFAULT else info.smem_per_block_optin
        fits = None if limit is None else nbytes <= limit
        checks.append(SmemCheck(finding.location, nbytes, kb_limit, limit, fits))
        if fits is not False:
            continue
        message = (f"{nbytes:,} bytes of shared memory per block requested; {info.name} ({target}) allows at most "
                   f"{limit:,} bytes (read from the {info.source})")
        kept.append(replace(finding, message=message, targets=(target,),
                            properties=finding.properties + (("device_limit", str(limit)),)))
    return tuple(sorted(checks, key=lambda c: c.location)), tuple(kept)


# ---------------------------------------------------------------- probes


def run_compile_probes(report: RuntimeReport, paths, include_dirs, defines, units, timeout: float, use_cache: bool):
    base = ProbeOptions(include_dirs=tuple(include_dirs) + probe_include_dirs(paths), defines=tuple(defines),
                        timeout_s=timeout, use_cache=use_cache)
    probes = []
    for gate in report.gates:
        if gate.units:
            options = replace(base, baseline_target=_baseline(gate))
            probes.append((gate.gate_id, tuple(probe_units(gate.units, report.target, options))))
        else:
            probes.append((gate.gate_id, ()))
    if units:
        probes.append(("--unit", tuple(probe_units([os.path.abspath(u) for u in units], report.target, base))))
    return tuple(probes)


def _baseline(gate: DeviceGate) -> str | None:
    """A target the gate admits, so an unexplained build error can be pinned on the device's target."""
    return gate.admits[-1] if gate.admits else None


def probe_include_dirs(paths) -> tuple[str, ...]:
    """The scanned roots and every `include` folder up to three levels under them."""
    found: list[str] = []
    for path in paths:
        root = Path(path).resolve()
        if root.is_file():
            root = root.parent
        found.append(str(root))
        for depth in ("include", "*/include", "*/*/include"):
            found.extend(str(p) for p in sorted(root.glob(depth)) if p.is_dir())
    return tuple(dict.fromkeys(found))


def run_launch_probe(info, smem: tuple[SmemCheck, ...]):
    if info.smem_per_block_optin is None:
        raise UsageError("the device did not report its opt-in shared-memory limit (attribute 97); cannot probe")
    try:
        return tuple(probe_smem(info.index or 0, limit_sizes(info.smem_per_block_optin, [c.nbytes for c in smem])))
    except DriverError as exc:
        raise UsageError(f"launch probe could not start: {exc}") from exc


# ---------------------------------------------------------------- output


def exit_code(report: RuntimeReport) -> int:
    if report.fail_on is Level.NONE:
        return EXIT_OK
    threshold = report.fail_on.rank
    return EXIT_FINDINGS if any(f.level.rank >= threshold for f in report.findings) else EXIT_OK


def _where(location: Location) -> str:
    return f"{location.path}:{location.line}:{location.col}"


def render_text(report: RuntimeReport) -> str:
    info = report.device
    lines = [format_device(info), "", f"target {report.target}: {report.files_scanned} files scanned"]
    lines += _gate_section(report)
    if report.findings:
        lines += ["", "Findings"]
        for finding in report.findings:
            lines.append(f"{_where(finding.location)}: {finding.rule} {finding.message}")
            lines += [f"    {_where(hop.location)}: {hop.message}" for hop in finding.evidence]
    if report.smem:
        lines += ["", f"Shared-memory requests against this device ({format_bytes(info.smem_per_block_optin)} per block opt-in)"]
        for check in report.smem:
            state = "unknown limit" if check.fits is None else ("fits" if check.fits else "does not fit")
            lines.append(f"{_where(check.location)}: {check.nbytes:,} B, limit {_num(check.device_limit)}: {state}")
    lines += _probe_section(report)
    lines += _launch_section(report)
    lines += ["", _summary(report)]
    return "\n".join(lines) + "\n"


def _num(value: int | None) -> str:
    return "unknown" if value is None else f"{value:,} B"


def _gate_section(report: RuntimeReport) -> list[str]:
    if not report.gates:
        return ["", f"No gate shuts {report.target} out."]
    lines = ["", f"Gates that shut {report.target} out ({len(report.gates)})"]
    for gate in report.gates:
        lines.append(f"{_where(gate.location)}: {gate.verdict.value} `{gate.text}`")
        lines.append(f"    {gate.reason}")
        if gate.verdict != Verdict.POLICY:
            lines += [f"    {_where(hop.location)}: {hop.message}" for hop in gate.evidence]
        if gate.empty_kernels:
            lines.append(f"    empty on {gate.target}: {', '.join(gate.empty_kernels)}")
    return lines


def _probe_section(report: RuntimeReport) -> list[str]:
    if not report.probes:
        return []
    lines = ["", f"Compile probe ({report.target})"]
    for gate_id, results in report.probes:
        lines.append(f"{gate_id}:" if results else f"{gate_id}: no translation unit known for this gate (name one with --unit)")
        lines += [f"    {compile_probe.format_probe(r, report.root)}" for r in results]
    return lines


def _launch_section(report: RuntimeReport) -> list[str]:
    if not report.launches:
        return []
    info = report.device
    lines = ["", f"Launch probe (device {info.index}, dynamic shared memory)"]
    return lines + [f"    {launch_probe.format_probe(r, info.smem_per_block_optin)}" for r in report.launches]


def _summary(report: RuntimeReport) -> str:
    counts = {v: sum(1 for g in report.gates if g.verdict == v) for v in Verdict}
    parts = [f"{counts[v]} {v.value}" for v in Verdict if counts[v]]
    gates = ", ".join(parts) if parts else "no excluding gates"
    extra = f"; {report.other_findings} other findings for {report.target} (see `archlint scan`)" if report.other_findings else ""
    return f"{report.device.name} ({report.target}): {gates}; {len(report.findings)} findings{extra}"


def _location_dict(location: Location) -> dict:
    return {"path": location.path, "line": location.line, "col": location.col}


def _evidence_list(evidence: tuple[Evidence, ...]) -> list[dict]:
    return [{"location": _location_dict(hop.location), "message": hop.message} for hop in evidence]


def render_json(report: RuntimeReport) -> str:
    from dataclasses import asdict

    data = {
        "device": device_dict(report.device),
        "target": report.target,
        "files_scanned": report.files_scanned,
        "gates": [
            {"gate_id": g.gate_id, "text": g.text, "location": _location_dict(g.location), "verdict": g.verdict.value,
             "reason": g.reason, "evidence": _evidence_list(g.evidence), "empty_kernels": list(g.empty_kernels),
             "units": [os.path.relpath(u, report.root) for u in g.units]}
            for g in report.gates
        ],
        "findings": [
            {"rule": f.rule, "level": f.level.value, "message": f.message, "location": _location_dict(f.location),
             "targets": list(f.targets), "evidence": _evidence_list(f.evidence), "properties": dict(f.properties)}
            for f in report.findings
        ],
        "smem": [
            {"location": _location_dict(c.location), "nbytes": c.nbytes, "kb_limit": c.kb_limit,
             "device_limit": c.device_limit, "fits": c.fits}
            for c in report.smem
        ],
        "compile_probe": [
            {"gate_id": gate_id, "results": [dict(asdict(r), unit=os.path.relpath(r.unit, report.root)) for r in results]}
            for gate_id, results in report.probes
        ],
        "launch_probe": [{"nbytes": r.nbytes, "ok": r.ok, "error": r.error} for r in report.launches],
        "other_findings": report.other_findings,
        "diagnostics": report.diagnostics,
    }
    return json.dumps(data, indent=2, sort_keys=True) + "\n"
