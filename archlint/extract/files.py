"""Read every discovered file once and extract its facts: in parallel, cached, never fatal.

A file that cannot be read or decoded yields a Diagnostic and empty facts; the scan goes on.
"""

from __future__ import annotations

import gc
import os
import pickle
import signal
import sys
import threading
from contextlib import contextmanager, nullcontext
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator

from archlint.extract.suppressions import may_hold_notes
from archlint.lang.cpp.jinja import stub_template
from archlint.model.cuda import TemplateHole
from archlint.model.files import FileFacts, SourceFile
from archlint.model.findings import Diagnostic

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor

# Files above this size get the directive scan and lexical extraction only, not a C++ parse.
PARSE_LIMIT = 1 << 20


def read_bytes(file: SourceFile, max_bytes: int) -> tuple[bytes | None, Diagnostic | None]:
    try:
        size = os.stat(file.absolute).st_size
        if size > max_bytes:
            with open(file.absolute, "rb") as handle:
                data = handle.read(max_bytes)
            return data, Diagnostic(file.path, f"file is {size:,} bytes, over the {max_bytes:,}-byte limit: only the first part was scanned")
        with open(file.absolute, "rb") as handle:
            return handle.read(), None
    except OSError as error:
        return None, Diagnostic(file.path, f"cannot be read: {error.strerror or error}")


# The languages a CUDA file's directive-only facts and a Python file's outline are cached under
# (`extract_file(..., directives=True)`).
DIRECTIVES = "cuda-directives"
OUTLINE = "python-outline"


def extract_file(file: SourceFile, max_bytes: int, directives: bool = False) -> FileFacts:
    """The file's facts; with `directives`, a CUDA file's directive-level facts only (no C++ parse):
    what it adds to the macro table and the include graph, its suppressions and diagnostics."""
    data, problem = read_bytes(file, max_bytes)
    notes = (problem,) if problem else ()
    if data is None:
        return FileFacts(file, diagnostics=notes)
    try:
        if directives and file.language == "cuda":
            return _extract_directives(file, data, notes)
        if directives and file.language == "python":
            return _python_outline(file, data, notes)
        return _extract(file, data, notes)
    except (RecursionError, MemoryError, ValueError, UnicodeError) as error:
        return FileFacts(file, diagnostics=(*notes, Diagnostic(file.path, f"could not be analysed: {type(error).__name__}: {error}")))


def extract_generated(path: str, script: SourceFile, max_bytes: int) -> FileFacts:
    """A unit a build-time generator script writes, read as the C++ template its string constants
    hold (extract/python/generator.py); `path` is what the build names it by (a glob pattern)."""
    from archlint.extract.python.generator import generator_templates, unit_text  # deferred: only CMake builds load it

    unit = SourceFile(path, script.absolute, "template")
    data, note = read_bytes(script, max_bytes)
    if data is None:
        return FileFacts(unit, diagnostics=(note,) if note else ())
    try:
        text = unit_text(generator_templates(data)).encode()
        return _extract(unit, text, ())
    except (RecursionError, MemoryError, ValueError, UnicodeError) as error:
        return FileFacts(unit, diagnostics=(Diagnostic(script.path, f"generator templates could not be read: {type(error).__name__}: {error}"),))


def _extract(file: SourceFile, data: bytes, notes: tuple[Diagnostic, ...]) -> FileFacts:
    if b"\x00" in data[:8192]:
        return FileFacts(file, diagnostics=(*notes, Diagnostic(file.path, "binary content (NUL bytes); skipped")))
    if file.language == "cmake":
        from archlint.extract.cmake.facts import extract_cmake  # deferred: only a tree with build lists loads it

        cmake = extract_cmake(file.path, data)
        return FileFacts(file, diagnostics=notes + cmake.diagnostics, cmake=cmake)
    if file.language == "python":
        from archlint.extract.python.facts import extract_python  # deferred: a CUDA re-scan never loads it

        python = extract_python(file.path, data)
        return FileFacts(file, python=python, diagnostics=notes + python.diagnostics)
    from archlint.extract.cuda.facts import extract_cuda  # deferred: a Python re-scan never loads it

    holes: tuple[TemplateHole, ...] = ()
    if file.language == "template":
        data, holes = stub_template(data)
    cuda = extract_cuda(file.path, data, parse_limit=PARSE_LIMIT)
    if holes:
        cuda = replace(cuda, template_holes=holes)
    if _undecodable(data):
        notes = (*notes, Diagnostic(file.path, "not valid UTF-8: read with replacement characters"))
    return FileFacts(file, cuda=cuda, diagnostics=notes + cuda.diagnostics)


def _extract_directives(file: SourceFile, data: bytes, notes: tuple[Diagnostic, ...]) -> FileFacts:
    from archlint.extract.cuda.facts import extract_cuda_directives  # deferred: as in _extract

    if b"\x00" in data[:8192]:
        return FileFacts(file, diagnostics=(*notes, Diagnostic(file.path, "binary content (NUL bytes); skipped")))
    cuda = extract_cuda_directives(file.path, data)
    if _undecodable(data):
        notes = (*notes, Diagnostic(file.path, "not valid UTF-8: read with replacement characters"))
    return FileFacts(file, cuda=cuda, diagnostics=notes + cuda.diagnostics)


def _python_outline(file: SourceFile, data: bytes, notes: tuple[Diagnostic, ...]) -> FileFacts:
    """What a Python file no gate needs adds to the report: its diagnostics and suppressions. A file
    with neither a suppression comment (nor a `noqa` naming archlint ids) nor a syntax error adds
    only its reading notes, so it is parsed, not walked; any other gets its full facts."""
    from archlint.extract.python.facts import decode_source, has_syntax_error  # deferred: as in _extract

    if b"\x00" in data[:8192] or may_hold_notes(data) or has_syntax_error(data):
        return _extract(file, data, notes)
    _, _, decoding = decode_source(file.path, data)
    return FileFacts(file, diagnostics=notes + decoding)


def _undecodable(data: bytes) -> bool:
    try:
        data.decode("utf-8")
        return False
    except UnicodeDecodeError:
        return True


def _extract_many(batch: list[SourceFile], max_bytes: int, directives: bool = False, sink=None) -> list[FileFacts]:
    """The batch's facts, each stored through `sink` (when given) as soon as it is made."""
    out = []
    for file in batch:
        facts = extract_file(file, max_bytes, directives)
        if sink is not None:
            _stored(file, facts, sink)
        out.append(facts)
    return out


def _extract_pickled(batch: list[SourceFile], max_bytes: int, directives: bool, sink) -> list[bytes]:
    """In a worker: the batch's facts pickled once, both for the cache entry and for the trip back."""
    out = []
    for file in batch:
        payload = _stored(file, extract_file(file, max_bytes, directives), sink)
        if payload is None:
            raise ValueError(f"{file.path}: facts cannot be pickled")
        out.append(payload)
    return out


def extract_into(batch: list[SourceFile], max_bytes: int, directives: bool, cache) -> int:
    """In a worker: the batch's facts stored into `cache` (FactsCache.detached: this process hashes
    the files) and nothing sent back but how many were extracted. A later extract_all takes them
    from the cache."""
    sink = cache.sink([_cache_key(file, directives) for file in batch])
    # the others are unreadable or modified too recently to store: not worth extracting here
    return len(_extract_many([file for file in batch if file.absolute in sink.expected], max_bytes, directives, sink))


def _stored(file: SourceFile, facts: FileFacts, sink) -> bytes | None:
    """The facts pickled, and stored through `sink` when given (None: they cannot be pickled)."""
    payload = pickled(facts)
    if payload is not None and sink is not None:
        sink.write(file, payload)
    return payload


def pickled(value: object) -> bytes | None:
    """The value pickled, as a cache entry and a worker's answer hold it, or None when it cannot be."""
    try:
        return pickle.dumps(value, protocol=5)
    except (pickle.PicklingError, TypeError, AttributeError, RecursionError):
        return None


class Workers:
    """The worker processes of one scan, shared by its extraction stages. They start with the first
    batch, as fresh interpreters: a worker forked from the main process would map all the main
    process holds by then. A worker keeps what its largest file took (tree-sitter's tree and the
    facts of a generated kernel of a megabyte take about 0.1 GB), so a scan closes them between stages
    that read different files (`close`), and the next batch starts new ones."""

    def __init__(self, jobs: int) -> None:
        self.jobs = jobs or os.cpu_count() or 1
        self._pool: ProcessPoolExecutor | None = None

    def pool(self) -> ProcessPoolExecutor:
        if self._pool is None:
            import multiprocessing  # deferred: a scan that starts no worker (a one-file re-scan) skips their import
            from concurrent.futures import ProcessPoolExecutor

            _quiet_resource_tracker()
            self._pool = ProcessPoolExecutor(max_workers=self.jobs, mp_context=multiprocessing.get_context("spawn"),
                                             initializer=_worker_started)
        return self._pool

    def map(self, function: Callable, *columns: list) -> Iterator:
        """pool().map, its workers started (on the first batches) with Ctrl-C held back: a spawned
        worker inherits the blocked signal, so only the main process hears it (and stops them)."""
        with _interrupts_held():
            return self.pool().map(function, *columns)

    def call(self, function: Callable, *args: object) -> Any:
        """function(*args) in a worker, its result (or its exception) brought back."""
        with _interrupts_held():
            future = self.pool().submit(function, *args)
        return future.result()

    @contextmanager
    def meanwhile(self, function: Callable, batches: list[tuple]) -> Iterator[None]:
        """function(*batch) for each batch, one batch at a time, on one worker while the caller
        goes on (its own batches keep the others, and find that one free soon); leaving, the batches
        not begun are dropped and the one in hand is left to finish. What they return is not kept."""
        stop = threading.Event()
        pool = self.pool()  # made here, not in the thread as well as by the caller

        def feed() -> None:
            try:
                for batch in batches:
                    with _interrupts_held():
                        future = pool.submit(function, *batch)
                    while not future.done():
                        if stop.wait(0.05):
                            return
                    if stop.is_set() or future.cancelled() or future.exception() is not None:
                        return
            except Exception:  # the pool broke or shut down: the caller's own stage does the rest
                return

        thread = threading.Thread(target=feed, name="archlint-meanwhile", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, kind, *exc) -> None:
        self.close(stop=kind is not None)

    def close(self, stop: bool = False) -> None:
        """Let the workers finish and end (a later batch starts them again); `stop`: the scan is
        abandoned (Ctrl-C, an error), so they are terminated where they are."""
        pool, self._pool = self._pool, None
        if pool is None:
            return
        if not stop:
            pool.shutdown(cancel_futures=True)
            return
        processes = list((getattr(pool, "_processes", None) or {}).values())
        pool.shutdown(wait=False, cancel_futures=True)
        for process in processes:
            process.terminate()
        for process in processes:
            process.join(5)


# multiprocessing's resource tracker (started with the pool, and given this process's -W options)
# reclaims the semaphores of a pool abandoned on Ctrl-C, and can warn that it did so after
# archlint has printed its one line: the reclaiming is its job, the warning noise to the user
_TRACKER_QUIET = "ignore::UserWarning:multiprocessing.resource_tracker"


def _quiet_resource_tracker() -> None:
    if _TRACKER_QUIET not in sys.warnoptions:
        sys.warnoptions.append(_TRACKER_QUIET)


def _worker_started() -> None:
    """A worker's setup: Ctrl-C is the main process's to handle (it stops the workers), so a worker
    never prints a traceback for it; the cycle collector stays off, as in the main process
    (`engine.collector`)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # ignored now: the held one is dropped
    gc.disable()


@contextmanager
def _interrupts_held() -> Iterator[None]:
    """SIGINT blocked in this thread, and ignored, while workers are spawned: they start with it
    blocked and ignored, before any of their code runs (an interpreter started with SIGINT ignored
    leaves it so: no KeyboardInterrupt while a worker imports). One that comes meanwhile stays
    pending (a blocked signal is never discarded, ignored or not) and is delivered when the block
    ends, to the handler this thread had."""
    if not hasattr(signal, "pthread_sigmask"):  # Windows: no process group gets Ctrl-C's signal this way
        yield
        return
    before = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    main_thread = threading.current_thread() is threading.main_thread()  # the only one that may set a handler
    handler = signal.signal(signal.SIGINT, signal.SIG_IGN) if main_thread else None
    try:
        yield
    finally:
        if handler is not None:
            signal.signal(signal.SIGINT, handler)
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


def extract_all(files: Iterable[SourceFile], jobs: int, max_bytes: int, cache=None, directives: bool = False,
                progress: Callable[[int, int], None] | None = None, workers: Workers | None = None) -> list[FileFacts]:
    """Facts for every file, in the order given. `cache` (optional) offers get(file) and
    sink(files), whose write(file, payload) stores an entry from any process; `directives`: CUDA
    files' directive-level facts only; `progress(done, total)` is told as files finish; `workers`:
    the scan's pool (else one is made for this call)."""
    files = list(files)
    results: dict[str, FileFacts] = {}
    todo: list[SourceFile] = []
    for file in files:
        cached = cache.get(_cache_key(file, directives)) if cache is not None else None
        if cached is not None:
            results[file.path] = replace(cached, file=file)
        else:
            todo.append(file)
    done = len(results)
    if progress is not None:
        progress(done, len(files))
    sink = cache.sink([_cache_key(file, directives) for file in todo]) if cache is not None and todo else None
    with Workers(jobs) if workers is None else nullcontext(workers) as pool:
        for chunk in _run(todo, pool, max_bytes, directives, sink):
            for facts in chunk:
                results[facts.file.path] = facts
            done += len(chunk)
            if progress is not None:
                progress(done, len(files))
    return [results[file.path] for file in files]


def _cache_key(file: SourceFile, directives: bool) -> SourceFile:
    """Directive-only facts of a CUDA file are kept apart from its full facts."""
    if directives and file.language in ("cuda", "python"):
        return replace(file, language=DIRECTIVES if file.language == "cuda" else OUTLINE)
    return file


# Files from which one job extracts them in a worker too: what parsing thousands of files leaves
# would stay in this process's arenas (350 MiB on FlashInfer's CUDA files) while the verdicts need
# the memory; fewer are read sooner than a worker starts
ONE_JOB_APART_FROM = 256


def _run(todo: list[SourceFile], workers: Workers, max_bytes: int, directives: bool, sink) -> Iterator[list[FileFacts]]:
    """The facts in chunks, as they are made: in the workers whenever there are two files or more
    and two workers, or many files (the main process only loads what they send back)."""
    jobs = workers.jobs
    if len(todo) < 2 or (jobs <= 1 and len(todo) < ONE_JOB_APART_FROM):
        for start in range(0, len(todo), 64):
            yield _extract_many(todo[start:start + 64], max_bytes, directives, sink)
        return
    # Interleave big and small files so workers finish together; small batches keep progress moving.
    count = min(len(todo), max(jobs * 4, len(todo) // 64))
    batches = [todo[i::count] for i in range(count)]
    sinks = [sink.only(batch) if sink is not None else None for batch in batches]
    for payloads in workers.map(_extract_pickled, batches, [max_bytes] * count, [directives] * count, sinks):
        yield [pickle.loads(payload) for payload in payloads]
