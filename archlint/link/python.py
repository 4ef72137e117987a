"""Linking Python facts across files: module names, imports, calls, path roots, source files.

Everything is resolved from the facts alone: a package's `jit_env.FLASHINFER_CSRC_DIR` is found
by following its definition chain (`Path(__file__).resolve().parents[1] / "data" / "csrc"`),
never by importing it.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from sys import intern

from archlint.knowledge.idioms import Idioms, load_idioms
from archlint.link.modules import Binding, ModuleReader, ModuleStore, import_base
from archlint.link.paths import TemplateRender, resolve_sources
from archlint.model.python import PyAssign, PyFunction, PythonFacts, ResolvedSource

_MAX_HOPS = 12


class _Given:
    """A reader over facts already read: every module is loaded up front."""

    def __init__(self, facts: Sequence[PythonFacts]) -> None:
        self._facts = {item.path: item for item in facts}

    def read(self, paths: Sequence[str]) -> Mapping[str, PythonFacts | None]:
        return {path: self._facts.get(path) for path in paths}

    def spelling(self, words: Collection[str]) -> frozenset[str] | None:
        return None


# Imports that bind names of a package's modules without spelling the module's own name.
PACKAGE_IMPORTS = ("from . import", "from .. import", "from ... import", "import *")


class PyIndex(ModuleStore):
    """The linked Python modules. A module's facts are read when something asks for them: every
    answer is the one the index of all modules gives, as long as every module that holds gate
    vocabulary, a source name or a flag list is loaded before linking (`load`); the global walks
    (`loaded`) see those. What a module can only reach by name (a caller, a function defined in
    a package prefix) is found among the files that spell the name. Reading the modules and their
    own tables is `ModuleStore`'s; this class resolves names across them."""

    def __init__(self, paths: Collection[str], roots: Sequence[str], files: Collection[str],
                 reader: ModuleReader, idioms: Idioms | None = None, named: Sequence[tuple[str, str]] = ()) -> None:
        super().__init__(paths, roots, files, reader, named)
        self.idioms = idioms or load_idioms()
        self._callers: dict[str, tuple[str, ...]] = {}
        # those whose search read packed records, with the reads (counted again where asked again: link.reads)
        self._callers_reading: dict[str, set[int]] = {}
        self._lasts: dict[str, tuple[str, ...]] = {}  # module -> the last name of each call's callee
        self._importers: frozenset[str] | None = None  # modules importing from a package, or all names
        self._resolved: dict[tuple[str, str, str], Binding | None] = {}
        self._callees: dict[str, tuple[str, ...]] = {}
        self._functions: dict[str, PyFunction | None] = {}
        self._sources: Mapping[str, tuple[ResolvedSource, ...]] = {}
        self.generated: Mapping[str, str] = {}  # generated file name -> template path
        self.renders: tuple[TemplateRender, ...] = ()  # each template rendering with its arguments

    @property
    def functions(self) -> Mapping[str, PyFunction]:
        return _Functions(self)

    # ---------------------------------------------------------------- functions and calls

    def loaded_functions(self) -> list[str]:
        """Full qualnames of the functions of the modules read so far."""
        return list(dict.fromkeys(self.qualify(name, fn.qualname) for name, facts in self.loaded() for fn in facts.functions))

    def function(self, qualname: str) -> PyFunction | None:
        """The function of that full qualname (qualname rewritten to full). Where two modules give
        the same full name (module `a`'s `b.c`, module `a.b`'s `c`), the later path wins."""
        if qualname in self._functions:
            return self._functions[qualname]
        last = qualname.rpartition(".")[2]
        found = None
        for module in sorted(self._prefixes(qualname), key=self._path_of.__getitem__, reverse=True):
            if module == qualname or not self._spells(module, last):
                continue
            fn = self._function_table(module).get(qualname[len(module) + 1:] if module else qualname)
            if fn is not None:
                found = replace(fn, qualname=qualname)
                break
        self._functions[qualname] = found
        return found

    def _prefixes(self, qualname: str) -> list[str]:
        parts = qualname.split(".")
        found = [".".join(parts[:end]) for end in range(1, len(parts) + 1) if ".".join(parts[:end]) in self._path_of]
        if "" in self._path_of:
            found.append("")
        return found

    def _calls_to(self, module: str, names: Collection[str]) -> Iterator[tuple[str, str]]:
        """(caller, callee) for each call of the module whose callee text ends in one of `names`
        and names a scanned function. Only those are resolved: a call reaches a function through a
        name it is defined or imported as, and resolving every call of a module that spells a name
        read far more of the package than the calls of that name need."""
        facts = self._module(module)
        if facts is None:
            return
        lasts = self._last_names(module, facts)
        for function, target in self._targets(module, facts, sorted(at for name in names for at in _positions(lasts, name))):
            yield self.qualify(module, function), target

    def _targets(self, module: str, facts: PythonFacts, positions: list[int]) -> Iterator[tuple[str, str]]:
        """(enclosing function, scanned function named) for the module's calls at these positions."""
        calls = facts.calls
        for at in positions:
            function = calls.functions[at]
            target = self.function_of(module, calls.callees[at], function)
            if target is not None:
                yield function, target

    def _last_names(self, module: str, facts: PythonFacts) -> tuple[str, ...]:
        """The last name of each call's callee text (a tuple: a table by name held 30 MB more on
        FlashInfer 0.7.2.post1, and a tuple is searched in C)."""
        found = self._lasts.get(module)
        if found is None:
            found = self._lasts[module] = tuple(intern(callee.rpartition(".")[2]) for callee in facts.calls.callees)
        return found

    def _calls_from(self, module: str, qualname: str) -> Iterator[str]:
        """The scanned functions the calls the function `qualname` makes in the module name (its
        module-level code, where the module is `qualname`)."""
        if module == qualname:
            function = ""
        elif qualname.startswith(module + "."):
            function = qualname[len(module) + 1:]
        else:
            return
        facts = self._module(module)
        if facts is None:
            return
        for _, target in self._targets(module, facts, list(_positions(facts.calls.functions, function))):
            yield target

    def callees(self, qualname: str) -> tuple[str, ...]:
        found = self._callees.get(qualname)
        if found is None:
            last = qualname.rpartition(".")[2]
            owners = [m for m in self._prefixes(qualname) if m == qualname or self._spells(m, last)]
            found = self._callees[qualname] = tuple(sorted({target for module in owners
                                                            for target in self._calls_from(module, qualname)}))
        return found

    def callers(self, qualname: str) -> tuple[str, ...]:
        """Every scanned function with a call that names this one: found among the modules that
        spell its name or a name it is imported as (a call can name it in no other way), in the
        calls spelling one of those names."""
        found = self._callers.get(qualname)
        if found is None:
            with self.reads.answer() as reads:
                modules, names = self._modules_naming(qualname)
                found = self._callers[qualname] = tuple(sorted({caller for module in modules
                                                                for caller, target in self._calls_to(module, names)
                                                                if target == qualname}))
            if reads:
                self._callers_reading[qualname] = reads
        elif qualname in self._callers_reading:
            self.reads.again(self._callers_reading[qualname])
        return found

    def plain_callers(self) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """The callers found so far by reading the modules' plain facts alone (names, imports,
        callees), never a packed record: what an index of modules with the same plain facts and
        names finds too (engine.relink gives them to it: `know_callers`)."""
        return tuple((name, found) for name, found in self._callers.items() if name not in self._callers_reading)

    def know_callers(self, known: Iterable[tuple[str, tuple[str, ...]]]) -> None:
        self._callers.update(known)

    def _modules_naming(self, qualname: str) -> tuple[list[str], frozenset[str]]:
        """The modules whose calls can name the function, and the names a call can end in to name
        it: its own module, and those spelling its name where it can reach them
        (`spelling_beside`): a method as a member, a module-level function (or the class whose
        `__init__` it is) beside the name of its module or of a module that imports it, and so on
        through each import of it."""
        last = qualname.rpartition(".")[2]
        fn = self.function(qualname)
        home = self.module_of_path.get(fn.path, "") if fn is not None else ""
        local = qualname[len(home) + 1:] if home else ""
        if fn is None:  # no call names a module; a function not found is looked for everywhere
            return ([], frozenset()) if qualname in self._path_of else self._modules_spelling(qualname)
        if home and not fn.cls and "." in local:
            return [home], frozenset([last])  # a nested function: only its enclosing function can name it
        if not home or local.count(".") != (1 if fn.cls else 0):
            return self._modules_spelling(qualname)  # a method of a nested class
        if last == "__init__":  # `C(...)`, `super().__init__(...)`
            words = {(fn.cls, home.rpartition(".")[2]), (last, ".")}
        else:
            words = {(last, "." if fn.cls else home.rpartition(".")[2])}
        asked: set[tuple[str, str]] = set()
        modules = {home}
        while new := words - asked:
            asked |= new
            found = sorted({module for name, owner in new for module in self.spelling_beside(name, owner)} - modules)
            self.load(found)
            modules.update(found)
            names = {name for name, owner in asked if owner != "."}
            for module in found:
                owner = module.rpartition(".")[2]
                for imp in self._facts[module].imports:
                    words.update((alias, owner) for name, alias in zip(imp.names, imp.aliases) if name in names)
        self.load([home])
        return sorted(modules), frozenset(name for name, _ in asked)

    def _modules_spelling(self, qualname: str) -> tuple[list[str], frozenset[str]]:
        """The modules spelling the function's name, or a name some module imports it as."""
        head, _, last = qualname.rpartition(".")
        words = {last, head.rpartition(".")[2]} if last == "__init__" else {last}
        asked: set[str] = set()
        modules: list[str] = []
        while words - asked:
            new = words - asked
            asked |= new
            modules = self.spelling(asked)
            self.load(modules)
            for module in modules:
                for imp in self._facts[module].imports:
                    words.update(alias for name, alias in zip(imp.names, imp.aliases) if name in asked)
        return modules, frozenset(asked)

    def spelling_beside(self, name: str, owner: str) -> list[str]:
        """Modules that may name a definition `name` of a module whose last name is `owner`: they
        spell the name beside that module's name (which importing it spells), an import from a
        package or a star import. Owner "": wherever the name is spelled; ".": as a member."""
        if owner == ".":
            return self.spelling({"." + name})
        spelling = self.spelling({name})
        if not owner or not spelling:
            return spelling
        beside = set(self.spelling({owner})) | self._package_importers()
        return [module for module in spelling if module in beside]

    def _package_importers(self) -> frozenset[str]:
        if self._importers is None:
            self._importers = frozenset(self.spelling(PACKAGE_IMPORTS))
        return self._importers

    def set_sources(self, sources: Mapping[str, tuple[ResolvedSource, ...]], generated: Mapping[str, str],
                    renders: tuple[TemplateRender, ...]) -> None:
        """What resolving every module's source names gave (link.paths.resolve_sources)."""
        self._sources, self.generated, self.renders = sources, generated, renders

    def sources(self, qualname: str) -> tuple[ResolvedSource, ...]:
        return self._sources.get(qualname, ())

    def all_sources(self) -> tuple[ResolvedSource, ...]:
        return tuple(source for key in sorted(self._sources) for source in self._sources[key])

    # ---------------------------------------------------------------- name resolution

    def qualify(self, module: str, local: str) -> str:
        return f"{module}.{local}" if local else module

    def resolve(self, module: str, dotted: str, function: str = "") -> Binding | None:
        """What a dotted name written in `module` (inside local function `function`) refers to
        (each answer made once: the gates' conditions and the links ask the same names often)."""
        key = (module, dotted, function)
        if key not in self._resolved:
            self._resolved[key] = self._resolve(module, dotted, function)
        return self._resolved[key]

    def _resolve(self, module: str, dotted: str, function: str) -> Binding | None:
        if not dotted:
            return None
        head, *rest = dotted.split(".")
        binding = None
        if head in ("self", "cls") and function and rest:
            fn = self.function(self.qualify(module, function))
            if fn is not None and fn.cls:
                binding, rest = Binding("class", module, fn.cls), rest
        if binding is None:
            binding = self._local(module, function, head)
        for hop in range(_MAX_HOPS):
            binding = self._settle(binding)
            if binding is None or not rest:
                return binding
            binding, rest = self._member(binding, rest[0]), rest[1:]
        return None

    def _local(self, module: str, function: str, name: str) -> Binding | None:
        if function:
            nested = self.qualify(module, f"{function}.{name}")
            if self.function(nested) is not None:
                return Binding("function", module, f"{function}.{name}")
        return self.scope(module).get(name) or self._starred(module, name)

    def _settle(self, binding: Binding | None) -> Binding | None:
        """Follow re-exports: a 'symbol' becomes what the target module binds to that name."""
        for _ in range(_MAX_HOPS):
            if binding is None or binding.kind != "symbol":
                return binding
            submodule = f"{binding.module}.{binding.name}" if binding.module else binding.name
            if submodule in self._path_of:
                return Binding("module", submodule)
            target = self.scope(binding.module).get(binding.name) or self._starred(binding.module, binding.name)
            if target is None or target == binding:
                return None
            binding = target
        return None

    def _starred(self, module: str, name: str) -> Binding | None:
        """What a module's `from x import *` binds to `name` (`sglang/srt/utils/__init__.py`:
        `from sglang.srt.utils.common import *`): x's own binding of it, one level deep."""
        facts = self._module(module)
        if facts is None:
            return None
        package = module if facts.path.endswith("__init__.py") else module.rpartition(".")[0]
        for imp in facts.imports:
            if imp.function or "*" not in imp.names:
                continue
            base = import_base(package, imp.module, imp.level)
            target = self.scope(base).get(name) if base and base != module else None
            if target is not None and not name.startswith("_"):
                return target
        return None

    def _member(self, binding: Binding, name: str) -> Binding | None:
        if binding.kind == "module":
            submodule = f"{binding.module}.{name}" if binding.module else name
            if submodule in self._path_of:
                return Binding("module", submodule)
            return self.scope(binding.module).get(name) or self._starred(binding.module, name)
        if binding.kind == "class":
            seen: set[Binding] = set()
            queue = [binding]
            while queue and len(seen) < 16:
                cls = queue.pop(0)
                if cls in seen:
                    continue
                seen.add(cls)
                method = f"{cls.name}.{name}"
                if self.function(self.qualify(cls.module, method)) is not None:
                    return Binding("function", cls.module, method)
                queue.extend(self._bases(cls))
        return None

    def _bases(self, binding: Binding) -> list[Binding]:
        facts = self._module(binding.module)
        if facts is None:
            return []
        found = []
        for cls in facts.classes:
            if cls.qualname == binding.name:
                for base in cls.bases:
                    target = self.resolve(binding.module, base)
                    if target is not None and target.kind == "class" and target != binding:
                        found.append(target)
        return found[:4]

    def function_of(self, module: str, dotted: str, function: str = "") -> str | None:
        """Full qualname of the scanned function a call's callee text names, if any."""
        binding = self.resolve(module, dotted, function)
        if binding is None:
            return None
        if binding.kind == "function":
            return self.qualify(binding.module, binding.name)
        if binding.kind == "class":
            init = self.qualify(binding.module, f"{binding.name}.__init__")
            return init if self.function(init) is not None else None
        return None

    def assign_of(self, module: str, name: str, function: str = "", before: int | None = None) -> tuple[str, PyAssign] | None:
        """The assignment a name refers to: the function's own (latest before `before`), else the module's."""
        if self._module(module) is None:
            return None
        if function:
            local = _latest(self._assign_table(module).get((function, name), ()), before)
            if local is not None:
                return module, local
        binding = self.resolve(module, name, function) if "." in name or not function else self._local(module, "", name)
        binding = self._settle(binding)
        if binding is not None and binding.kind == "assign":
            found = _latest(self._assign_table(binding.module).get(("", binding.name), ()), None)
            if found is not None:
                return binding.module, found
        return None


class _Functions(Mapping[str, PyFunction]):
    """Full qualname -> function, found in the modules its name can come from."""

    def __init__(self, index: PyIndex) -> None:
        self._index = index

    def __getitem__(self, qualname: str) -> PyFunction:
        fn = self._index.function(qualname)
        if fn is None:
            raise KeyError(qualname)
        return fn

    def __contains__(self, qualname: object) -> bool:
        return isinstance(qualname, str) and self._index.function(qualname) is not None

    def __iter__(self) -> Iterator[str]:
        self._index.load_all()
        return iter(self._index.loaded_functions())

    def __len__(self) -> int:
        return sum(1 for _ in self)


def _positions(items: tuple[str, ...], item: str) -> Iterator[int]:
    """Where the item occurs in the tuple."""
    at = -1
    while True:
        try:
            at = items.index(item, at + 1)
        except ValueError:
            return
        yield at


def _latest(assigns: Sequence[PyAssign], before: int | None) -> PyAssign | None:
    found = None
    for assign in assigns:
        if before is None or assign.line < before:
            found = assign
    return found


def link_python(facts: Sequence[PythonFacts], roots: Sequence[str], files: Collection[str],
                idioms: Idioms | None = None) -> PyIndex:
    """The linked index of `facts`, every module read; `idioms` is the gate vocabulary (the shipped
    one by default)."""
    index = PyIndex([item.path for item in facts], roots, files, _Given(facts), idioms)
    index.load_all()
    return link(index)


def link(index: PyIndex) -> PyIndex:
    """The index with the sources each function names resolved; the modules that name sources or
    render templates must be loaded."""
    index.set_sources(*resolve_sources(index))
    return index
