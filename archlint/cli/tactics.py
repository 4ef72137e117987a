"""`archlint tactics`: the CUTLASS tactics the gates admit per target, with the static verdict.

The scan is `archlint scan`'s up to the verdicts; the tile lists are read from the generators'
literals (never run) and linked to the gates whose functions call the generator. Exit 0 always:
the findings (AL204 for a tile that does not fit) are `archlint scan`'s to report.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import click

from archlint.cli.commands import EXIT_CLEAN, UserError, _emit, _plan, _split


@click.command("tactics")
@click.argument("paths", nargs=-1, type=click.Path(exists=True, path_type=str))
@click.option("--target", "targets", multiple=True, metavar="T", help="Target to judge (sm_120a); repeatable.")
@click.option("--format", "fmt", type=click.Choice(("text", "json")), default="text", show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), help="Write the report here.")
@click.option("--no-cache", is_flag=True, help="Do not read or write the facts cache.")
@click.option("--config", "config_file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Use this config file.")
def tactics_command(paths, targets, fmt, output, no_cache, config_file) -> int:
    """List the CUTLASS tactics in PATHS (default: .), each with its shared-memory bound per target."""
    from archlint.config import ConfigError, read_settings  # deferred: loaded only when the command runs
    from archlint.engine.linking import link  # deferred: as above
    from archlint.postprocess.paths import scan_prefix  # deferred: as above
    from archlint.discover import report_root  # deferred: as above
    from archlint.report.tactics import render_json, render_text, tactic_rows  # deferred: as above

    plan = _plan(paths or (".",))
    try:
        settings = read_settings(plan.config_start, config_file, targets=_split(targets))
    except ConfigError as error:
        raise UserError(str(error)) from None
    linked = link(settings.scan_options(plan.paths, use_cache=not no_cache), eager=False)
    ctx = linked.context
    rows = tactic_rows(ctx.tile_lists, ctx.targets, ctx.kb)
    prefix = scan_prefix(linked.root, report_root(tuple(plan.paths)))
    if prefix:
        rows = [replace(row, path=f"{prefix}/{row.path}") for row in rows]
    _emit(render_json(rows) if fmt == "json" else render_text(rows), output)
    return EXIT_CLEAN
