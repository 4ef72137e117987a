"""What `archlint scan` does between its options and its exit code: where the scan runs (a
pre-commit call's files, a folder), the engine's run, the report rendered or the stored one shown,
and where it is written."""

from __future__ import annotations

import os
import sys
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import click

from archlint import __version__
from archlint.cli.exits import EXIT_CLEAN, EXIT_FINDINGS, UserError
from archlint.cli.shown import Shown, settings_key
from archlint.model.scan import ScanOptions, ScanResult

if TYPE_CHECKING:  # names for annotations only: the modules load inside the commands that use them
    from archlint.config import Settings
    from archlint.postprocess import Postprocessed, PostprocessSettings
    from archlint.report import Report

FORMATS = ("text", "json", "sarif", "github", "html", "markdown")


def split_values(values: tuple[str, ...]) -> tuple[str, ...]:
    """Flatten repeatable, comma-separated option values: ('AL101,AL2', 'x') -> ('AL101', 'AL2', 'x')."""
    return tuple(part.strip() for value in values for part in value.split(",") if part.strip())


@dataclass(frozen=True)
class Plan:
    paths: tuple[str, ...]  # absolute paths handed to the engine
    report_paths: tuple[str, ...]  # root-relative files to report on (pre-commit); () = all
    config_start: Path  # where the config search starts
    report_root: str  # absolute: reported paths are relative to it (the repository's top)


@dataclass(frozen=True)
class View:
    fmt: str
    output: Path | None
    category: str
    quiet: bool
    verbose: bool = False


@dataclass(frozen=True)
class Outcome:
    result: ScanResult
    report: Report
    processed: Postprocessed
    rendered: str
    exit_code: int


def plan_paths(paths: tuple[str, ...]) -> Plan:
    """Explicit files inside a git repo (pre-commit): scan the repo, report on those files only.
    Reported paths are relative to the repository's top, else to the working directory."""
    # deferred: keeps `archlint --version` light
    from archlint.discover import report_root, repository_root

    absolute = [Path(os.path.abspath(p)) for p in paths]
    if all(p.is_file() for p in absolute):
        top = repository_root(absolute[0].parent)
        if top is not None:
            real = [p.resolve() for p in absolute]
            if all(p.is_relative_to(top) for p in real):
                rel = tuple(sorted({p.relative_to(top).as_posix() for p in real}))
                return Plan((str(top),), rel, top, str(top))
    start = absolute[0] if absolute[0].is_dir() else absolute[0].parent
    scanned = tuple(str(p) for p in absolute)
    return Plan(scanned, (), start, str(report_root(scanned)))


_FORMAT_BY_SUFFIX = {".sarif": "sarif", ".json": "json", ".html": "html", ".md": "markdown"}


def format_for(output: Path | None) -> str:
    """The report format an output file's suffix asks for, when --format is not given; else text."""
    fmt = _FORMAT_BY_SUFFIX.get(output.suffix.lower(), "text") if output is not None else "text"
    return fmt if fmt in FORMATS else "text"


def check_combination(fmt: str, show_diff: bool, apply_fix: bool, write_baseline: Path | None) -> None:
    """--diff prints the diff and nothing else: options that need a report or an edit cannot join it."""
    if not show_diff:
        return
    if apply_fix:
        raise click.UsageError("--diff and --fix cannot be combined: --diff shows the fixes, --fix applies them")
    if fmt != "text":
        raise click.UsageError(f"--diff prints a unified diff, not a {fmt} report; leave out --format (or the .{fmt} -o file)")
    if write_baseline is not None:
        raise click.UsageError("--diff and --write-baseline cannot be combined: --diff prints the diff and nothing else")


def reported_by_scan(active: frozenset[str]) -> frozenset[str]:
    """The active rules less those only `archlint runtime` reports (tagged `runtime`, as AL301 is):
    a suppression of one is there for runtime, not unused in every scan."""
    # deferred: keeps `archlint --version` light
    from archlint.knowledge.rules import load_rules

    rules = load_rules()
    return frozenset(rule for rule in active if "runtime" not in rules[rule].tags)


def read_baseline(path: Path | None) -> Counter[str] | None:
    """The fingerprints of an earlier report, read before the scan so a bad file stops it at once."""
    if path is None:
        return None
    # deferred: keeps `archlint --version` light
    from archlint.postprocess.baseline import BaselineError, load_baseline

    try:
        return load_baseline(path)
    except BaselineError as error:
        raise UserError(str(error)) from None


def run_engine(options: ScanOptions) -> ScanResult:
    # deferred: keeps `archlint --version` light
    from archlint.engine import scan as run_scan

    return run_scan(options)


def scan_once(options: ScanOptions, settings: Settings, chosen: PostprocessSettings, view: View) -> Outcome:
    # deferred: keeps `archlint --version` light
    from archlint.knowledge.rules import load_rules
    # deferred: as above
    from archlint.engine.collector import collector_paused
    # deferred: as above
    from archlint.engine.timing import stage_times

    rules = load_rules()
    with stage_times(view.verbose):
        result = run_engine(options)
    with collector_paused():
        return report_of(result, options, settings, chosen, view, rules)


def scan_shown_report(options: ScanOptions, settings: Settings, chosen: PostprocessSettings, view: View) -> Shown:
    """What the scan prints: rendered from its result, or the stored scan's report of the same
    result with the same settings (engine.scan_shown)."""
    # deferred: keeps `archlint --version` light
    from archlint.knowledge.rules import load_rules
    # deferred: as above
    from archlint.engine import scan_shown
    # deferred: as above
    from archlint.engine.collector import collector_paused
    # deferred: as above
    from archlint.engine.timing import stage_times

    def show(result: ScanResult) -> Shown:
        with collector_paused():
            return _shown(report_of(result, options, settings, chosen, view, load_rules()))

    # the report's looks: the HTML's links are relative to where it is written, or shown
    folder = str(view.output.resolve().parent) if view.output else (os.getcwd() if view.fmt == "html" else "")
    looks = (view.fmt, view.category, view.quiet, view.verbose, folder, use_colour(view.output, view.fmt))

    def key(result: ScanResult) -> bytes:
        return settings_key(result, options, settings, chosen, looks)

    with stage_times(view.verbose):
        return scan_shown(options, show, key)


def _shown(outcome: Outcome) -> Shown:
    # deferred: keeps `archlint --version` light
    from archlint.report.text import report_summary_line

    return Shown(outcome.rendered, outcome.exit_code, report_summary_line(outcome.report), outcome.result.files_scanned,
                 _nothing_to_report(outcome))


def report_of(result: ScanResult, options: ScanOptions, settings: Settings, chosen: PostprocessSettings, view: View,
            rules) -> Outcome:
    # deferred: keeps `archlint --version` light
    from archlint.postprocess import postprocess
    # deferred: as above
    from archlint.report import Report, render

    processed = postprocess(result, chosen, rules)
    report = Report(
        root=processed.root,
        findings=processed.shown,
        diagnostics=processed.diagnostics,
        gates=processed.gates,
        rules=rules,
        levels=settings.levels,
        targets=tuple(result.targets or options.targets),
        files_scanned=result.files_scanned,
        category=view.category,
        suppressed=processed.suppressed,
        baselined=processed.baselined,
        colour=use_colour(view.output, view.fmt),
        quiet=view.quiet,
        verbose=view.verbose,
        targets_asked=bool(settings.targets),
        version=__version__,
        output_dir=str(view.output.resolve().parent) if view.output else "",
        binaries=result.binaries,
    )
    exit_code = EXIT_FINDINGS if processed.fails(settings.fail_on) else EXIT_CLEAN
    return Outcome(result, report, processed, render(view.fmt, report), exit_code)


def finish(outcome: Outcome, view: View, paths: tuple[str, ...], write_baseline: Path | None) -> int:
    """Write or print what the scan asked for; the exit code. A baseline run writes the baseline
    (and the report only where -o names a file) and exits 0: it records findings, it does not judge them."""
    if write_baseline is None:
        return show(_shown(outcome), view, paths)
    say_if_no_sources(outcome.result, paths)
    count = _write_baseline(write_baseline, outcome)
    if view.output is not None:
        emit(outcome.rendered, view.output)
    click.echo(f"archlint: wrote baseline of {count} finding{'' if count == 1 else 's'} to {write_baseline}", err=True)
    return EXIT_CLEAN


def show(shown: Shown, view: View, paths: tuple[str, ...]) -> int:
    """Print or write the report; the exit code."""
    _say_if_none_read(shown.files_scanned, paths)
    if view.output is None and view.fmt == "text" and shown.empty:
        return shown.exit_code  # the line above said why; a clean summary of no files would mislead
    emit(shown.rendered, view.output)
    if view.output is not None and not view.quiet:
        click.echo(f"archlint: {shown.summary}", err=True)
        click.echo(f"archlint: wrote {view.output}", err=True)
    return shown.exit_code


def say_if_no_sources(result: ScanResult, paths: tuple[str, ...]) -> None:
    """One line on stderr when the paths hold no file archlint reads (the scan is then no evidence)."""
    _say_if_none_read(result.files_scanned, paths)


def _say_if_none_read(files_scanned: int, paths: tuple[str, ...]) -> None:
    if not files_scanned:
        click.echo(f"archlint: no CUDA or Python sources under {', '.join(paths)}", err=True)


def _nothing_to_report(outcome: Outcome) -> bool:
    """No file was read, and nothing was said about the paths either (a folder that cannot be listed is)."""
    report = outcome.report
    return not report.files_scanned and not report.findings and not report.diagnostics


def _write_baseline(path: Path, outcome: Outcome) -> int:
    """Write the baseline; how many findings it records."""
    # deferred: keeps `archlint --version` light
    from archlint.report import render

    report = replace(outcome.report, findings=outcome.processed.unsuppressed, baselined=0, colour=False)
    fmt = "sarif" if path.suffix.lower() == ".sarif" else "json"
    emit(render(fmt, report), path)
    return len(outcome.processed.unsuppressed)


def emit(text: str, output: Path | None) -> None:
    if output is None:
        click.echo(text, nl=False)
        return
    # deferred: keeps `archlint --version` light
    from archlint.postprocess.fixes import write_atomic

    try:
        write_atomic(output, text)
    except OSError as error:
        raise UserError(f"cannot write {output}: {error.strerror or error}") from None


def use_colour(output: Path | None, fmt: str) -> bool:
    return fmt == "text" and output is None and "NO_COLOR" not in os.environ and sys.stdout.isatty()
