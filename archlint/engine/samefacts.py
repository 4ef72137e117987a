"""A scan whose changed files all kept their facts: the stored result stands.

A scan reads a file only through its facts, but for a few byte-level reads, each checked here: the
words that choose which host files are read in full first (engine.linking._host_files), and the C++
tiles of the files the gates' units can include (engine.cxx_tiles). So when every changed file's
facts are those its previous version had (their content hash aside: a comment appended, a trailing
blank line), the slot's stored result and state are this tree's too. They are stored again under
this tree's hashes, their bytes as they were, and nothing is judged or checked again: the early
cutoff a build system makes when a rebuilt input comes out the same.

Only for CUDA and Python files, for a state of this very scan's targets (a wider one's result is
narrowed: engine.rescan), and without the compile probe (it compiles the files' bytes, not their
facts). Anything else, and any file whose previous facts are not in the facts cache, leaves the
scan to engine.rescan and engine.pyrescan.
"""

from __future__ import annotations

from dataclasses import replace

from archlint.engine.store import ScanStore
from archlint.extract.files import DIRECTIVES, extract_all, read_bytes
from archlint.lang.cpp.lexical import whole_words
from archlint.model.files import Discovery, FileFacts, SourceFile
from archlint.model.scan import ScanOptions, ScanResult


def same_facts_result(options: ScanOptions, discovery: Discovery, cache, store: ScanStore) -> ScanResult | None:
    """The stored result, carried over to this tree, where every changed file kept its facts; else None."""
    if options.compile_probe:
        return None
    stamp = store.stamp()
    if stamp is None:
        return None
    digests = {path: (language, digest) for path, language, digest in stamp.digests}
    changed = store.changed_files(digests, discovery.files)
    if not changed or any(file.language not in ("cuda", "python") for file in changed):
        return None
    small = store.small_fields(stamp)
    if small is None or tuple(discovery.diagnostics) != small.get("discovery_diagnostics"):
        return None
    python = [file for file in changed if file.language == "python"]
    if python and not same_python_facts(python, digests, cache, options):
        return None
    if not all(_same_cuda_facts(file, digests[file.path][1], cache, options, small)
               for file in changed if file.language == "cuda"):
        return None
    return store.carry_over(stamp)


def same_python_facts(files: list[SourceFile], digests: dict[str, tuple[str, str]], cache, options: ScanOptions) -> bool:
    """Whether each changed Python file's full facts equal those of the version the stored state
    saw (its content hash then), its own hash aside: a comment added at the end, a blank line
    trimmed. A scan reads a Python file only through its facts (the bytes it reads of one more
    only pick which files to read: reading one more gives the same result, tests/test_demand.py),
    so the stored state then stands. A file the stored scan did not read in full (its old full
    facts are not in the cache) cannot be compared."""
    fresh = extract_all(files, 1, options.max_file_bytes, cache)
    for file, new in zip(files, fresh):
        old = cache.stored(file, digests[file.path][1])
        if old is None or old.python is None or new.python is None:
            return False
        if replace(old, python=replace(old.python, sha256=new.python.sha256)) != new:
            return False
    return True


def _same_cuda_facts(file: SourceFile, digest: str, cache, options: ScanOptions, small: dict) -> bool:
    """The CUDA file's facts, of the kind the stored scan read it for (its directives only, or in
    full), equal its previous version's, and neither the host files' choice nor the C++ tiles could
    read it otherwise."""
    directives = file.path in small.get("shallow", frozenset())
    old = cache.stored(replace(file, language=DIRECTIVES) if directives else file, digest)
    if old is None or old.cuda is None:
        return False
    (new,) = extract_all([file], 1, options.max_file_bytes, cache, directives)
    if new.cuda is None or replace(old, file=file, cuda=replace(old.cuda, sha256=new.cuda.sha256)) != new:
        return False
    data, _ = read_bytes(file, options.max_file_bytes)
    if data is None:
        return False
    words = small.get("host_words", ())
    if words and (new.cuda.host is not None or new.cuda.host_marked):
        if spells_any(data, words) != (file.path in small.get("host_first", frozenset())):
            return False
    return not _tiles_read(new, data, small.get("tile_lists", ()))


def _tiles_read(facts: FileFacts, data: bytes, tile_lists) -> bool:
    """Whether the C++ tiles could read something of the file: it holds what they look for now,
    or some stored tile list came from it."""
    from archlint.engine.cxx_tiles import holds_tiles  # deferred: its knowledge loads only here

    path = facts.file.path
    return holds_tiles(data) or any(t.fact.path == path or t.launcher == path for t in tile_lists)


def spells_any(data: bytes, words) -> bool:
    """The bytes spell one of the words, whole (a substring test first: most files hold none)."""
    held = [word for word in words if word.encode() in data]
    return bool(held) and whole_words(held).search(data) is not None

