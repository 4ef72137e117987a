"""`archlint tactics`: the CUTLASS tactics the gates admit per target, with the static verdict and,
with `--compile-probe`, nvcc's measurement of each tactic's shared memory.

The scan is `archlint scan`'s up to the verdicts; the tile lists are read from the generators'
literals (never run) and linked to the gates whose functions call the generator. Exit 0 always
(2 on a usage error, or `--compile-probe` without nvcc): the findings are `archlint scan`'s.
"""

from __future__ import annotations

import os
import sys
from dataclasses import replace
from pathlib import Path

import click

EXIT_OK, EXIT_USAGE = 0, 2


@click.command("tactics")
@click.argument("paths", nargs=-1, type=click.Path(exists=True, path_type=str))
@click.option("--target", "targets", multiple=True, metavar="T", help="Target to judge (sm_120a); repeatable.")
@click.option("--format", "fmt", type=click.Choice(("text", "json")), default="text", show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), help="Write the report here.")
@click.option("--compile-probe", "probe", is_flag=True,
              help="Measure sizeof(GemmKernel::SharedStorage) of each tactic with nvcc's front end (nothing is run).")
@click.option("--include-dir", "include_dirs", multiple=True, type=click.Path(exists=True, file_okay=False),
              help="Extra include root for the compile probe (a toolkit header the tree does not hold); repeatable.")
@click.option("--jobs", type=int, default=2, show_default=True, help="Compile-probe units compiled at once.")
@click.option("--timeout", "timeout_s", type=float, default=600.0, show_default=True, help="Seconds per probe unit.")
@click.option("--no-cache", is_flag=True, help="Do not read or write the facts cache.")
@click.option("--config", "config_file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Use this config file.")
def tactics_command(paths, targets, fmt, output, probe, include_dirs, jobs, timeout_s, no_cache, config_file) -> int:
    """List the CUTLASS tactics in PATHS (default: .), each with its shared-memory bound per target."""
    from archlint.config import ConfigError, read_settings  # deferred: loaded only when the command runs
    from archlint.discover import report_root  # deferred: as above
    from archlint.engine.linking import link  # deferred: as above
    from archlint.postprocess.paths import scan_prefix  # deferred: as above
    from archlint.report.tactics import render_json, render_text, tactic_rows  # deferred: as above
    from archlint.probe.tactics import ProbeSettings, measure  # deferred: as above
    from archlint.probe.units import measure_cxx  # deferred: as above

    scanned = tuple(os.path.abspath(p) for p in (paths or (".",)))
    start = scanned[0] if os.path.isdir(scanned[0]) else os.path.dirname(scanned[0])
    try:
        settings = read_settings(start, config_file, targets=tuple(t for value in targets for t in value.split(",") if t))
    except ConfigError as error:
        _usage(str(error))
    linked = link(settings.scan_options(scanned, use_cache=not no_cache), eager=False)
    ctx = linked.context
    measured = None
    if probe:
        options = ProbeSettings(linked.root, tuple(str(Path(d).resolve()) for d in include_dirs), jobs, timeout_s)
        try:
            answers = {**measure(ctx.tile_lists, ctx.targets, ctx.index, options),
                       **measure_cxx(ctx.tile_lists, ctx.targets, ctx.index, options)}
        except FileNotFoundError as error:
            _usage(str(error))
        measured = {key: (answer.nbytes, answer.note) for key, answer in answers.items()}
    rows = tactic_rows(ctx.tile_lists, ctx.targets, ctx.kb, measured=measured)
    prefix = scan_prefix(linked.root, report_root(scanned))
    if prefix:
        rows = [replace(row, path=f"{prefix}/{row.path}") for row in rows]
    text = render_json(rows) if fmt == "json" else render_text(rows)
    if output:
        output.write_text(text, encoding="utf-8")
    else:
        click.echo(text, nl=False)
    return EXIT_OK


def _usage(message: str) -> None:
    click.echo(f"archlint tactics: {message}", err=True)
    sys.exit(EXIT_USAGE)
