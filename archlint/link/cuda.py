"""Cross-file linking of CUDA facts: include resolution, the macro table, the function index."""

from __future__ import annotations

import posixpath
import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Iterable, Mapping

from archlint.lang.cpp.directives import guard_chain
from archlint.lang.cpp.evaluate import Binding
from archlint.knowledge.headers import is_external
from archlint.knowledge.library_macros import load_library_macros
from archlint.lang.cpp.expr import parse_condition
from archlint.lang.cpp.lexical import lexical_calls
from archlint.lang.cpp.traps import trap_macro
from archlint.model.cuda import BodyLine, CudaFacts, Function, Include


@dataclass(frozen=True)
class ResolvedInclude:
    include: Include
    target: str | None  # root-relative path, or None
    external: bool  # unresolved, but a toolkit/std/framework header


@dataclass
class CudaIndex:
    files: Mapping[str, CudaFacts]
    # both may load lazily (a partial re-scan reads them from the stored scan as they are asked for)
    includes: Mapping[str, tuple[ResolvedInclude, ...]] = field(default_factory=dict)
    bindings: Mapping[str, tuple[Binding, ...]] = field(default_factory=dict)
    functions_by_name: Mapping[str, tuple[tuple[str, Function], ...]] = field(default_factory=dict)

    macro_calls: dict[str, tuple[str, ...]] = field(default_factory=dict)
    trap_macros: dict[str, bool] = field(default_factory=dict)  # macro -> traps whatever its arguments
    links: tuple["FileLinks", ...] = ()  # per file, in path order: what the tables above were built from

    def resolved(self, path: str) -> tuple[ResolvedInclude, ...]:
        return self.includes.get(path, ())

    def expand(self, names: tuple[str, ...]) -> set[str]:
        """Names plus those called inside the bodies of function-like macros among them."""
        out, stack = set(names), [n for n in names if n in self.macro_calls]
        while stack:
            for inner in self.macro_calls[stack.pop()]:
                if inner not in out:
                    out.add(inner)
                    if inner in self.macro_calls:
                        stack.append(inner)
        return out

    def traps(self, line: BodyLine) -> bool:
        """A body line traps: a trap itself, or a call of a function-like macro that traps for its
        arguments (always, or for a literal `false` when the macro tests its condition). A macro that
        traps only through another macro is read as testing a condition."""
        if line.trap:
            return True
        if not line.call:
            return False
        always = self.trap_macros.get(line.call)
        if always is not None:
            return always or line.false_arg
        return line.false_arg and any(name in self.trap_macros for name in self.expand((line.call,)))


def include_closure(index: CudaIndex, sources: Iterable[str]) -> frozenset[str]:
    """Every file the sources can include, for any target: what a gate's verdicts can read."""
    seen = set(sources)
    stack = list(seen)
    while stack:
        for resolved in index.resolved(stack.pop()):
            if resolved.target is not None and resolved.target not in seen:
                seen.add(resolved.target)
                stack.append(resolved.target)
    return frozenset(seen)


def include_roots(paths: Iterable[str], extra: Iterable[str] = ()) -> tuple[str, ...]:
    """Folders named `include` or `csrc` in the scan, plus the user's --include-dir (root-relative)."""
    roots: set[str] = set(extra)
    for path in paths:
        parts = path.split("/")
        for i, part in enumerate(parts[:-1]):
            if part in ("include", "csrc"):
                roots.add("/".join(parts[: i + 1]))
    return tuple(sorted(roots))


class _Resolver:
    def __init__(self, files: Iterable[str], roots: tuple[str, ...], generated: Mapping[str, str] | None = None):
        self.files = set(files)
        self.roots = roots
        self.generated = dict(generated or {})  # a file the JIT renders -> its template
        self.by_name: dict[str, list[str]] = defaultdict(list)  # file name -> paths, sorted
        for path in sorted(self.files):
            self.by_name[path.rpartition("/")[2]].append(path)
        self._by_suffix: dict[str, list[str]] = {}

    def ending_with(self, tail: str) -> list[str]:
        """The files whose path is `tail` or ends with `/tail`, sorted: every tail, as
        `tensorrt_llm/kernels/.../moe_kernels.cuh` too. Found from the file name when asked for,
        so a re-scan resolving one file's includes does not index every tail of every path."""
        if tail not in self._by_suffix:
            self._by_suffix[tail] = [path for path in self.by_name.get(tail.rpartition("/")[2], ())
                                     if path == tail or path.endswith("/" + tail)]
        return self._by_suffix[tail]

    def resolve(self, including: str, target: str) -> str | None:
        target = target.replace("\\", "/")
        local = posixpath.normpath(posixpath.join(posixpath.dirname(including), target))
        if local in self.files:
            return local
        for root in self.roots:
            candidate = posixpath.normpath(posixpath.join(root, target))
            if candidate in self.files:
                return candidate
        # Any folder that resolves it: a unique file whose path ends with the include text.
        matches = self.ending_with(posixpath.normpath(target))
        if len(matches) == 1:
            return matches[0]
        if matches:
            shared = [m for m in matches if m.split("/")[0] == including.split("/")[0]]
            return min(shared or matches, key=lambda m: (len(m), m))
        return self.generated.get(target)


@dataclass(frozen=True)
class FileLinks:
    """What one file adds to the scan-wide tables; the index holds no other cross-file state."""

    path: str
    includes: tuple[ResolvedInclude, ...]
    bindings: tuple[tuple[str, Binding], ...]  # (macro name, binding), in the file's order
    macro_calls: tuple[tuple[str, tuple[str, ...]], ...]  # function-like macro -> names its body calls
    trap_macros: tuple[tuple[str, bool], ...]  # function-like macro whose body traps -> always (not on a condition)
    function_names: tuple[str, ...]  # in the file's order, repeats kept


def resolver_for(paths: Iterable[str], extra_include_dirs: Iterable[str] = (), generated: Mapping[str, str] | None = None) -> _Resolver:
    paths = sorted(paths)
    return _Resolver(paths, include_roots(paths, extra_include_dirs), generated)


_SPACES_RE = re.compile(rb"\s+")


def file_links(resolver: _Resolver, fact: CudaFacts) -> FileLinks:
    bindings, macros, traps = [], [], []
    for define in fact.defines:
        bindings.append((define.name, Binding(define.value, define.params, guard_chain(fact.regions, define.region), define.undef)))
        if define.params is not None and define.value:
            body = _SPACES_RE.sub(b" ", define.value.encode())  # the padding before each `\` continuation
            macros.append((define.name, tuple(sorted(set(lexical_calls(body, 0, len(body)))))))
            always = trap_macro(define.value)
            if always is not None:
                traps.append((define.name, always))
    return FileLinks(fact.path, tuple(_resolve_all(resolver, fact)), tuple(bindings), tuple(macros), tuple(traps),
                     tuple(f.name for f in fact.functions))


def build_index(facts: Iterable[CudaFacts], extra_include_dirs: Iterable[str] = (),
                generated: Mapping[str, str] | None = None) -> CudaIndex:
    """`generated`: files a JIT renders from a template before compiling (name -> template path)."""
    files = {f.path: f for f in facts}
    resolver = resolver_for(files, extra_include_dirs, generated)
    functions: dict[str, list[tuple[str, Function]]] = defaultdict(list)
    for path in sorted(files):
        for function in files[path].functions:
            functions[function.name].append((path, function))
    links = [file_links(resolver, files[path]) for path in sorted(files)]
    return assemble(files, links, {name: tuple(values) for name, values in functions.items()})


def assemble(files: Mapping[str, CudaFacts], links: Iterable[FileLinks], functions_by_name: Mapping) -> CudaIndex:
    """The index from per-file links taken in path order; `files` and `functions_by_name` may load lazily."""
    links = tuple(links)
    index = CudaIndex(files, functions_by_name=functions_by_name, links=links)
    bindings: dict[str, list[Binding]] = defaultdict(list)
    index.includes = {links_of_file.path: links_of_file.includes for links_of_file in links}
    for links_of_file in links:
        for name, binding in links_of_file.bindings:
            bindings[name].append(binding)
        for name, calls in links_of_file.macro_calls:
            index.macro_calls[name] = tuple(sorted(set(index.macro_calls.get(name, ())) | set(calls)))
        for name, always in links_of_file.trap_macros:  # always only if every definition always traps
            index.trap_macros[name] = always and index.trap_macros.get(name, True)
    for name, binding in _library_bindings(links, bindings):
        bindings[name].append(binding)
    index.bindings = {name: tuple(values) for name, values in bindings.items()}
    return index


def _library_bindings(links: tuple[FileLinks, ...], bound: Mapping[str, list[Binding]]) -> list[tuple[str, Binding]]:
    """The configuration macros of a header library that scanned files include but the scan does not
    hold (rules/kb/library_macros.toml), defined as the library defines them: only where no scanned
    file defines the macro itself."""
    missing = {resolved.include.target for file in links for resolved in file.includes if resolved.target is None}
    out = []
    for macro in load_library_macros():
        if macro.name not in bound and any(target.startswith(macro.prefix) for target in missing):
            out.append((macro.name, Binding("1", None, (parse_condition(macro.condition),))))
    return out


def _resolve_all(resolver: _Resolver, fact: CudaFacts) -> list[ResolvedInclude]:
    out = []
    for include in fact.includes:
        target = None if include.system and is_external(include.target) else resolver.resolve(fact.path, include.target)
        external = target is None and (include.system or is_external(include.target))
        out.append(ResolvedInclude(include, target, external))
    return out
