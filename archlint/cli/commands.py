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
from dataclasses import replace
from pathlib import Path

import click

from archlint import __version__
from archlint.cli.exits import EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS, EXIT_INTERRUPTED, UserError
from archlint.cli.scanning import (FORMATS, View, check_combination, emit, finish, format_for, plan_paths,
                                   read_baseline, reported_by_scan, scan_once, scan_shown_report, show, split_values)

LEVELS = ("error", "warning", "note", "none")

# Commands other modules provide: name -> (module, attribute). Loaded on first use; a module
# that is not there yet is left out of the command list without a word.
OPTIONAL_COMMANDS = {
    "runtime": ("archlint.runtime.command", "runtime_command"),
    "graph": ("archlint.cli.graph", "graph_command"),
    "gates": ("archlint.cli.gates", "gates_command"),
    "tactics": ("archlint.runtime.tactics_command", "tactics_command"),
    "cache": ("archlint.engine.cache", None),  # `archlint cache clear`, defined below
}


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

    fmt = fmt or format_for(output)
    check_combination(fmt, show_diff, apply_fix, write_baseline)
    try:
        plan = plan_paths(paths or (".",))
        include = tuple(str(Path(d).resolve()) for d in include_dirs)
        settings = read_settings(plan.config_start, config_file, targets=split_values(targets), include_dirs=include,
                                 select=split_values(select), ignore=split_values(ignore), fail_on=fail_on, toolkit=toolkit)
    except ConfigError as error:
        raise UserError(str(error)) from None
    options = settings.scan_options(plan.paths, jobs=jobs, use_cache=not no_cache, report_paths=plan.report_paths)
    options = replace(options, defines=defines, compile_probe=compile_probe)
    if compile_probe and _no_nvcc():
        click.echo("archlint: --compile-probe needs nvcc (not on PATH, in $CUDA_HOME or /usr/local/cuda): "
                   "tactics are judged by the static bound alone", err=True)
    view = View(fmt, output, category, quiet, verbose)
    chosen = settings.postprocess_settings(no_suppress=no_suppress, show_suppressed=show_suppressed,
                                           report_paths=plan.report_paths, baseline=read_baseline(baseline))
    chosen = replace(chosen, active=reported_by_scan(chosen.active), report_root=plan.report_root)
    if not show_diff and not apply_fix and write_baseline is None:
        return show(scan_shown_report(options, settings, chosen, view), view, paths or (".",))
    outcome = scan_once(options, settings, chosen, view)
    if show_diff or apply_fix:
        # deferred: as above
        from archlint.postprocess.fixes import FixError, apply_edits, plan_edits, unified_diff

        try:
            edits = plan_edits(outcome.processed.new, outcome.processed.root)
        except (FixError, OSError, UnicodeDecodeError) as error:
            raise UserError(f"cannot prepare fixes: {error}") from None
        if show_diff:
            emit(unified_diff(edits), output)
            return EXIT_FINDINGS if edits else EXIT_CLEAN
        changed, refused = apply_edits(edits, outcome.processed.root)
        for line in refused:
            click.echo(f"archlint: not fixed: {line}", err=True)
        if changed and not quiet:
            click.echo(f"archlint: fixed {len(changed)} file(s): {', '.join(changed)}", err=True)
        if changed:
            outcome = scan_once(options, settings, chosen, view)
    return finish(outcome, view, paths or (".",), write_baseline)


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


def _no_nvcc() -> bool:
    from archlint.probe.nvcc import find_nvcc  # deferred: only the compile probe needs it (and subprocess)

    return find_nvcc() is None


if __name__ == "__main__":
    main()
