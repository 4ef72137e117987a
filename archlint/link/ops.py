"""Op linking: a Python call of a custom op (`torch.ops._C.cutlass_scaled_mm(...)`) or of a compiled
extension's function (`flash_attn_gpu.fwd(...)`) → the registration that binds it
(`ops.impl("cutlass_scaled_mm", torch::kCUDA, &cutlass_scaled_mm)`, `m.def("fwd", &mha_fwd)`) →
the C++ function → the translation units that define it.

A registration's namespace written as a macro the build defines (`TORCH_EXTENSION_NAME`) matches
any namespace; one written as a name must match the call's. A schema-only `def` takes the
function of an `impl` of the same op, a CUDA one first.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from archlint.knowledge.host import load_host
from archlint.knowledge.languages import SOURCE_SUFFIXES
from archlint.link.cuda import CudaIndex
from archlint.model.host import OpBinding, OpCall, OpRegistration
from archlint.model.python import PythonFacts

_OVERLOADS = ("default",)  # `torch.ops._C.op.default(...)`: the op's default overload


def op_calls(facts: PythonFacts, is_extension: Callable[[str], bool], function: str | None = None) -> list[OpCall]:
    """The custom-op calls of one module, or of one function of it (`function`: its local name, ''
    at module level). `is_extension`: whether an imported module is a compiled extension (no
    scanned Python module has its name)."""
    roots = load_host().op_roots
    modules = {alias: imp.module for imp in facts.imports if imp.level == 0 and not imp.names
               for alias in imp.aliases if is_extension(imp.module)}
    modules.update({alias: f"{imp.module}.{name}" if imp.module else name for imp in facts.imports
                    if imp.level == 0 and imp.names for name, alias in zip(imp.names, imp.aliases)
                    if is_extension(f"{imp.module}.{name}" if imp.module else name)})

    def wanted(callee: str, within: str) -> bool:
        return function in (None, within) and (any(callee.startswith(root + ".") for root in roots)
                                               or callee.partition(".")[0] in modules)

    found = []
    for call in facts.calls.having(wanted):
        parsed = _parse(call.callee, roots, modules)
        if parsed is not None:
            kind, namespace, op = parsed
            found.append(OpCall(kind, namespace, op, facts.path, call.span.line, call.span.col, call.function))
    return found


def _parse(callee: str, roots: tuple[str, ...], modules: dict[str, str]) -> tuple[str, str, str] | None:
    for root in roots:
        if callee.startswith(root + "."):
            parts = callee[len(root) + 1:].split(".")
            if len(parts) == 3 and parts[2] in _OVERLOADS:
                parts = parts[:2]
            return ("torch-op", parts[0], parts[1]) if len(parts) == 2 else None
    head, _, rest = callee.partition(".")
    if head in modules and rest and "." not in rest:
        return "pybind", modules[head].rpartition(".")[2], rest
    return None


def python_libraries(facts: PythonFacts) -> set[str]:
    """The op namespaces a module defines in Python (`Library("vllm_ir", "FRAGMENT")`): no C++
    registration written with the extension-name macro is theirs."""
    makers = load_host().python_libraries
    found = set()
    for call in facts.calls.having(lambda callee, _function: callee.rpartition(".")[2] in makers):
        first = call.expr.args[1] if len(call.expr.args) > 1 else None
        if first is not None and first.kind == "str" and first.text:
            found.add(first.text)
    return found


@dataclass(frozen=True)
class OpTables:
    """What linking op calls reads of the whole index, read once for every gate's calls: the
    registrations by op name and the units defining each function."""

    registrations: dict[str, list[tuple[str, OpRegistration]]]
    definitions: dict[str, set[str]]

    @classmethod
    def of(cls, index: CudaIndex) -> OpTables:
        return cls(_registrations(index), _definitions(index))


def link_ops(calls: Iterable[OpCall], index: CudaIndex, python_namespaces: frozenset[str] = frozenset(),
             tables: OpTables | None = None) -> list[OpBinding]:
    """Each call linked to the registration that binds it and the units defining its function;
    calls no registration of the scan binds are left out. `python_namespaces`: namespaces Python
    code defines, which only a registration naming them literally can serve."""
    tables = tables or OpTables.of(index)
    registrations, definitions = tables.registrations, tables.definitions
    bound = []
    literal = {op: [(p, r) for p, r in found if not r.namespace_macro] for op, found in registrations.items()}
    for call in calls:
        match = _registration(call, literal if call.namespace in python_namespaces else registrations)
        if match is None:
            continue
        path, registration = match
        units = tuple(sorted(definitions.get(registration.function, ())))
        bound.append(OpBinding(call, registration, path, units))
    return bound


def _registrations(index: CudaIndex) -> dict[str, list[tuple[str, OpRegistration]]]:
    found: dict[str, list[tuple[str, OpRegistration]]] = {}
    for path in sorted(index.files):
        host = index.files[path].host
        for registration in host.registrations if host is not None else ():
            found.setdefault(registration.op, []).append((path, registration))
    return found


def _registration(call: OpCall, registrations: dict[str, list[tuple[str, OpRegistration]]]) -> tuple[str, OpRegistration] | None:
    """The registration binding a call to a function: one of the call's kind whose namespace matches,
    with a function (a CUDA impl before others)."""
    kinds = ("pybind",) if call.kind == "pybind" else ("impl", "def")
    candidates = [(path, r) for path, r in registrations.get(call.op, ())
                  if r.kind in kinds and r.function and _same_namespace(r, call.namespace)]
    candidates.sort(key=lambda item: (item[1].kind != "impl", "CUDA" not in item[1].dispatch, item[0], item[1].line))
    return candidates[0] if candidates else None


_JOINED_RE = re.compile(r"\w+\(\s*(\w+)\s*,\s*(\w+)\s*\)")


def _same_namespace(registration: OpRegistration, namespace: str) -> bool:
    """A namespace written as the build's extension-name macro matches any; joined to a suffix by a
    token-pasting macro (`CONCAT(TORCH_EXTENSION_NAME, _cache_ops)`), any that ends with it."""
    if not registration.namespace_macro:
        return registration.namespace == namespace
    joined = _JOINED_RE.fullmatch(registration.namespace)
    return joined is None or namespace.endswith(joined.group(2))


def _definitions(index: CudaIndex) -> dict[str, set[str]]:
    """function name -> the translation units that define it at namespace scope."""
    found: dict[str, set[str]] = {}
    for path in sorted(index.files):
        if not path.endswith(SOURCE_SUFFIXES):
            continue
        for item in index.files[path].declarations.items:
            if item.templated:
                continue
            for name in item.names:
                found.setdefault(name, set()).add(path)
    # the functions the C++ parse found, where the definitions could not be read lexically (a
    # preprocessor branch that opens a brace it does not close)
    for name, functions in index.functions_by_name.items():
        for path, function in functions:
            if path.endswith(SOURCE_SUFFIXES) and function.kind == "host" and not function.template:
                found.setdefault(name, set()).add(path)
    return found
