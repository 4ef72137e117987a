"""Python facts: what archlint needs from one `.py` file, as plain frozen data.

Nothing in a scanned tree is imported or executed: the file is parsed with tree-sitter and
summarised into `PythonFacts`, which holds no tree-sitter objects and can be cached by content
hash. Qualnames here are local to the module ('func', 'Class.method'); `pylink` prefixes them.
"""

from __future__ import annotations

import gc
import hashlib
from dataclasses import replace
from collections.abc import Iterator
from contextlib import contextmanager

from archlint.extract.python.flags import flag_lists, mutations
from archlint.extract.python.nodes import first_error_line
from archlint.extract.python.tactics import tile_lists
from archlint.extract.python.walk import Walker, parse
from archlint.extract.suppressions import python_suppressions
from archlint.knowledge.idioms import Idioms, load_idioms
from archlint.lang.python.expr import int_values, read_names
from archlint.lang.python.lines import line_span, logical_lines
from archlint.lang.python.strings import is_path_expr
from archlint.model import python as pf
from archlint.model.findings import Diagnostic
from archlint.model.python import PythonFacts


def decode_source(path: str, data: bytes) -> tuple[str | None, str, tuple[Diagnostic, ...]]:
    """(text, encoding, diagnostics); text is None when the file is not text at all."""
    if b"\x00" in data[:8192]:
        return None, "binary", (Diagnostic(path, "binary file (NUL bytes): not parsed as Python"),)
    try:
        return data.decode("utf-8"), "utf-8", ()
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        note = Diagnostic(path, "not valid UTF-8; decoded as latin-1", line)
        return data.decode("latin-1"), "latin-1", (note,)


def extract_python(path: str, data: bytes, idioms: Idioms | None = None) -> PythonFacts:
    """Facts of one Python file. `path` is posix, relative to the scan root; `idioms` is the gate
    vocabulary flag lists and path expressions are read with (the shipped one by default)."""
    sha = hashlib.sha256(data).hexdigest()
    text, encoding, notes = decode_source(path, data)
    if text is None:
        return PythonFacts(path=path, sha256=sha, encoding=encoding, diagnostics=notes)
    with _no_cycle_collection():
        source = data if encoding == "utf-8" else text.encode("utf-8")
        facts = walk_module(path, sha, source, encoding, notes, idioms or load_idioms())
        lists = tile_lists(path, source)
        return replace(facts, tactics=lists) if lists else facts


@contextmanager
def _no_cycle_collection() -> Iterator[None]:
    """The walk makes hundreds of thousands of small objects and no reference cycles: reference
    counting frees them all, and the cycle collector would only scan them (and every fact the
    caller already holds) again and again while they are made."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def walk_module(path: str, sha: str, data: bytes, encoding: str, notes: tuple, idioms: Idioms) -> pf.PythonFacts:
    """One module's facts: the walk's lists made into `PythonFacts`, with what is read from them as
    a whole (constants, path assignments, flag lists, suppressions, a syntax error's diagnostic)."""
    tree = parse(data)
    walker = Walker(path, data, idioms)
    walker.run(tree.root_node)
    out = walker.out
    if tree.root_node.has_error and not out.errors:
        out.errors.append(first_error_line(tree.root_node))
    diagnostics = list(notes)
    if out.errors:
        first = min(out.errors)
        diagnostics.append(Diagnostic(path, f"Python syntax error near line {first}; facts are partial", first))
    assigns = tuple(out.assigns)
    return pf.PythonFacts(
        path=path,
        sha256=sha,
        encoding=encoding,
        functions=tuple(out.functions),
        classes=tuple(out.classes),
        calls=pf.PyCalls.of(out.calls),
        imports=tuple(out.imports),
        constants=_constants(assigns),
        assigns=pf.PyAssigns.of(assigns, read_names),
        paths=tuple(a for a in assigns if is_path_expr(a.value, idioms.path_calls) and not a.unpack),
        sources=tuple(out.sources),
        flags=flag_lists(out.calls, assigns, out.extends, idioms, {fn.qualname: fn.params for fn in out.functions}),
        extended=tuple(sorted({name for function, name, *_ in [*out.extends, *mutations(out.calls)] if not function})),
        tests=tuple(out.tests),
        returns=tuple(out.returns),
        loops=tuple(out.loops),
        arch_strings=tuple(out.arch_strings),
        suppressions=_suppressions(out.comments, tree.root_node),
        diagnostics=tuple(diagnostics),
        partial_parse=bool(out.errors),
    )


def _constants(assigns) -> tuple[pf.PyConstant, ...]:
    found = []
    for assign in assigns:
        if assign.function or assign.unpack:
            continue
        values = int_values(assign.value)
        if values is not None:
            found.append(pf.PyConstant(assign.targets[0], values, assign.line, assign.value_span))
    return tuple(found)


def _suppressions(comments, root) -> tuple:
    """A suppression covers the logical line its comment sits on (any line of a statement, however
    many its brackets take) or, on a line of its own between statements, the next one."""
    spans: list | None = None
    found = []
    for text, line, trailing in comments:
        if "archlint:" not in text and "noqa" not in text.lower():
            continue
        if spans is None:
            spans = logical_lines(root)
        found += python_suppressions(text, line, line_span(spans, line, own_line=not trailing))
    return tuple(found)


def has_syntax_error(data: bytes) -> bool:
    """The file does not parse cleanly as Python (its full facts would carry a syntax error)."""
    text, _, _ = decode_source("", data)
    return text is not None and parse(text.encode("utf-8")).root_node.has_error
