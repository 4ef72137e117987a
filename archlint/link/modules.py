"""One scan's Python modules, read lazily: which file is which dotted module, each module's facts
read when first asked for, and the tables one module's own facts give (its top-level bindings, its
assignments, its functions by local qualname).

`link.python.PyIndex` builds on this store to resolve names across modules, to find callers and
callees and the sources functions name; what one module's facts answer alone is kept here.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections import defaultdict
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Protocol

from archlint.link.reads import ReadLog
from archlint.model.python import PyAssign, PyFunction, PythonFacts, note_read


@dataclass(frozen=True)
class Binding:
    kind: str  # 'module' | 'symbol' (module, name) | 'function' | 'class' | 'assign'
    module: str
    name: str = ""


def module_name(path: str, files: Collection[str], roots: Sequence[str] = ()) -> str:
    """Dotted module name: the package chain found through `__init__.py` files."""
    parts = path[:-3].split("/") if path.endswith(".py") else path.split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    segments = path.split("/")

    def package(depth: int) -> bool:
        return "/".join(segments[:depth] + ["__init__.py"]) in files

    start = len(segments) - 1
    # A folder without __init__.py inside a package is a namespace portion of it (`sglang/srt/`
    # and `sglang/srt/layers/` below `sglang/__init__.py`): `sglang.srt.layers.attention.x` is
    # imported through them.
    while start > 0 and (package(start) or any(package(depth) for depth in range(start))):
        start -= 1
    if start == 0 and "__init__.py" in files and len(roots) == 1:
        top = PurePosixPath(str(roots[0]).replace("\\", "/")).name
        if top and top not in (".", ".."):
            return ".".join([top] + parts) if parts else top
    return ".".join(parts[start:])


class ModuleReader(Protocol):
    """Where a lazily built index reads modules from: their facts, and which files spell a word."""

    def read(self, paths: Sequence[str]) -> Mapping[str, PythonFacts | None]:
        """Full facts of these files (None for a file that gave none)."""
        ...

    def spelling(self, words: Collection[str]) -> frozenset[str] | None:
        """The files whose bytes hold any of the words; None when every file may."""
        ...


class ModuleStore:
    """The scan's Python modules by dotted name, each module's facts read through `reader` when
    something first asks for them, with the per-module tables made from them on first use."""

    def __init__(self, paths: Collection[str], roots: Sequence[str], files: Collection[str],
                 reader: ModuleReader, named: Sequence[tuple[str, str]] = ()) -> None:
        """`named`: the (module, path) pairs `named()` of a store of these very paths, files and
        roots gave, in place of naming each path again."""
        self.files = frozenset(files) | frozenset(paths)
        self.roots = tuple(roots)
        self._reader = reader
        self._path_of: dict[str, str] = dict(named)  # module name -> path, in path order
        self.module_of_path: dict[str, str] = {path: name for name, path in named}
        for path in sorted(paths) if not named else ():
            name = module_name(path, self.files, roots)
            if name not in self._path_of:
                self._path_of[name] = path
                self.module_of_path[path] = name
        self._facts: dict[str, PythonFacts] = {}
        self._scopes: dict[str, dict[str, Binding]] = {}
        self._assigns: dict[str, Mapping[tuple[str, str], tuple[PyAssign, ...]]] = {}
        self._local_functions: dict[str, dict[str, PyFunction]] = {}
        # word -> the positions (in path order) of the modules spelling it, ascending; None: every
        # module may. A set of names per word held 40 MB on FlashInfer 0.7.2.post1 (37,000 words).
        self._spellers: dict[str, array[int] | None] = {}
        self._position = {name: at for at, name in enumerate(self._path_of)}
        self.reads = ReadLog()  # what each answer asked of the modules reads of their packed records

    @property
    def modules(self) -> Mapping[str, PythonFacts]:
        """Module name -> facts (a view made on each use: the index holds no cycle, so it is freed
        the moment a scan drops it, with the collector paused)."""
        return _Modules(self)

    # ---------------------------------------------------------------- reading modules

    def load(self, names: Collection[str]) -> None:
        """Read the facts of these modules (one batch)."""
        wanted = [name for name in names if name in self._path_of and name not in self._facts]
        if not wanted:
            return
        read = self._reader.read([self._path_of[name] for name in wanted])
        for name in wanted:
            path = self._path_of[name]
            self._facts[name] = read.get(path) or PythonFacts(path, "")
            self.reads.watch(self._facts[name], self._position[name])

    def load_all(self) -> None:
        self.load(list(self._path_of))

    def load_paths(self, paths: Collection[str]) -> None:
        self.load([self.module_of_path[path] for path in paths if path in self.module_of_path])

    def loaded(self) -> list[tuple[str, PythonFacts]]:
        """The modules read so far, in path order."""
        return [(name, self._facts[name]) for name in self._path_of if name in self._facts]

    def module_number(self, module: str) -> int:
        """The module's position among the scan's modules (what link.reads notes its reads by)."""
        return self._position[module]

    def named(self) -> tuple[tuple[str, str], ...]:
        """Every module with its path, in module number order."""
        return tuple(self._path_of.items())

    def path_of(self, module: str) -> str | None:
        return self._path_of.get(module)

    def spelling(self, words: Collection[str]) -> list[str]:
        """Modules whose file may spell one of the words."""
        paths = self._reader.spelling(words)
        if paths is None:
            return list(self._path_of)
        return [self.module_of_path[path] for path in sorted(paths) if path in self.module_of_path]

    def _spells(self, module: str, word: str) -> bool:
        if word in self._spellers:
            spellers = self._spellers[word]
        else:
            paths = self._reader.spelling([word])
            spellers = self._spellers[word] = None if paths is None else array("I", sorted(
                self._position[self.module_of_path[path]] for path in paths if path in self.module_of_path))
        at = self._position.get(module)
        if at is None:
            return False  # not a module of the scan
        if spellers is None:
            return True  # the reader cannot tell: every module may spell it
        found = bisect_left(spellers, at)
        return found < len(spellers) and spellers[found] == at

    def _module(self, name: str) -> PythonFacts | None:
        if name not in self._path_of:
            return None
        if name not in self._facts:
            self.load([name])
        return self._facts[name]

    # ---------------------------------------------------------------- tables

    def scope(self, module: str) -> Mapping[str, Binding]:
        found = self._scopes.get(module)
        if found is None:
            facts = self._module(module)
            if facts is None:
                return {}
            found = self._scopes[module] = _scope(module, facts, facts.path.endswith("__init__.py"))
        return found

    def _assign_table(self, module: str) -> Mapping[tuple[str, str], tuple[PyAssign, ...]]:
        found = self._assigns.get(module)
        if found is None:
            facts = self._module(module)
            if facts is None:
                return {}
            found = self._assigns[module] = _AssignTable(facts)
        return found

    def _function_table(self, module: str) -> Mapping[str, PyFunction]:
        found = self._local_functions.get(module)
        if found is None:
            facts = self._module(module)
            found = self._local_functions[module] = {fn.qualname: fn for fn in facts.functions} if facts else {}
        return found


class _Modules(Mapping[str, PythonFacts]):
    """Module name -> facts, read on first use. Iterating reads every module."""

    def __init__(self, index: ModuleStore) -> None:
        self._index = index

    def __getitem__(self, name: str) -> PythonFacts:
        facts = self._index._module(name)
        if facts is None:
            raise KeyError(name)
        return facts

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self._index.path_of(name) is not None

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._index.module_of_path.values()))

    def __len__(self) -> int:
        return len(self._index.module_of_path)


class _AssignTable(Mapping[tuple[str, str], tuple[PyAssign, ...]]):
    """(function, target) -> the module's assignments of it, each unpickled when first asked for."""

    def __init__(self, facts: PythonFacts) -> None:
        positions: dict[tuple[str, str], list[int]] = defaultdict(list)
        for at, (targets, function) in enumerate(zip(facts.assigns.targets, facts.assigns.functions)):
            for target in targets:
                positions[(function, target)].append(at)
        self._assigns = facts.assigns
        self._positions = dict(positions)
        self._read: dict[tuple[str, str], tuple[PyAssign, ...]] = {}

    def __getitem__(self, key: tuple[str, str]) -> tuple[PyAssign, ...]:
        found = self._read.get(key)
        if found is None:
            found = self._read[key] = tuple(self._assigns.at(self._positions[key]))
        else:
            note_read(self._assigns, self._positions[key])
        return found

    def __contains__(self, key: object) -> bool:
        return key in self._positions

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return iter(self._positions)

    def __len__(self) -> int:
        return len(self._positions)


def _scope(module: str, facts: PythonFacts, is_package: bool) -> dict[str, Binding]:
    scope: dict[str, Binding] = {}
    package = module if is_package else module.rpartition(".")[0]
    for targets, function in zip(facts.assigns.targets, facts.assigns.functions):
        if not function:
            for target in targets:
                if target and "." not in target and "[" not in target:
                    scope[target] = Binding("assign", module, target)
    for imp in sorted(facts.imports, key=lambda imp: (imp.function != "", imp.line)):
        base = import_base(package, imp.module, imp.level)
        if base is None:
            continue
        if not imp.names:
            for alias in imp.aliases:
                top = imp.module.split(".")[0]
                if not imp.function or alias not in scope:
                    scope[alias] = Binding("module", top if alias == top else imp.module)
            continue
        for name, alias in zip(imp.names, imp.aliases):
            if name != "*" and (not imp.function or alias not in scope):
                scope[alias] = Binding("symbol", base, name)
    for cls in facts.classes:
        if "." not in cls.qualname:
            scope[cls.qualname] = Binding("class", module, cls.qualname)
    for fn in facts.functions:
        if "." not in fn.qualname:
            scope[fn.qualname] = Binding("function", module, fn.qualname)
    return scope


def import_base(package: str, module: str, level: int) -> str | None:
    if level == 0:
        return module
    parts = package.split(".") if package else []
    if level - 1 > len(parts):
        return None
    base = parts[: len(parts) - (level - 1)]
    return ".".join(base + ([module] if module else []))
