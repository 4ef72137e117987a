"""The command line (click): scan, rules, explain, cache, graph; runtime is added from archlint.runtime."""

from archlint.cli.commands import cli, main

__all__ = ["cli", "main"]
