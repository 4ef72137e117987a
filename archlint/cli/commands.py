"""The `archlint` command: argument parsing, output and exit codes. The work happens elsewhere.

Exit codes: 0 nothing at or above --fail-on, 1 findings at or above it, 2 usage or internal
error, 130 interrupted. Heavy modules (the engine, tree-sitter, the reporters) load only inside the
commands that need them, so `archlint --version` stays fast.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import sys
import traceback
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import click

from archlint import __version__
from archlint.cli.shown import Shown, settings_key
from archlint.model.scan import ScanOptions, ScanResult

if TYPE_CHECKING:  # names for annotations only: the modules load inside the commands that use them
    from archlint.config import Settings
    from archlint.postprocess import Postprocessed, PostprocessSettings
    from archlint.report import Report

LEVELS = ("error", "warning", "note", "none")
FORMATS = ("text", "json", "sarif", "github", "html", "markdown")
EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR, EXIT_INTERRUPTED = 0, 1, 2, 130

# Commands other modules provide: name -> (module, attribute). Loaded on first use; a module
# that is not there yet is left out of the command list without a word.
OPTIONAL_COMMANDS = {
    "runtime": ("archlint.runtime.command", "runtime_command"),
    "graph": ("archlint.cli.graph", "graph_command"),
    "gates": ("archlint.cli.gates", "gates_command"),
    "tactics": ("archlint.runtime.tactics_command", "tactics_command"),
    "cache": ("archlint.engine.cache", None),  # `archlint cache clear`, defined below
}


class UserError(Exception):
    """Bad input from the user (config, baseline, rule id): exit 2 with one line, no traceback."""


class _Interrupted(Exception):
    """Ctrl-C inside a command, carried past click (which would print an empty line for it)."""


class ArchlintGroup(click.Group):
    """A group that maps every failure to archlint's exit codes and loads optional commands lazily."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        names = set(super().list_commands(ctx))
        names.update(name for name, (module, _) in OPTIONAL_COMMANDS.items() if _module_exists(module))
        return sorted(names)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        command = super().get_command(ctx, name)
        if command is None and name in OPTIONAL_COMMANDS:
            command = _load_optional(*OPTIONAL_COMMANDS[name])
        return command

    def invoke(self, ctx: click.Context):  # noqa: D102 - click's signature
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            raise _Interrupted from None

    def main(self, args=None, prog_name=None, **extra):  # noqa: D102 - click's signature
        extra.pop("standalone_mode", None)
        debug = "--debug" in (sys.argv[1:] if args is None else list(args))
        try:
            code = super().main(args=args, prog_name=prog_name or "archlint", standalone_mode=False, **extra)
        except (KeyboardInterrupt, click.exceptions.Abort, _Interrupted):
            # on a terminal, over the `^C` it echoed; elsewhere this one line is all stderr gets
            click.echo(("\r\x1b[K" if _is_terminal(sys.stderr) else "") + "archlint: interrupted", err=True)
            sys.exit(EXIT_INTERRUPTED)
        except click.exceptions.Exit as stop:
            code = stop.exit_code
        except click.ClickException as error:
            _show_click_error(error)
            code = EXIT_ERROR
        except UserError as error:
            click.echo(f"archlint: error: {error}", err=True)
            code = EXIT_ERROR
        except BrokenPipeError:  # `archlint scan | head`: stop quietly, without a flush error at exit
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            code = EXIT_ERROR
        except Exception as error:  # an internal error: one line, the traceback only with --debug
            if debug:
                traceback.print_exc()
            click.echo(f"archlint: internal error: {type(error).__name__}: {error}", err=True)
            code = EXIT_ERROR
        sys.exit(code if isinstance(code, int) else EXIT_CLEAN)


def _show_click_error(error: click.ClickException) -> None:
    """One line saying what is wrong; for a usage error, a second naming the help to read."""
    message = " ".join(error.format_message().split())
    click.echo(f"archlint: error: {message}", err=True)
    ctx = getattr(error, "ctx", None)
    if isinstance(error, click.UsageError) and ctx is not None:
        command = " ".join(["archlint", *ctx.command_path.split()[1:]])
        click.echo(f"Try '{command} --help' for help.", err=True)


def _is_terminal(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _module_exists(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _load_optional(module: str, attribute: str | None) -> click.Command | None:
    if attribute is None:
        return cache if _module_exists(module) else None
    try:
        command = getattr(importlib.import_module(module), attribute)
    except (ImportError, AttributeError):
        return None
    return command if isinstance(command, click.Command) else None


@click.group(cls=ArchlintGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", "-V", prog_name="archlint", message="%(prog)s %(version)s")
def cli() -> None:
    """Which GPU architectures does each gate shut out, and is that policy or genuine?"""


def main(argv: list[str] | None = None) -> None:
    """Console entry point (`archlint = archlint.cli:main`)."""
    cli.main(args=argv, prog_name="archlint")


# ---------------------------------------------------------------- scan


_DEFINE_RE = re.compile(r"[A-Za-z_]\w*(?:=[-+]?(?:0[xX][0-9a-fA-F]+|\d+))?")


def _check_defines(ctx, param, values: tuple[str, ...]) -> tuple[str, ...]:
    """`NAME` or `NAME=VALUE` with an integer value, as a condition reads it."""
    for value in values:
        if not _DEFINE_RE.fullmatch(value):
            raise click.BadParameter(f"{value!r}: expected NAME or NAME=INTEGER", ctx=ctx, param=param)
    return values


def _split(values: tuple[str, ...]) -> tuple[str, ...]:
    """Flatten repeatable, comma-separated option values: ('AL101,AL2', 'x') -> ('AL101', 'AL2', 'x')."""
    return tuple(part.strip() for value in values for part in value.split(",") if part.strip())


@cli.command()
@click.argument("paths", nargs=-1, type=click.Path(exists=True, path_type=str))
@click.option("--target", "targets", multiple=True, metavar="T", help="Target to evaluate (sm_120a); repeatable.")
@click.option("--toolkit", default="", metavar="X.Y",
              help="CUDA toolkit the project builds with, for its flag code's toolkit tests (default: the newest known).")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default=None,
              help="Report format (default: from the -o suffix, .sarif or .json, else text).")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), help="Write the report (or the --diff) here.")
@click.option("--fail-on", type=click.Choice(LEVELS), default=None, help="Lowest level that fails (default: warning).")
@click.option("--select", multiple=True, metavar="ID,...", help="Only these rules (ids, names or families like AL2).")
@click.option("--ignore", multiple=True, metavar="ID,...", help="Leave these rules out.")
@click.option("--baseline", type=click.Path(exists=True, dir_okay=False, path_type=Path), help="Report only findings not in this earlier report.")
@click.option("--write-baseline", type=click.Path(dir_okay=False, path_type=Path), help="Save this scan's findings as a baseline.")
@click.option("--no-suppress", is_flag=True, help="Ignore every `archlint: ignore[...]` comment.")
@click.option("--show-suppressed", is_flag=True, help="Include suppressed findings in the report.")
@click.option("--no-cache", is_flag=True, help="Do not read or write the facts cache.")
@click.option("--jobs", type=click.IntRange(min=0), default=0, help="Worker processes (0: one per CPU).")
@click.option("--include-dir", "include_dirs", multiple=True, type=click.Path(exists=True, file_okay=False), help="Extra include root; repeatable.")
@click.option("--define", "defines", multiple=True, metavar="NAME[=VALUE]", callback=_check_defines,
              help="Set a macro in every build, as a -D flag would (settles conditions archlint cannot read); repeatable.")
@click.option("--compile-probe", is_flag=True,
              help="Measure each CUTLASS tactic's shared storage with nvcc's front end (nothing is run).")
@click.option("--category", default="", help="SARIF automationDetails.id (GitHub code scanning category).")
@click.option("--diff", "show_diff", is_flag=True, help="Print the available fixes as a unified diff.")
@click.option("--fix", "apply_fix", is_flag=True, help="Apply the available fixes (git work trees only), then rescan.")
@click.option("--config", "config_file", type=click.Path(exists=True, dir_okay=False, path_type=Path), help="Use this config file.")
@click.option("-q", "--quiet", is_flag=True, help="Print findings only.")
@click.option("-v", "--verbose", is_flag=True,
              help="List every gate (also those that exclude no target); print each stage's time on standard error.")
@click.option("--debug", is_flag=True, help="Show tracebacks for internal errors.")
def scan(paths, targets, toolkit, fmt, output, fail_on, select, ignore, baseline, write_baseline, no_suppress,
         show_suppressed, no_cache, jobs, include_dirs, category, show_diff, apply_fix, config_file, quiet, verbose,
         debug, defines, compile_probe) -> int:
    """Scan PATHS (default: .) and report gates, verdicts and arch hazards."""
    # deferred: keeps `archlint --version` light
    from archlint.config import ConfigError, read_settings

    fmt = fmt or _format_for(output)
    _check_combination(fmt, show_diff, apply_fix, write_baseline)
    try:
        plan = _plan(paths or (".",))
        include = tuple(str(Path(d).resolve()) for d in include_dirs)
        settings = read_settings(plan.config_start, config_file, targets=_split(targets), include_dirs=include,
                                 select=_split(select), ignore=_split(ignore), fail_on=fail_on, toolkit=toolkit)
    except ConfigError as error:
        raise UserError(str(error)) from None
    options = settings.scan_options(plan.paths, jobs=jobs, use_cache=not no_cache, report_paths=plan.report_paths)
    options = replace(options, defines=defines, compile_probe=compile_probe)
    from archlint.probe.nvcc import find_nvcc  # deferred: as above

    if compile_probe and find_nvcc() is None:
        click.echo("archlint: --compile-probe needs nvcc (not on PATH, in $CUDA_HOME or /usr/local/cuda): "
                   "tactics are judged by the static bound alone", err=True)
    view = _View(fmt, output, category, quiet, verbose)
    chosen = settings.postprocess_settings(no_suppress=no_suppress, show_suppressed=show_suppressed,
                                           report_paths=plan.report_paths, baseline=_baseline(baseline))
    chosen = replace(chosen, active=_reported_by_scan(chosen.active), report_root=plan.report_root)
    if not show_diff and not apply_fix and write_baseline is None:
        return _show(_scan_shown(options, settings, chosen, view), view, paths or (".",))
    outcome = _scan_once(options, settings, chosen, view)
    if show_diff or apply_fix:
        # deferred: as above
        from archlint.postprocess.fixes import FixError, apply_edits, plan_edits, unified_diff

        try:
            edits = plan_edits(outcome.processed.new, outcome.processed.root)
        except (FixError, OSError, UnicodeDecodeError) as error:
            raise UserError(f"cannot prepare fixes: {error}") from None
        if show_diff:
            _emit(unified_diff(edits), output)
            return EXIT_FINDINGS if edits else EXIT_CLEAN
        changed, refused = apply_edits(edits, outcome.processed.root)
        for line in refused:
            click.echo(f"archlint: not fixed: {line}", err=True)
        if changed and not quiet:
            click.echo(f"archlint: fixed {len(changed)} file(s): {', '.join(changed)}", err=True)
        if changed:
            outcome = _scan_once(options, settings, chosen, view)
    return _finish(outcome, view, paths or (".",), write_baseline)


# ---------------------------------------------------------------- rules and explain


@cli.command()
@click.option("--format", "fmt", type=click.Choice(("text", "json")), default="text", show_default=True)
def rules(fmt: str) -> None:
    """List every rule: id, name, default level, status."""
    # deferred: keeps `archlint --version` light
    from archlint.knowledge.rules import load_rules

    table = load_rules()
    if fmt == "json":
        # deferred: as above
        from archlint.report.json import rules_document

        click.echo(rules_document(table), nl=False)
        return
    width = max(len(info.name) for info in table.values())
    for info in table.values():
        click.echo(f"{info.id}  {info.name:<{width}}  {info.severity.value:<7}  {info.status}")


@cli.command()
@click.argument("rule")
def explain(rule: str) -> None:
    """Print the documentation of RULE (an id such as AL101 or a name such as policy-gate)."""
    # deferred: keeps `archlint --version` light
    from archlint.knowledge.rules import load_rules, resolve

    try:
        info = load_rules()[resolve(rule)]
    except KeyError:
        raise UserError(f"unknown rule {rule!r}; `archlint rules` lists them") from None
    click.echo(f"# {info.id} {info.name}\n")
    click.echo(f"Level: {info.severity.value}. Status: {info.status} (since {info.since}). Languages: {', '.join(info.languages)}.\n")
    click.echo(f"Message: {info.summary}\n")
    click.echo(info.description.rstrip() + "\n")
    click.echo(f"Fix: {info.help}")


# ---------------------------------------------------------------- cache


@click.group()
def cache() -> None:
    """Manage the facts cache in the user's cache folder."""


@cache.command("clear")
def cache_clear() -> None:
    """Delete every cached facts file."""
    cache = importlib.import_module("archlint.engine.cache")
    try:
        removed = cache.clear()
    except cache.NotACacheFolder as error:
        raise UserError(f"cannot clear the cache: {error}") from None
    click.echo(f"archlint: removed {removed} cache entr{'y' if removed == 1 else 'ies'} from {cache.cache_dir()}", err=True)


# ---------------------------------------------------------------- scan plumbing


@dataclass(frozen=True)
class _Plan:
    paths: tuple[str, ...]  # absolute paths handed to the engine
    report_paths: tuple[str, ...]  # root-relative files to report on (pre-commit); () = all
    config_start: Path  # where the config search starts
    report_root: str  # absolute: reported paths are relative to it (the repository's top)


@dataclass(frozen=True)
class _View:
    fmt: str
    output: Path | None
    category: str
    quiet: bool
    verbose: bool = False


@dataclass(frozen=True)
class _Outcome:
    result: ScanResult
    report: Report
    processed: Postprocessed
    rendered: str
    exit_code: int


def _plan(paths: tuple[str, ...]) -> _Plan:
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
                return _Plan((str(top),), rel, top, str(top))
    start = absolute[0] if absolute[0].is_dir() else absolute[0].parent
    scanned = tuple(str(p) for p in absolute)
    return _Plan(scanned, (), start, str(report_root(scanned)))


_FORMAT_BY_SUFFIX = {".sarif": "sarif", ".json": "json", ".html": "html", ".md": "markdown"}


def _format_for(output: Path | None) -> str:
    """The report format an output file's suffix asks for, when --format is not given; else text."""
    fmt = _FORMAT_BY_SUFFIX.get(output.suffix.lower(), "text") if output is not None else "text"
    return fmt if fmt in FORMATS else "text"


def _check_combination(fmt: str, show_diff: bool, apply_fix: bool, write_baseline: Path | None) -> None:
    """--diff prints the diff and nothing else: options that need a report or an edit cannot join it."""
    if not show_diff:
        return
    if apply_fix:
        raise click.UsageError("--diff and --fix cannot be combined: --diff shows the fixes, --fix applies them")
    if fmt != "text":
        raise click.UsageError(f"--diff prints a unified diff, not a {fmt} report; leave out --format (or the .{fmt} -o file)")
    if write_baseline is not None:
        raise click.UsageError("--diff and --write-baseline cannot be combined: --diff prints the diff and nothing else")


def _reported_by_scan(active: frozenset[str]) -> frozenset[str]:
    """The active rules less those only `archlint runtime` reports (tagged `runtime`, as AL301 is):
    a suppression of one is there for runtime, not unused in every scan."""
    # deferred: keeps `archlint --version` light
    from archlint.knowledge.rules import load_rules

    rules = load_rules()
    return frozenset(rule for rule in active if "runtime" not in rules[rule].tags)


def _baseline(path: Path | None) -> Counter[str] | None:
    """The fingerprints of an earlier report, read before the scan so a bad file stops it at once."""
    if path is None:
        return None
    # deferred: keeps `archlint --version` light
    from archlint.postprocess.baseline import BaselineError, load_baseline

    try:
        return load_baseline(path)
    except BaselineError as error:
        raise UserError(str(error)) from None


def _run_engine(options: ScanOptions) -> ScanResult:
    # deferred: keeps `archlint --version` light
    from archlint.engine import scan as run_scan

    return run_scan(options)


def _scan_once(options: ScanOptions, settings: Settings, chosen: PostprocessSettings, view: _View) -> _Outcome:
    # deferred: keeps `archlint --version` light
    from archlint.knowledge.rules import load_rules
    # deferred: as above
    from archlint.engine.collector import collector_paused
    # deferred: as above
    from archlint.engine.timing import stage_times

    rules = load_rules()
    with stage_times(view.verbose):
        result = _run_engine(options)
    with collector_paused():
        return _report(result, options, settings, chosen, view, rules)


def _scan_shown(options: ScanOptions, settings: Settings, chosen: PostprocessSettings, view: _View) -> Shown:
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
            return _shown(_report(result, options, settings, chosen, view, load_rules()))

    # the report's looks: the HTML's links are relative to where it is written, or shown
    folder = str(view.output.resolve().parent) if view.output else (os.getcwd() if view.fmt == "html" else "")
    looks = (view.fmt, view.category, view.quiet, view.verbose, folder, use_colour(view.output, view.fmt))

    def key(result: ScanResult) -> bytes:
        return settings_key(result, options, settings, chosen, looks)

    with stage_times(view.verbose):
        return scan_shown(options, show, key)


def _shown(outcome: _Outcome) -> Shown:
    # deferred: keeps `archlint --version` light
    from archlint.report.text import report_summary_line

    return Shown(outcome.rendered, outcome.exit_code, report_summary_line(outcome.report), outcome.result.files_scanned,
                 _nothing_to_report(outcome))


def _report(result: ScanResult, options: ScanOptions, settings: Settings, chosen: PostprocessSettings, view: _View,
            rules) -> _Outcome:
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
    return _Outcome(result, report, processed, render(view.fmt, report), exit_code)


def _finish(outcome: _Outcome, view: _View, paths: tuple[str, ...], write_baseline: Path | None) -> int:
    """Write or print what the scan asked for; the exit code. A baseline run writes the baseline
    (and the report only where -o names a file) and exits 0: it records findings, it does not judge them."""
    if write_baseline is None:
        return _show(_shown(outcome), view, paths)
    say_if_no_sources(outcome.result, paths)
    count = _write_baseline(write_baseline, outcome)
    if view.output is not None:
        _emit(outcome.rendered, view.output)
    click.echo(f"archlint: wrote baseline of {count} finding{'' if count == 1 else 's'} to {write_baseline}", err=True)
    return EXIT_CLEAN


def _show(shown: Shown, view: _View, paths: tuple[str, ...]) -> int:
    """Print or write the report; the exit code."""
    _say_if_none_read(shown.files_scanned, paths)
    if view.output is None and view.fmt == "text" and shown.empty:
        return shown.exit_code  # the line above said why; a clean summary of no files would mislead
    _emit(shown.rendered, view.output)
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


def _nothing_to_report(outcome: _Outcome) -> bool:
    """No file was read, and nothing was said about the paths either (a folder that cannot be listed is)."""
    report = outcome.report
    return not report.files_scanned and not report.findings and not report.diagnostics


def _write_baseline(path: Path, outcome: _Outcome) -> int:
    """Write the baseline; how many findings it records."""
    # deferred: keeps `archlint --version` light
    from archlint.report import render

    report = replace(outcome.report, findings=outcome.processed.unsuppressed, baselined=0, colour=False)
    fmt = "sarif" if path.suffix.lower() == ".sarif" else "json"
    _emit(render(fmt, report), path)
    return len(outcome.processed.unsuppressed)


def _emit(text: str, output: Path | None) -> None:
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


if __name__ == "__main__":
    main()
