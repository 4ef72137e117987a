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
from collections.abc import Collection

from archlint.lang.python.expr import walk
from archlint.link.python import PyIndex
from archlint.model.python import PyExpr, PythonFacts


def load_condition_modules(index: PyIndex) -> None:
    """Read every module that can hold a condition on the compute capability."""
    words = set(index.idioms.capability_calls) | set(index.idioms.properties_calls)
    asked: set[str] = set()
    while words - asked:
        new = words - asked
        asked |= new
        modules = index.spelling(new)
        index.load(modules)
        for module in modules:
            words |= _defined_reading(index.modules[module], new)


def _defined_reading(facts: PythonFacts, words: Collection[str]) -> set[str]:
    """Names the module defines whose value, as a condition's evaluation reads it, names a word:
    functions whose returns (values and the conditions they sit under, through the function's own
    assignments) do (for a method, its class: a method is reached as `self.m` or `C.m`), classes
    derived from such a class, module constants whose value does, and names imported from a word."""
    local: dict[tuple[str, str], list[PyExpr]] = defaultdict(list)
    for assign in facts.assigns:
        for target in assign.targets:
            local[(assign.function, target)].append(assign.value)
    found = set()
    returned: dict[str, list[PyExpr]] = defaultdict(list)
    for ret in facts.returns:
        returned[ret.function].extend([cond for cond, _ in ret.path] + ([ret.value] if ret.value is not None else []))
    classes = {fn.qualname: fn.cls for fn in facts.functions}
    for function, exprs in returned.items():
        if function and _reads(exprs, function, local, words):
            # a method is reached through its class: `self.m()` in the class or a subclass, `C.m()`
            owner = classes.get(function, "")
            found.add(owner.partition(".")[0] if owner else function.rpartition(".")[2])
    for cls in facts.classes:
        if any(part in words for base in cls.bases for part in base.split(".")):
            found.add(cls.qualname.partition(".")[0])
    for assign in facts.assigns:
        if not assign.function and _reads([assign.value], "", local, words):
            found.update(target.rpartition(".")[2] for target in assign.targets if target)
    for imp in facts.imports:
        found.update(alias for name, alias in zip(imp.names, imp.aliases) if name in words)
    return found


def _reads(exprs: list[PyExpr], function: str, local: dict[tuple[str, str], list[PyExpr]], words: Collection[str]) -> bool:
    """The expressions, with the function's own assignments of the names they use, name a word."""
    seen: set[str] = set()
    todo = list(exprs)
    while todo:
        for name in _names(todo.pop()):
            if name in seen:
                continue
            seen.add(name)
            if any(part in words for part in name.split(".")):
                return True
            if function:
                todo.extend(local.get((function, name), ()))
                todo.extend(local.get((function, name.partition(".")[0]), ()) if "." in name else ())
    return False


def _names(expr: PyExpr) -> list[str]:
    """The names an expression reads: dotted names, callees and attributes, at any depth."""
    return [sub.text for sub in walk(expr) if sub.kind in ("name", "call", "attr") and sub.text]
