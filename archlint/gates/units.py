"""Which CUDA units a Python gate guards: the gate's own JIT spec, and the sources, flags and CuTe
DSL kernels of the functions it guards and what they call."""

from __future__ import annotations

from collections import deque

from archlint.gates.detect import flag_lists_of
from archlint.gates.pins import spec_pins
from archlint.knowledge.languages import HEADER_SUFFIXES
from archlint.link.binary import ExtensionIndex
from archlint.link.paths import written_name
from archlint.link.python import PyIndex
from archlint.model.binary import BinaryFacts, ExtensionCall
from archlint.model.findings import Evidence, EvidenceKind, Location
from archlint.model.gates import Gate, GuardedUnits, PinnedUnit, gate_location
from archlint.model.python import FlagList, ResolvedSource

_MAX_CALL_DEPTH = 8
# A function called by this many source-naming functions is build machinery shared by all of them.
_MACHINERY_CALLERS = 5


def guarded_units(pyindex: PyIndex, gate: Gate, extensions: ExtensionIndex | None = None) -> GuardedUnits:
    """The CUDA sources a gate guards: the gate's own JIT spec, or what its guarded functions build;
    with `extensions`, also the calls its code makes into prebuilt extension modules."""
    sources: dict[str, tuple[Evidence, ...]] = {}
    unresolved: list[str] = []
    head: tuple[Evidence, ...] = (Evidence(gate_location(gate), f"gate `{gate.text}`", EvidenceKind.GATE),)
    for ref in gate.resolved_sources:
        _add_source(ref, head, gate.path, sources, unresolved)
    functions = list(gate.guards)
    seen = set(functions)
    queue = deque((name, head, 0, _is_machinery(pyindex, name)) for name in functions)
    module_paths = {module: path for path, module in pyindex.module_of_path.items()}
    specs: list[list[FlagList]] = []
    pinned: list[PinnedUnit] = []
    python_kernels: tuple[Evidence, ...] = ()
    calls: dict[str, ExtensionCall] = {}
    if extensions:
        module = pyindex.module_of_path.get(gate.path, "")
        _extension_calls(pyindex, extensions, module, gate.guarded_calls, head, gate.path, calls,
                         _call_lines(pyindex, module, gate))
    while queue:
        name, chain, depth, machinery = queue.popleft()
        function = pyindex.functions.get(name)
        if function is not None and depth <= 1 and not python_kernels:
            python_kernels = _python_kernels(pyindex, name, function, chain, module_path(module_paths, name))
        lists = flag_lists_of(pyindex, "", name) if function is not None and not machinery else []
        if lists:
            specs.append(lists)
        hop, path = chain, module_path(module_paths, name)
        if function is not None and name != gate.function:
            hop = chain + (Evidence(Location(path, function.span.line), f"calls `{name}`", EvidenceKind.CALL, name=name),)
        if extensions and function is not None:
            _function_extension_calls(pyindex, extensions, name, path, hop, calls)
        before = len(unresolved)
        refs = [ref for ref in pyindex.sources(name) if ref.path or not machinery]
        for ref in refs:  # (a file the shared build code names for every spec is not one this gate builds)
            _add_source(ref, hop, path, sources, unresolved)
        if refs and not machinery:
            pinned += _pinned(pyindex, gate, name, [ref.path for ref in refs if ref.path], unresolved[before:], hop)
        if depth >= _MAX_CALL_DEPTH:
            continue
        for callee in pyindex.callees(name):
            if callee not in seen:
                seen.add(callee)
                queue.append((callee, hop, depth + 1, machinery or _is_machinery(pyindex, callee)))
    # Flags of one spec describe its units; of several, none of them alone describes all the units.
    spec = specs[0] if len(specs) == 1 else []
    return GuardedUnits(tuple(sorted(sources)), tuple(sorted(set(unresolved))), sources,
                        tuple(define for flags in spec for define in flags.defines),
                        tuple(flag for flags in spec for flag in flags.versioned_defines), python_kernels,
                        tuple(calls.values()), pinned=tuple(pinned))


def _pinned(pyindex: PyIndex, gate: Gate, name: str, read: list[str], unread: list[str],
            chain: tuple[Evidence, ...]) -> list[PinnedUnit]:
    """The sources function `name` names (`read`: found; `unread`: as written), where the JIT spec
    it makes pins the targets every build of them compiles for (not where that spec is the gate)."""
    pins = spec_pins(pyindex, name)
    if pins is None or (pins.path, pins.line) == (gate.path, gate.line):
        return []
    short = name.rpartition(".")[2]
    hop = Evidence(Location(pins.path, pins.line), f"`{short}` builds for {', '.join(pins.codes)} only (its `{pins.keyword}`)",
                   EvidenceKind.BUILDS, name=short)
    return ([PinnedUnit(path, pins.codes, chain + (hop,), True, pins.flag_gate) for path in read]
            + [PinnedUnit(ref, pins.codes, chain + (hop,), False, pins.flag_gate) for ref in unread])


def _call_lines(pyindex: PyIndex, module: str, gate: Gate) -> dict[str, int]:
    """Where the gate's function first makes each of its guarded calls, from the gate on."""
    facts = pyindex.modules.get(module) if module and gate.guarded_calls else None
    if facts is None:
        return {}
    wanted = set(gate.guarded_calls)
    written = facts.calls.having(lambda callee, function: function == gate.local_function and callee in wanted)
    lines: dict[str, int] = {}
    for call in sorted(written, key=lambda call: call.span.line):
        if call.span.line >= gate.line:
            lines.setdefault(call.callee, call.span.line)
    return lines


def _function_extension_calls(pyindex: PyIndex, extensions: ExtensionIndex, qualname: str, path: str,
                              chain: tuple[Evidence, ...], calls: dict[str, ExtensionCall]) -> None:
    """The calls into extension modules a scanned function makes in its own body."""
    module = pyindex.module_of_path.get(path, "")
    facts = pyindex.modules.get(module) if module else None
    if facts is None:
        return
    local = qualname[len(module) + 1:] if module else qualname
    written = facts.calls.having(lambda callee, function: function == local and "." in callee)
    _extension_calls(pyindex, extensions, module, tuple(call.callee for call in written), chain, path, calls,
                     {call.callee: call.span.line for call in written})


def _extension_calls(pyindex: PyIndex, extensions: ExtensionIndex, module: str, callees: tuple[str, ...],
                     chain: tuple[Evidence, ...], path: str, calls: dict[str, ExtensionCall],
                     lines: dict[str, int] | None = None) -> None:
    for callee in callees:
        if callee in calls:
            continue
        modules = extensions.operator(callee) or _imported_module(pyindex, extensions, module, callee)
        if not modules:
            continue
        names = ", ".join(f"`{facts.path}`" for facts in modules)
        line = (lines or {}).get(callee) or (chain[-1].location.line if chain and chain[-1].location.path == path else 1)
        hop = Evidence(Location(path, line), f"calls `{callee}`, in the prebuilt extension module {names}",
                       EvidenceKind.CALL, name=callee)
        calls[callee] = ExtensionCall(callee, modules, chain + (hop,))


def _imported_module(pyindex: PyIndex, extensions: ExtensionIndex, module: str, callee: str) -> tuple[BinaryFacts, ...]:
    """The extension module a call goes through by its imported name (`_C.op` after `from vllm import
    _C`; `vllm._C.op` after `import vllm._C`)."""
    head, *rest = callee.split(".")
    binding = pyindex.scope(module).get(head)
    if binding is None or binding.kind not in ("module", "symbol"):
        return ()
    dotted = binding.module if binding.kind == "module" else ".".join(p for p in (binding.module, binding.name) if p)
    for part in ["", *rest[:-1]]:
        dotted = f"{dotted}.{part}" if part else dotted
        found = extensions.module(dotted)
        if found:
            return found
    return ()


_DSL_MODULES = ("cutlass.cute",)  # CuTe DSL: kernels written in Python, compiled at run time


def _python_kernels(pyindex: PyIndex, name: str, function, chain: tuple[Evidence, ...], path: str) -> tuple[Evidence, ...]:
    """The hops to a function the gate's code runs (itself, or one it calls) whose module imports
    CuTe DSL: it compiles device code from Python, which archlint does not read."""
    module = pyindex.module_of_path.get(path, "")
    facts = pyindex.modules.get(module) if module else None
    if facts is None:
        return ()
    for imp in facts.imports:
        names = (imp.module, *(f"{imp.module}.{n}" for n in imp.names))
        if imp.level == 0 and any(n == m or n.startswith(m + ".") for n in names for m in _DSL_MODULES):
            message = (f"runs `{name.rsplit('.', 1)[-1]}`, whose module imports `{_DSL_MODULES[0]}` (line {imp.line}): "
                       "CuTe DSL kernels written in Python, which archlint does not read")
            return chain + (Evidence(Location(path, function.span.line), message, EvidenceKind.CALL, name=name),)
    return ()


def _is_machinery(pyindex: PyIndex, qualname: str) -> bool:
    """Shared JIT build code (SGLang's `load_jit`, FlashInfer's `gen_jit_spec`): a function that many
    functions naming their own sources call. What it and its callees name without resolving
    (a generated `compatible_wrapper.h` for another platform's compiler) belongs to no one gate."""
    spec_callers = sum(1 for caller in pyindex.callers(qualname) if pyindex.sources(caller))
    return spec_callers >= _MACHINERY_CALLERS


def module_path(module_paths: dict[str, str], qualname: str) -> str:
    """The file defining a python function, from the longest module prefix of its qualname."""
    parts = qualname.split(".")
    for end in range(len(parts) - 1, 0, -1):
        module = ".".join(parts[:end])
        if module in module_paths:
            return module_paths[module]
    return ""


def _add_source(resolved: ResolvedSource, chain: tuple[Evidence, ...], where: str,
                sources: dict[str, tuple[Evidence, ...]], unresolved: list[str]) -> None:
    if resolved.path:
        what = f"`{resolved.ref.text}`, {resolved.reason}" if resolved.how == "generated" else resolved.path
        location = Location(where, resolved.ref.line, resolved.ref.col)
        hop = Evidence(location, f"builds {what}", EvidenceKind.BUILDS, source=resolved.path)
        sources.setdefault(resolved.path, chain + (hop,))
    elif not written_name(resolved.ref).endswith(HEADER_SUFFIXES):
        # A header a Python build names but the scan cannot find (an artifact it downloads, a marker
        # of an include folder) is no unit the build compiles: what it holds matters only where an
        # `#include` takes it in, and that include is judged on the CUDA side.
        unresolved.append(resolved.ref.text)
