"""Which Python modules a scan must read before its gates are found, beyond those the byte prefilter
picks: the modules that can hold a condition on the compute capability.

A condition reads the capability through a capability call (`torch.cuda.get_device_capability()`),
or through a scanned function or module constant whose evaluation does. To reach one in another
module, a condition's module spells its name, or a name it is imported as. So the modules that can
hold a capability test are found from the words: start from the capability calls, read the files
that spell one, and take the names of their definitions whose evaluation reads the capability
(the gate evaluator's own answer, with every parameter unknown); repeat until no new name appears.
A definition is evaluated only when its text reads one of the newest names, so a file never found
spells none of the names its conditions would need, and holds no capability test.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from archlint.gates.arch_names import is_dunder
from archlint.gates.capability import Evaluator
from archlint.gates.capability_values import FuncRef, Scope, Trace
from archlint.knowledge.arch import known_ccs
from archlint.lang.python.expr import read_names
from archlint.link.python import PyIndex
from archlint.model.python import PythonFacts


def load_condition_modules(index: PyIndex) -> None:
    """Read every module that can hold a condition on the compute capability."""
    idioms = index.idioms
    words = {_Word(name) for name in (*idioms.capability_calls, *idioms.properties_calls,
                                      *idioms.predicate_relation, *idioms.table_names, *idioms.method_form)}
    asked: set[_Word] = set()
    definitions: dict[str, list[_Definition]] = {}
    reading: set[tuple[str, str, str]] = set()  # the definitions found to read the capability
    while new := words - asked:
        asked |= new
        names = {word.name for word in new}
        modules = sorted({module for word in new for module in index.spelling_beside(word.name, word.owner)})
        index.load(modules)
        # A fresh evaluator each round: a definition judged before the modules it calls were read
        # is judged again once one of them gives it a new name to read.
        evaluator = Evaluator(index, known_ccs())
        for module in modules:
            if module not in definitions:
                definitions[module] = _definitions(index.modules[module])
            for definition in definitions[module]:
                key = (module, definition.kind, definition.ref)
                if key in reading or definition.reads.isdisjoint(names):
                    continue
                if _reads_capability(evaluator, index, module, definition):
                    reading.add(key)
                    words.add(_Word(definition.name, "." if definition.method else module.rpartition(".")[2]))
                    if not definition.method and _star_exported(index, module):
                        words.add(_Word(definition.name, module.rpartition(".")[0].rpartition(".")[2]))


def _star_exported(index: PyIndex, module: str) -> bool:
    """The module's package re-exports it (`sglang/srt/utils/__init__.py`: `from
    sglang.srt.utils.common import *`): a file importing the name from the package spells the
    package's name, not the module's."""
    package, _, last = module.rpartition(".")
    if not package or package not in index.modules:
        return False
    return any("*" in imp.names and (imp.module == module or (imp.level == 1 and imp.module == last))
               for imp in index.modules[package].imports)


@dataclass(frozen=True)
class _Word:
    """A name a condition can reach the capability through, and how a file reaching it spells it."""

    name: str
    # "": anywhere (a capability call); ".": as a member (`self.m`, `C.m`); else the last part of
    # the defining module's name, which a file reaching the definition spells to import it (or
    # that module's own package's, through an import from `.`, or a star import)
    owner: str = ""


@dataclass(frozen=True)
class _Definition:
    name: str  # what a condition elsewhere spells to reach it
    reads: frozenset[str]  # the names its value can reach a definition through
    kind: str  # "function", "constant" or "import"
    ref: str  # the function's local qualname; the constant's target; the imported name
    method: bool = False  # reached only as a member: `self.m`, `cls.m`, `C.m`
    assigns: tuple[int, ...] = ()  # a constant's module-level assignments, by position (PyAssigns.at)


def _reads_capability(evaluator: Evaluator, index: PyIndex, module: str, definition: _Definition) -> bool:
    """The definition's evaluation reads the compute capability for some known one. An imported
    name does what it imports (its reads are that one name, already found to)."""
    if definition.kind == "import":
        return True
    # One compute capability tells: until the evaluation reads it, none can change its course.
    cc, trace = evaluator.ccs[0], Trace()
    if definition.kind == "function":
        evaluator.call_value(index.qualify(module, definition.ref), (), cc, trace)
    for assign in index.modules[module].assigns.at(definition.assigns):
        value = evaluator.value(assign.value, Scope(module, "", assign.line), cc, trace, 0)
        if isinstance(value, FuncRef):  # `is_sm100_supported = lru_cache(maxsize=1)(partial(_check, ...))`
            evaluator.call_ref(value, cc, trace)
    return trace.arch


def _definitions(facts: PythonFacts) -> list[_Definition]:
    """Each name the module defines, with the names its value reads as a condition's evaluation
    reads it: a function's returns (values and the conditions they sit under, through the function's
    own assignments; a method by its own name, as `self.m`, `C.m` and `obj.m` all spell it), a module
    constant by its value, an imported name by what it imports."""
    assigns = facts.assigns  # what each value reads, without unpickling it (model.python.PyAssigns)
    local: dict[tuple[str, str], list[tuple[str, ...]]] = defaultdict(list)
    for targets, function, names in zip(assigns.targets, assigns.functions, assigns.reads):
        for target in targets:
            local[(function, target)].append(names)
    params = {fn.qualname: set(fn.params) for fn in facts.functions}
    returned: dict[str, list[tuple[str, ...]]] = defaultdict(list)
    for ret in facts.returns:
        returned[ret.function].extend([read_names(cond) for cond, _ in ret.path]
                                      + ([read_names(ret.value)] if ret.value is not None else []))
    found = []
    methods = {fn.qualname for fn in facts.functions if fn.cls}
    for function, read in returned.items():
        if function and not is_dunder(function):
            reads = _read(read, function, local, params.get(function, set()))
            found.append(_Definition(function.rpartition(".")[2], reads, "function", function, function in methods))
    constants: dict[str, list[int]] = defaultdict(list)
    for at, (targets, function) in enumerate(zip(assigns.targets, assigns.functions)):
        if not function:
            for target in targets:
                if target:
                    constants[target].append(at)
    for target, positions in constants.items():
        reads = _read([assigns.reads[at] for at in positions], "", local, set())
        found.append(_Definition(target.rpartition(".")[2], reads, "constant", target, assigns=tuple(positions)))
    for imp in facts.imports:
        found.extend(_Definition(alias, frozenset((name,)), "import", name) for name, alias in zip(imp.names, imp.aliases))
    return found


def _read(reads: list[tuple[str, ...]], function: str, local: dict[tuple[str, str], list[tuple[str, ...]]],
          params: set[str]) -> frozenset[str]:
    """The names the expressions (each given by the names it reads: lang.python.expr.read_names) can
    reach a definition through, with the function's own assignments of them. A member of a
    parameter (`runner.plan`, `props.sm_count`) reaches no definition by name: the evaluation reads
    the parameter's bound value only."""
    seen: set[str] = set()
    todo = list(reads)
    while todo:
        for name in todo.pop():
            if name in seen:
                continue
            seen.add(name)
            if function:
                todo.extend(local.get((function, name), ()))
                todo.extend(local.get((function, name.partition(".")[0]), ()) if "." in name else ())
    return frozenset(part for name in seen for part in _parts(name, params))


def _parts(name: str, params: set[str]) -> list[str]:
    head, _, rest = name.partition(".")
    if rest and head in params and head not in ("self", "cls"):
        return [head]
    return name.split(".")

