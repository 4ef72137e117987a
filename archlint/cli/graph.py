"""`archlint graph`: the gate → source → header → kernel → construct graph, for people who would rather look.

The config is read as `archlint scan` reads it, and what it says about the scan itself (targets,
exclude, include-dirs, max-file-bytes) holds here too. The rest of post-processing (select and
ignore, suppressions, levels, per-file ignores, baseline) decides which findings are reported; a
graph holds gates, files, kernels and constructs, no findings, so none of it changes the graph.
"""

from __future__ import annotations

import sys

import click

from archlint.cli.exits import UserError


@click.command("graph")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("--format", "fmt", type=click.Choice(["graphml", "json", "dot"]), default="dot", show_default=True,
              help="Output format.")
@click.option("--gate", "gate_filter", default="", help="Only gates whose text or function contains this.")
@click.option("--target", "targets", multiple=True, help="Targets to judge gates for (default: the config's, else the KB's list).")
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), help="Write to FILE instead of stdout.")
@click.option("--no-cache", is_flag=True, help="Do not read or write the facts cache.")
@click.option("--config", "config_file", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Use this config file instead of the nearest archlint.toml or pyproject.toml.")
def graph_command(paths, fmt, gate_filter, targets, output, no_cache, config_file):
    """Draw what each gate guards, from the Python gate to the instructions its kernels use."""
    from archlint.config import (  # deferred: loaded only when the command runs
        ConfigError,
        read_settings,
    )
    from archlint.discover import report_root  # deferred: as above
    from archlint.engine.linking import link  # deferred: as above
    from archlint.postprocess.paths import scan_prefix  # deferred: as above
    from archlint.report.graph import build_graph, export, rebased  # deferred: as above

    try:
        settings = read_settings(paths[0], config_file, targets=tuple(targets))
    except ConfigError as error:
        raise UserError(str(error)) from None
    linked = link(settings.scan_options(tuple(paths), use_cache=not no_cache))
    graph = build_graph(linked, gate_filter)
    if gate_filter and not any(kind == "gate" for _, kind in graph.nodes(data="kind")):
        raise UserError(f"no gate's text or function contains {gate_filter!r}; `archlint graph PATH` draws them all")
    text = export(rebased(graph, scan_prefix(linked.root, report_root(tuple(paths)))), fmt)
    if output:
        with open(output, "w", encoding="utf-8") as handle:
            handle.write(text)
    else:
        sys.stdout.write(text)
