"""Which Python modules a scan must read before its gates are found, beyond those the byte prefilter
picks: the modules whose conditions can read the compute capability.

A condition reads the capability through a capability call (`torch.cuda.get_device_capability()`),
or through a scanned function or module constant whose own text does. To reach one in another
module, a condition's module spells its name, or a name it is imported as. So the modules that can
hold a capability test are found from the words alone: start from the capability calls, take the
files that spell one, add the names of their definitions whose text spells one, and repeat until
no new name appears. Every module found is read; a module never found spells none of the names its
conditions would need, and holds no capability test.
"""

from __future__ import annotations

from collections import defaultdict

from archlint.lang.python.expr import walk
from archlint.link.python import PyIndex
from archlint.model.python import PyExpr, PythonFacts


def load_condition_modules(index: PyIndex) -> None:
    """Read every module that can hold a condition on the compute capability."""
    words = set(index.idioms.capability_calls) | set(index.idioms.properties_calls)
    asked: set[str] = set()
    definitions: dict[str, list[tuple[str, frozenset[str]]]] = {}
    while words - asked:
        new = words - asked
        asked |= new
        modules = index.spelling(new)
        index.load(modules)
        for module in modules:
            if module not in definitions:
                definitions[module] = _definitions(index.modules[module])
            words.update(name for name, read in definitions[module] if not read.isdisjoint(new))


def _definitions(facts: PythonFacts) -> list[tuple[str, frozenset[str]]]:
    """(name, the names its value reads) for each name the module defines, as a condition's
    evaluation reads it: a function's returns (values and the conditions they sit under, through
    the function's own assignments; a method is named by its class, as `self.m` or `C.m` reach it),
    a class by its bases, a module constant by its value, an imported name by what it imports."""
    local: dict[tuple[str, str], list[PyExpr]] = defaultdict(list)
    for assign in facts.assigns:
        for target in assign.targets:
            local[(assign.function, target)].append(assign.value)
    returned: dict[str, list[PyExpr]] = defaultdict(list)
    for ret in facts.returns:
        returned[ret.function].extend([cond for cond, _ in ret.path] + ([ret.value] if ret.value is not None else []))
    classes = {fn.qualname: fn.cls for fn in facts.functions}
    found = []
    for function, exprs in returned.items():
        if function:
            owner = classes.get(function, "")
            found.append((owner.partition(".")[0] if owner else function.rpartition(".")[2], _read(exprs, function, local)))
    for cls in facts.classes:
        found.append((cls.qualname.partition(".")[0], frozenset(part for base in cls.bases for part in base.split("."))))
    for assign in facts.assigns:
        if not assign.function:
            read = _read([assign.value], "", local)
            found.extend((target.rpartition(".")[2], read) for target in assign.targets if target)
    for imp in facts.imports:
        found.extend((alias, frozenset((name,))) for name, alias in zip(imp.names, imp.aliases))
    return found


def _read(exprs: list[PyExpr], function: str, local: dict[tuple[str, str], list[PyExpr]]) -> frozenset[str]:
    """Every part of every name the expressions read, with the function's own assignments of them."""
    seen: set[str] = set()
    todo = list(exprs)
    while todo:
        for name in _names(todo.pop()):
            if name in seen:
                continue
            seen.add(name)
            if function:
                todo.extend(local.get((function, name), ()))
                todo.extend(local.get((function, name.partition(".")[0]), ()) if "." in name else ())
    return frozenset(part for name in seen for part in name.split("."))


def _names(expr: PyExpr) -> list[str]:
    """The names an expression reads: dotted names, callees and attributes, at any depth."""
    return [sub.text for sub in walk(expr) if sub.kind in ("name", "call", "attr") and sub.text]
