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

from archlint.extract.python.tactics import tile_lists
from archlint.extract.python.walk import parse, walk_module
from archlint.knowledge.idioms import Idioms, load_idioms
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




def has_syntax_error(data: bytes) -> bool:
    """The file does not parse cleanly as Python (its full facts would carry a syntax error)."""
    text, _, _ = decode_source("", data)
    return text is not None and parse(text.encode("utf-8")).root_node.has_error
