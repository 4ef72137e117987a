"""Whether a `static_assert` the unit compiles can fail on the target: a possible blocker when the
target gives a constant it tests a value no admitted build has."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import fields
from itertools import product

from archlint.knowledge.arch import ARCH_MACRO_RE
from archlint.lang.cpp.evaluate import NOT_PASSED, TOOLKIT_MACROS, Evaluator
from archlint.lang.cpp.expr import render
from archlint.model.cexpr import Defined, Expr, MacroCall, Name, Opaque
from archlint.model.cuda import ArchConstant, CudaFacts, StaticAssert
from archlint.model.findings import Location

_NAME_RE = re.compile(rb"[A-Za-z_]\w*")
_MAX_FREE = 2  # macros compared under every way of passing them (3 ** 2 evaluations per build)


TestedAsserts = tuple[tuple[StaticAssert, tuple[ArchConstant, ...]], ...]


def tested_asserts(facts: CudaFacts, constants: Mapping[str, ArchConstant]) -> TestedAsserts:
    """The file's assertions that test one of a unit's arch constants (name -> ArchConstant of its
    files), with those constants."""
    tested = ((assertion, tuple(constants[name] for name in assertion.names if name in constants))
              for assertion in facts.static_asserts)
    return tuple((assertion, found) for assertion, found in tested if found)


def assert_hits(view, path: str, asserts: TestedAsserts, references, compiled) -> list[tuple[Location, str]]:
    """(location, message) of each assertion of `asserts` (tested_asserts) compiled for the view's
    target that tests a constant whose value there may be one no admitted build has.
    `compiled(assertion)`: whether the unit compiles its site."""
    hits = []
    for assertion, tested in asserts:
        if view.truth(path, assertion.region) == 0 or not compiled(assertion):
            continue
        for constant in tested:
            here = view.device.value(constant.value)
            admitted = {ref.device.value(constant.value) for ref in references}
            if not admitted or _as_on_an_admitted_build(view, references, constant, here, admitted):
                continue
            shown = "unknown" if here is None else str(here)
            others = ", ".join(sorted("unknown" if v is None else str(v) for v in admitted))
            message = (f"`static_assert` tests `{constant.name}` (= {render(constant.value)}), which is {shown} for "
                       f"{view.target} and {others} on the admitted builds: the assertion may fail here")
            hits.append((Location(path, assertion.line, assertion.col), message))
            break
    return hits


def _as_on_an_admitted_build(view, references, constant: ArchConstant, here, admitted: set) -> bool:
    """Whether the constant has, on the target, the value it has on some admitted build: the
    assertion then holds here as it does there (what else it tests does not change with the target).

    Unknown values are settled where they can be: a value unknown everywhere and not made of arch
    macros says nothing about the target; one made unknown by macros that nothing scanned defines
    and no build sets per target (SGLang's `USE_ROCM`, undecided in every build alike) is compared
    under each way those macros could be passed, the same way on every build."""
    if here is not None:
        return here in admitted
    names, arch = _expansion(view, references, constant)
    if admitted == {None} and not arch:
        return True
    free = sorted(name for name in names if _is_free(view, references, name))
    if not free or len(free) > _MAX_FREE:
        return False
    for assignment in product((NOT_PASSED, 0, 1), repeat=len(free)):
        passed = dict(zip(free, assignment))
        target, *builds = (Evaluator(build.target, build.index.bindings, {**build.defines, **passed}).value(constant.value)
                           for build in (view, *references))
        if target is None or target not in builds:
            return False
    return True


def _is_free(view, references, name: str) -> bool:
    """A macro nothing scanned defines, that no build is given, that nvcc does not own."""
    return not (name in view.index.bindings or ARCH_MACRO_RE.match(name) or name in TOOLKIT_MACROS
                or any(name in build.defines for build in (view, *references)))


def _expansion(view, references, constant: ArchConstant) -> tuple[set[str], bool]:
    """The names the constant's initializer spells with the scanned macro definitions expanded, and
    whether one is `__CUDA_ARCH__` (or kin) or a macro each build sets to its own target."""
    per_target = {name for name, value in view.defines.items()
                  if any(ref.defines.get(name) != value for ref in references)}
    names, arch = view.judging.shared(_spelled, constant.value)
    return set(names), arch or not per_target.isdisjoint(names)


def _spelled(judging, value: Expr) -> tuple[frozenset[str], bool]:
    """The names an initializer spells with the scanned macro definitions expanded, and whether one
    is `__CUDA_ARCH__` or kin: the same for every build, so made once per scan."""
    bindings = judging.index.bindings
    seen: set[str] = set()
    todo = list(_expr_names(value))
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for binding in bindings.get(name, ()):
            todo.extend(n.decode() for n in _NAME_RE.findall(binding.value.encode()))
            for condition in binding.guard:
                todo.extend(_expr_names(condition))
    return frozenset(seen), any(ARCH_MACRO_RE.match(name) for name in seen)


def _expr_names(expr) -> list[str]:
    if isinstance(expr, Opaque):
        return [n.decode() for n in _NAME_RE.findall(expr.text.encode())]
    names = [expr.name] if isinstance(expr, (Name, Defined, MacroCall)) else []
    for child in (getattr(expr, field.name) for field in fields(expr)):
        for item in child if isinstance(child, tuple) else (child,):
            if not isinstance(item, (str, int)) and item is not None:
                names += _expr_names(item)
    return names
