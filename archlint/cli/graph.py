"""`archlint graph`: the gate → source → header → kernel → construct graph, for people who would rather look."""

from __future__ import annotations

import sys

import click


@click.command("graph")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("--format", "fmt", type=click.Choice(["graphml", "json", "dot"]), default="dot", show_default=True,
              help="Output format.")
@click.option("--gate", "gate_filter", default="", help="Only gates whose text or function contains this.")
@click.option("--target", "targets", multiple=True, help="Targets to judge gates for (default: the KB's list).")
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), help="Write to FILE instead of stdout.")
@click.option("--no-cache", is_flag=True, help="Do not read or write the facts cache.")
def graph_command(paths, fmt, gate_filter, targets, output, no_cache):
    """Draw what each gate guards, from the Python gate to the instructions its kernels use."""
    from archlint.model.scan import ScanOptions
    from archlint.report.graph import build_graph, export
    from archlint.engine.pipeline import link

    linked = link(ScanOptions(paths=tuple(paths), targets=tuple(targets), use_cache=not no_cache))
    text = export(build_graph(linked, gate_filter), fmt)
    if output:
        with open(output, "w", encoding="utf-8") as handle:
            handle.write(text)
    else:
        sys.stdout.write(text)
