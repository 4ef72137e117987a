"""A Python gate judged through the custom ops it guards: the op calls its guarded functions (and
what they call) make, linked (link.ops) to the C++ functions that implement them and the units
that define those; the units join the gate's guarded units."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from archlint.gates.host import Reach
from archlint.gates.units import module_path
from archlint.link.cuda import CudaIndex
from archlint.link.ops import OpTables, link_ops, op_calls, python_libraries
from archlint.link.python import PyIndex
from archlint.model.findings import Evidence, EvidenceKind, Location
from archlint.model.gates import BUILD_LIST_KIND, WHOLE_BUILD_KIND, Gate, GuardedUnits, gate_location
from archlint.model.host import Layers, OpCall, OpLink

_MAX_CALL_DEPTH = 4

Reached = tuple[tuple[OpCall, tuple[Evidence, ...]], ...]  # each op call, with the hops from the gate to it


class OpCallFinder:
    """The custom-op calls gates' guarded functions make, directly or through what they call. Made
    once per index: each module's op calls are read once, whichever gates reach it."""

    def __init__(self, pyindex: PyIndex) -> None:
        self.pyindex = pyindex
        self._module_paths = {module: path for path, module in pyindex.module_of_path.items()}
        # the top-level packages of the scan: a module under one is Python, not a compiled extension
        self._roots = frozenset(module.partition(".")[0] for module in pyindex.module_of_path.values())
        # (module, function) -> its op calls and the records reading them read (counted again for
        # each gate that reaches the function: link.reads)
        self._calls: dict[tuple[str, str], tuple[list[OpCall], set[int]]] = {}

    def reached(self, gate: Gate) -> Reached:
        pyindex = self.pyindex
        head = (Evidence(gate_location(gate), f"gate `{gate.text}`", EvidenceKind.GATE),)
        found: list[tuple[OpCall, tuple[Evidence, ...]]] = []
        seen = set(gate.guards)
        queue: deque[tuple[str, tuple[Evidence, ...], int]] = deque((name, head, 0) for name in gate.guards)
        while queue:
            qualname, chain, depth = queue.popleft()
            function = pyindex.functions.get(qualname)
            path = module_path(self._module_paths, qualname)
            module = pyindex.module_of_path.get(path, "")
            facts = pyindex.modules.get(module) if module else None
            if function is None or facts is None:
                continue
            hop = chain + (Evidence(Location(path, function.span.line), f"calls `{qualname}`", EvidenceKind.CALL, name=qualname),)
            local = qualname[len(module) + 1:]
            found.extend((call, hop) for call in self._function_calls(module, local, facts))
            if depth < _MAX_CALL_DEPTH:
                for callee in pyindex.callees(qualname):
                    if callee not in seen:
                        seen.add(callee)
                        queue.append((callee, hop, depth + 1))
        return tuple(found)

    def _function_calls(self, module: str, local: str, facts) -> list[OpCall]:
        """Asked per function, not per module: every `torch.*` call could be an extension's, so a
        module's whole list holds most of its calls, where the gates reach a few functions."""
        key = (module, local)
        log = self.pyindex.reads
        if key in self._calls:
            calls, reads = self._calls[key]
            log.again(reads)
            return calls
        modules = self.pyindex.modules
        with log.answer() as reads:
            calls = op_calls(facts, lambda name: name not in modules and name.partition(".")[0] not in self._roots, local)
        self._calls[key] = calls, reads
        return calls


def python_op_namespaces(pyindex: PyIndex, reached: Reached) -> frozenset[str]:
    """The op namespaces Python code defines (`Library("vllm_ir", "FRAGMENT")`), read from the
    modules making the op calls and the modules they import."""
    modules: set[str] = set()
    for call, _ in reached:
        module = pyindex.module_of_path.get(call.path, "")
        facts = pyindex.modules.get(module) if module else None
        if facts is None:
            continue
        modules.add(module)
        for imp in facts.imports:
            if imp.level == 0:
                modules.update(name for name in (imp.module, *(f"{imp.module}.{n}" for n in imp.names)) if name in pyindex.modules)
    found: set[str] = set()
    for module in sorted(modules):
        facts = pyindex.modules.get(module)
        if facts is not None:
            found |= python_libraries(facts)
    return frozenset(found)


@dataclass(frozen=True)
class OpLinker:
    """The whole-index tables linking op calls reads, built once per index and shared by every gate
    (each gate building its own walked every file's declarations again)."""

    index: CudaIndex
    reach: Reach
    tables: OpTables

    @classmethod
    def of(cls, index: CudaIndex) -> OpLinker:
        return cls(index, Reach(index), OpTables.of(index))


BlocksByUnit = dict[str, list[Gate]]  # translation unit -> the build lists (as gates) compiling it


def blocks_by_unit(gated: Iterable[tuple[Gate, GuardedUnits]]) -> BlocksByUnit:
    """Which build lists compile each unit, read off the build-list gates among `gated` (and the
    build's own lists, which compile the rest)."""
    found: BlocksByUnit = {}
    for gate, units in gated:
        if gate.kind in (BUILD_LIST_KIND, WHOLE_BUILD_KIND):
            for unit in units.sources:
                found.setdefault(unit, []).append(gate)
    return found


def called_ops(ops: dict) -> frozenset[str]:
    """The ops the gates' op calls name (`ops` as through_ops takes it)."""
    return frozenset(call.op for reached, _ in ops.values() for call, _ in reached)


def op_linked(index: CudaIndex, ops: dict) -> bool:
    """Whether some gate's op calls name an op a file of the scan registers: only then can the CUDA
    side (the registrations, the definitions they lead to) add units to a Python gate."""
    calls = called_ops(ops)
    if not calls:
        return False
    return any(registration.op in calls for facts in index.files.values() if facts.host is not None
               for registration in facts.host.registrations)


def through_ops(gated: list[tuple[Gate, GuardedUnits]], ops: dict, index: CudaIndex,
                host: list[tuple[Gate, GuardedUnits]],
                wholes: tuple[tuple[Gate, GuardedUnits], ...] = (),
                linked: Mapping[str, GuardedUnits | None] | None = None) -> list[tuple[Gate, GuardedUnits]]:
    """Each gate with the units its custom-op calls reach (`ops`: gate id -> the calls and the op
    namespaces Python defines); a gate left with nothing to judge is dropped. `wholes`: the build's
    own lists, which link a unit no arch-specific list compiles. `linked`: gate id -> what linking
    gave it before (None: dropped), for gates whose units and op calls are what they were then (a
    re-scan's: the tables linking reads span every CUDA file)."""
    linked = linked or {}
    linker = (OpLinker.of(index) if any(reached for gate_id, (reached, _) in ops.items() if gate_id not in linked)
              else None)
    blocks = blocks_by_unit([*gated, *wholes])
    out = []
    for gate, units in gated:
        if gate.id in linked:
            before = linked[gate.id]
            if before is not None:
                out.append((gate, before))
            continue
        reached, namespaces = ops.get(gate.id, ((), frozenset()))
        if reached and linker is not None:
            units = with_op_units(units, reached, linker, host, namespaces, blocks)
        if units.sources or units.unresolved or units.extensions:
            out.append((gate, units))
    return out


def with_op_units(units: GuardedUnits, reached: Reached, linker: OpLinker, host: list[tuple[Gate, GuardedUnits]],
                  python_namespaces: frozenset[str] = frozenset(), blocks: BlocksByUnit | None = None) -> GuardedUnits:
    """The gate's units plus those of the C++ functions its op calls are bound to. Through a host
    check the units are the arm a refused GPU would take (the check's own units); which arm an
    admitted GPU takes is the check's to judge, so the gate's admitted builds are not judged
    against them. A unit a build list compiles has that list as the last hop of its chain, and each
    call's layers are kept (`layers`) for the rules that compare them."""
    if not reached:
        return units
    chains = {call: chain for call, chain in reached}
    evidence = dict(units.evidence)
    reach = linker.reach
    through_check = False
    links = []
    for binding in link_ops([call for call, _ in reached], linker.index, python_namespaces, linker.tables):
        call, registration = binding.call, binding.registration
        hops = chains[call] + (
            Evidence(Location(call.path, call.line, call.col), f"calls op `{call.namespace}.{call.op}`", EvidenceKind.CALL,
                     name=call.op),
            Evidence(Location(binding.registration_path, registration.line, registration.col),
                     f"`{registration.op}` is registered to `{registration.function}`", EvidenceKind.CALL,
                     name=registration.function))
        checks = [(gate, guarded) for gate, guarded in host if gate.path in binding.units
                  and gate.function.rpartition("::")[2] == registration.function]
        found: dict[str, tuple[Evidence, ...]] = {}
        if checks:
            through_check = True
            for gate, guarded in checks:
                hop = Evidence(gate_location(gate), f"passes the host check `{gate.text}`", EvidenceKind.CALL,
                               name=registration.function)
                for unit, chain in guarded.evidence.items():
                    found.setdefault(unit, hops + (hop,) + tuple(h for h in chain if h.kind is not EvidenceKind.GATE))
        else:
            found = reach.units(binding.registration_path, (registration.function,), hops, binding.registration_path)
        built = {unit: blocks.get(unit, []) for unit in (*binding.units, *found)} if blocks else {}
        for unit, chain in found.items():
            evidence.setdefault(unit, chain + tuple(_block_hop(block, unit) for block in built.get(unit, ())))
        links.append(OpLink(call, binding.registration_path, registration, binding.units, tuple(sorted(found)),
                            tuple(gate.id for gate, _ in checks),
                            tuple(sorted({block.id for listed in built.values() for block in listed}))))
    layers = replace(units.layers or Layers(), ops=tuple(links))
    return replace(units, sources=tuple(sorted(evidence)), evidence=evidence, layers=layers,
                   admitted_ccs=frozenset() if through_check else units.admitted_ccs)


def _block_hop(block: Gate, unit: str) -> Evidence:
    """`unit` is compiled by a build list: where the list is made, what it admits."""
    admits = ", ".join(f"{cc // 10}.{cc % 10}{suffix}" for cc, suffix in block.suffix_by_cc) or "nothing"
    return Evidence(gate_location(block), f"{unit} is compiled by build list `{block.text}`, which builds {admits}",
                    EvidenceKind.BUILDS, source=unit)
