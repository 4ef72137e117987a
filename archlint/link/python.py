"""Linking Python facts across files: module names, imports, calls, path roots, source files.

Everything is resolved from the facts alone: a package's `jit_env.FLASHINFER_CSRC_DIR` is found
by following its definition chain (`Path(__file__).resolve().parents[1] / "data" / "csrc"`),
never by importing it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import PurePosixPath

from archlint.knowledge.idioms import Idioms, load_idioms
from archlint.link.paths import TemplateRender, resolve_sources
from archlint.model.python import PyAssign, PyFunction, PythonFacts, ResolvedSource

_MAX_HOPS = 12


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
    start = len(path.split("/")) - 1
    while start > 0 and "/".join(path.split("/")[:start] + ["__init__.py"]) in files:
        start -= 1
    if start == 0 and "__init__.py" in files and len(roots) == 1:
        top = PurePosixPath(str(roots[0]).replace("\\", "/")).name
        if top and top not in (".", ".."):
            return ".".join([top] + parts) if parts else top
    return ".".join(parts[start:])


@dataclass(frozen=True)
class PyIndex:
    modules: Mapping[str, PythonFacts]  # module name -> facts
    module_of_path: Mapping[str, str]
    functions: Mapping[str, PyFunction]  # full qualname -> function (qualname rewritten to full)
    scopes: Mapping[str, Mapping[str, Binding]]  # module -> local name -> binding
    files: frozenset[str]
    _callees: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    _sources: Mapping[str, tuple[ResolvedSource, ...]] = field(default_factory=dict)
    _assigns: Mapping[str, Mapping[tuple[str, str], tuple[PyAssign, ...]]] = field(default_factory=dict)
    _callers: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    generated: Mapping[str, str] = field(default_factory=dict)  # generated file name -> template path
    renders: tuple[TemplateRender, ...] = ()  # each template rendering with its arguments
    idioms: Idioms = field(default_factory=load_idioms)  # the gate vocabulary paths and gates are read with

    def callees(self, qualname: str) -> tuple[str, ...]:
        return self._callees.get(qualname, ())

    def callers(self, qualname: str) -> tuple[str, ...]:
        return self._callers.get(qualname, ())

    def sources(self, qualname: str) -> tuple[ResolvedSource, ...]:
        return self._sources.get(qualname, ())

    def all_sources(self) -> tuple[ResolvedSource, ...]:
        return tuple(source for key in sorted(self._sources) for source in self._sources[key])

    # ---------------------------------------------------------------- name resolution

    def qualify(self, module: str, local: str) -> str:
        return f"{module}.{local}" if local else module

    def resolve(self, module: str, dotted: str, function: str = "") -> Binding | None:
        """What a dotted name written in `module` (inside local function `function`) refers to."""
        if not dotted:
            return None
        head, *rest = dotted.split(".")
        binding = None
        if head in ("self", "cls") and function and rest:
            fn = self.functions.get(self.qualify(module, function))
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
            if nested in self.functions:
                return Binding("function", module, f"{function}.{name}")
        return self.scopes.get(module, {}).get(name)

    def _settle(self, binding: Binding | None) -> Binding | None:
        """Follow re-exports: a 'symbol' becomes what the target module binds to that name."""
        for _ in range(_MAX_HOPS):
            if binding is None or binding.kind != "symbol":
                return binding
            submodule = f"{binding.module}.{binding.name}" if binding.module else binding.name
            if submodule in self.modules:
                return Binding("module", submodule)
            target = self.scopes.get(binding.module, {}).get(binding.name)
            if target is None or target == binding:
                return None
            binding = target
        return None

    def _member(self, binding: Binding, name: str) -> Binding | None:
        if binding.kind == "module":
            submodule = f"{binding.module}.{name}" if binding.module else name
            if submodule in self.modules:
                return Binding("module", submodule)
            return self.scopes.get(binding.module, {}).get(name)
        if binding.kind == "class":
            seen: set[Binding] = set()
            queue = [binding]
            while queue and len(seen) < 16:
                cls = queue.pop(0)
                if cls in seen:
                    continue
                seen.add(cls)
                method = f"{cls.name}.{name}"
                if self.qualify(cls.module, method) in self.functions:
                    return Binding("function", cls.module, method)
                queue.extend(self._bases(cls))
        return None

    def _bases(self, binding: Binding) -> list[Binding]:
        facts = self.modules.get(binding.module)
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
            return init if init in self.functions else None
        return None

    def assign_of(self, module: str, name: str, function: str = "", before: int | None = None) -> tuple[str, PyAssign] | None:
        """The assignment a name refers to: the function's own (latest before `before`), else the module's."""
        facts = self.modules.get(module)
        if facts is None:
            return None
        if function:
            local = _latest(self._assigns.get(module, {}).get((function, name), ()), before)
            if local is not None:
                return module, local
        binding = self.resolve(module, name, function) if "." in name or not function else self._local(module, "", name)
        binding = self._settle(binding)
        if binding is not None and binding.kind == "assign":
            target = self.modules.get(binding.module)
            found = _latest(self._assigns.get(binding.module, {}).get(("", binding.name), ()), None)
            if found is not None:
                return binding.module, found
        return None


def _latest(assigns: Sequence[PyAssign], before: int | None) -> PyAssign | None:
    found = None
    for assign in assigns:
        if before is None or assign.line < before:
            found = assign
    return found


def _assign_table(facts: PythonFacts) -> dict[tuple[str, str], tuple[PyAssign, ...]]:
    table = defaultdict(list)
    for assign in facts.assigns:
        for target in assign.targets:
            table[(assign.function, target)].append(assign)
    return {key: tuple(value) for key, value in table.items()}


def _scope(module: str, facts: PythonFacts, is_package: bool) -> dict[str, Binding]:
    scope: dict[str, Binding] = {}
    package = module if is_package else module.rpartition(".")[0]
    for assign in facts.assigns:
        if not assign.function:
            for target in assign.targets:
                if target and "." not in target and "[" not in target:
                    scope[target] = Binding("assign", module, target)
    for imp in sorted(facts.imports, key=lambda imp: (imp.function != "", imp.line)):
        base = _import_base(package, imp.module, imp.level)
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


def _import_base(package: str, module: str, level: int) -> str | None:
    if level == 0:
        return module
    parts = package.split(".") if package else []
    if level - 1 > len(parts):
        return None
    base = parts[: len(parts) - (level - 1)]
    return ".".join(base + ([module] if module else []))


def link_python(facts: Sequence[PythonFacts], roots: Sequence[str], files: Collection[str],
                idioms: Idioms | None = None) -> PyIndex:
    """The linked index of `facts`; `idioms` is the gate vocabulary (the shipped one by default)."""
    files = frozenset(files) | {f.path for f in facts}
    modules, module_of_path, functions, scopes = {}, {}, {}, {}
    for item in sorted(facts, key=lambda f: f.path):
        name = module_name(item.path, files, roots)
        if name in modules:
            continue
        modules[name] = item
        module_of_path[item.path] = name
        scopes[name] = _scope(name, item, item.path.endswith("__init__.py"))
        for fn in item.functions:
            full = f"{name}.{fn.qualname}" if name else fn.qualname
            functions[full] = replace(fn, qualname=full)
    assigns = {name: _assign_table(item) for name, item in modules.items()}
    index = PyIndex(modules, module_of_path, functions, scopes, files, _assigns=assigns,
                    idioms=idioms or load_idioms())
    callees: defaultdict[str, set[str]] = defaultdict(set)
    for name, item in modules.items():
        for call in item.calls:
            target = index.function_of(name, call.callee, call.function)
            if target is not None:
                callees[index.qualify(name, call.function)].add(target)
    callers = defaultdict(set)
    for caller, targets in callees.items():
        for target in targets:
            callers[target].add(caller)
    index = replace(
        index,
        _callees={k: tuple(sorted(v)) for k, v in sorted(callees.items())},
        _callers={k: tuple(sorted(v)) for k, v in sorted(callers.items())},
    )
    sources, generated, renders = resolve_sources(index)
    return replace(index, _sources=sources, generated=generated, renders=renders)
