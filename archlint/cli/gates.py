"""`archlint gates`: every gate and its verdict per excluded target, without the findings.

The config is read as `archlint scan` reads it, and what it says about the scan itself (targets,
exclude, include-dirs, max-file-bytes) holds here too. Rule selection, suppressions, levels and
baselines decide which findings are reported; this command reports none, so none of it applies.
Paths are from the repository root, as `archlint scan` gives them.
"""

from __future__ import annotations

from pathlib import Path

import click

from archlint import __version__
from archlint.cli.exits import EXIT_CLEAN, UserError
from archlint.cli.scanning import emit, plan_paths, run_engine, say_if_no_sources, split_values, use_colour


@click.command("gates")
@click.argument("paths", nargs=-1, type=click.Path(exists=True, path_type=str))
@click.option("--target", "targets", multiple=True, metavar="T", help="Target to evaluate (sm_120a); repeatable.")
@click.option("--toolkit", default="", metavar="X.Y",
              help="CUDA toolkit the project builds with, for its flag code's toolkit tests (default: the newest known).")
@click.option("--format", "fmt", type=click.Choice(("text", "json")), default="text", show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), help="Write the report here.")
@click.option("--include-dir", "include_dirs", multiple=True, type=click.Path(exists=True, file_okay=False),
              help="Extra include root; repeatable.")
@click.option("--no-cache", is_flag=True, help="Do not read or write the facts cache.")
@click.option("--config", "config_file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Use this config file.")
def gates_command(paths, targets, toolkit, fmt, output, include_dirs, no_cache, config_file) -> int:
    """List the gates in PATHS (default: .) and the verdict for every target each one excludes."""
    # deferred: loaded only when the command runs
    from archlint.config import ConfigError, read_settings
    from archlint.postprocess.paths import rebase  # deferred: as above
    from archlint.report import Report  # deferred: as above
    from archlint.report.json import render_gates as gates_json  # deferred: as above
    from archlint.report.text import render_gates as gates_text  # deferred: as above

    plan = plan_paths(paths or (".",))
    try:
        include = tuple(str(Path(d).resolve()) for d in include_dirs)
        settings = read_settings(plan.config_start, config_file, targets=split_values(targets), include_dirs=include,
                                 toolkit=toolkit)
    except ConfigError as error:
        raise UserError(str(error)) from None
    result = rebase(run_engine(settings.scan_options(plan.paths, use_cache=not no_cache, report_paths=plan.report_paths)),
                    plan.report_root)
    say_if_no_sources(result, paths or (".",))
    gates = tuple(g for g in result.gates if not plan.report_paths or g.location.path in plan.report_paths)
    report = Report(root=result.root, findings=(), gates=gates, targets=tuple(result.targets), version=__version__,
                    files_scanned=result.files_scanned, colour=use_colour(output, fmt))
    emit(gates_json(report) if fmt == "json" else gates_text(report), output)
    return EXIT_CLEAN
