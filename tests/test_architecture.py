"""The package's shape holds: no import cycle, and an archlint module imported inside a function
only where deferring it keeps start-up fast, with a comment that says so.

The layering itself (which stage may import which) is checked by import-linter with the contracts
in pyproject.toml (`lint-imports`, run by .ci/run).
"""

from __future__ import annotations

import ast
from pathlib import Path

import grimp
import networkx as nx

PACKAGE = Path(__file__).resolve().parent.parent / "archlint"
DEFERRED = "# deferred:"


def test_no_import_cycle() -> None:
    """Imports under `TYPE_CHECKING` count: a type imported back from a module above is a cycle in
    the design even where it is none at run time."""
    graph = grimp.build_graph("archlint", exclude_type_checking_imports=False)
    imports = nx.DiGraph()
    for module in graph.modules:
        for imported in graph.find_modules_directly_imported_by(module):
            imports.add_edge(module, imported)
    assert list(nx.simple_cycles(imports)) == []


def test_judge_helpers_stay_below_the_analysis() -> None:
    """Within judge/, only the verdict ladder builds on judge.analysis; the helpers it calls take
    the types they share from judge.view, even for annotations."""
    graph = grimp.build_graph("archlint", exclude_type_checking_imports=False)
    importers = {module for module in graph.find_modules_that_directly_import("archlint.judge.analysis")
                 if module.startswith("archlint.judge.")}
    assert importers == {"archlint.judge.verdicts"}
    assert "archlint.judge.analysis" not in graph.find_upstream_modules("archlint.judge.view")


def _local_imports(path: Path) -> list[tuple[int, int, str]]:
    """(first line, last line, module) of each archlint import written inside a function."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for inner in ast.walk(node):
            if isinstance(inner, ast.ImportFrom) and (inner.module or "").startswith("archlint"):
                found.append((inner.lineno, inner.end_lineno or inner.lineno, inner.module or ""))
            elif isinstance(inner, ast.Import):
                found.extend((inner.lineno, inner.end_lineno or inner.lineno, a.name)
                             for a in inner.names if a.name.startswith("archlint"))
    return found


def test_function_local_imports_say_why() -> None:
    unexplained = []
    for path in sorted(PACKAGE.rglob("*.py")):
        lines = path.read_text().splitlines()
        for first, last, module in _local_imports(path):
            # the comment may sit on the line above or on any line of the statement
            if not any(DEFERRED in text for text in lines[first - 2 : last]):
                unexplained.append(f"{path.relative_to(PACKAGE.parent)}:{first}: {module}")
    assert unexplained == []
