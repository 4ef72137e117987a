"""C++ host checks as gates: `TORCH_CHECK(is_sm90 || is_sm8x, ...)` and dispatch ladders over the
compute capability, with the capability helpers they call resolved scan-wide (known by their body,
remapped as rules/kb/host.toml says), and the translation units their arms reach.

A check admits the capabilities its condition holds for. A ladder admits those some arm takes; a
GPU it refuses is judged as taking the arm of the highest capability it admits (widening a ladder
lets a newer GPU into the newest arm). An arm's units are the source files that define what it
calls, followed through the names each definition spells (`run_mha_fwd` in flash_api.cpp names
`run_mha_fwd_`, whose specialisations are the flash_fwd_*.cu units), as declaration reach does.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, replace
from collections.abc import Callable, Mapping

from archlint.knowledge.arch import known_ccs
from archlint.knowledge.host import load_host
from archlint.knowledge.languages import SOURCE_SUFFIXES
from archlint.lang.cpp.capability import Value, evaluate
from archlint.lang.cpp.expr import render
from archlint.link.cuda import CudaIndex
from archlint.model.cexpr import Binary, Expr, Name, Num, Opaque, Ternary, Unary
from archlint.model.cuda import Declaration
from archlint.model.findings import Evidence, EvidenceKind, Location
from archlint.model.gates import HOST_KIND, Gate, GuardedUnits
from archlint.model.host import CALL, MAJOR, MINOR, ArmReach, HostArm, HostCheck, Layers

_MAX_DEPTH = 4  # calls followed from an arm to the units that define what it reaches
_HELPER_DEPTH = 4  # helpers calling helpers

Helpers = Mapping[str, tuple[Expr, ...]]
Definitions = dict[str, list[tuple[str, Declaration]]]  # name -> (translation unit, its definition of it)


def capability_helpers(index: CudaIndex) -> dict[str, tuple[Expr, ...]]:
    """Every helper of the scan whose values are the capability (a helper may call another):
    name -> its values. A name two files define differently is no helper."""
    found: dict[str, tuple[Expr, ...] | None] = {}
    for path in sorted(index.files):
        host = index.files[path].host
        for helper in host.helpers if host is not None else ():
            known = found.get(helper.name, helper.values)
            found[helper.name] = helper.values if known == helper.values else None
    candidates = {name: values for name, values in found.items() if values is not None}
    return {name: values for name, values in candidates.items()
            if all(evaluate(v, leaf_values(90, candidates)) is not None for v in values)}


def leaf_values(cc: int, helpers: Helpers, depth: int = 0) -> Callable[[str], Value]:
    """What a capability name is worth on a GPU of capability `cc`."""
    remaps = load_host()

    def leaf(name: str) -> Value:
        if name == MAJOR:
            return cc // 10
        if name == MINOR:
            return cc % 10
        if not name.startswith(CALL) or depth >= _HELPER_DEPTH:
            return None
        helper, _, element = name[len(CALL):].partition("#")
        values = helpers.get(helper)
        if values is None or (not element and len(values) != 1) or (element and int(element) >= len(values)):
            return None
        reported = remaps.remap(helper).get(cc, cc)  # getSMVersion() reports 12.1 as 120
        return evaluate(values[int(element or 0)], leaf_values(reported, helpers, depth + 1))

    return leaf


def admitted(arms: tuple[HostArm, ...], cc: int, helpers: Helpers) -> tuple[int | None, bool]:
    """(the index of the arm a GPU of capability `cc` takes, None if refused; whether that is certain)."""
    leaf = leaf_values(cc, helpers)
    certain = True
    for number, arm in enumerate(arms):
        value = evaluate(arm.cond, leaf)
        if value is None:
            certain = False
        elif value:
            return number, certain
    return None, certain


@dataclass(frozen=True)
class HostGates:
    # each host check as a gate, with the units of its widened arm; their `admitted_ccs` are the
    # capabilities that take that arm (one taking another arm runs other units)
    pairs: list[tuple[Gate, GuardedUnits]]
    # every name the arms' reach looked up the definitions of: a file whose definitions of other
    # names change cannot change these gates' units (engine.rescan)
    asked: frozenset[str] = frozenset()


def host_gates(index: CudaIndex) -> HostGates:
    """Every host check of the scan that reads the capability, as a gate with its arm's units."""
    helpers = capability_helpers(index)
    reach = Reach(index)
    ccs = known_ccs()
    found = []
    for path in sorted(index.files):
        host = index.files[path].host
        for check in host.checks if host is not None else ():
            taken = {cc: admitted(check.arms, cc, helpers) for cc in ccs}
            if len({arm for arm, _ in taken.values()}) < 2 and all(sure for _, sure in taken.values()):
                continue  # the same for every GPU: no capability in it after all
            if all(arm is None and not sure for arm, sure in taken.values()):
                continue  # no helper behind its calls: nothing read of the capability
            gate = _gate(path, check, taken, helpers)
            arm = _widened_arm(check, taken)
            served = frozenset(cc for cc, (number, _) in taken.items() if number is not None and check.arms[number] is arm)
            units = _units(reach, gate, path, arm)
            found.append((gate, replace(units, admitted_ccs=served, layers=_layers(reach, gate, path, check, taken, units))))
    return HostGates(found, frozenset(reach.asked))


def _layers(reach: Reach, gate: Gate, path: str, check: HostCheck, taken: dict[int, tuple[int | None, bool]],
            widened: GuardedUnits) -> Layers:
    """Each arm with the capabilities that certainly take it and the units it reaches (the widened
    arm's are already read), and the capabilities the check certainly refuses: what the layer rules
    compare with the build lists and the Python gates."""
    arms = []
    for number, arm in enumerate(check.arms):
        ccs = tuple(cc for cc, (taking, sure) in taken.items() if taking == number and sure)
        if not ccs:
            continue
        units = widened.sources if arm is _widened_arm(check, taken) else tuple(sorted(_units(reach, gate, path, arm).sources))
        arms.append(ArmReach(arm.line, arm.text, ccs, units))
    refused = tuple(cc for cc, (taking, sure) in taken.items() if taking is None and sure)
    return Layers(arms=tuple(arms), refused=refused)


def _gate(path: str, check: HostCheck, taken: dict[int, tuple[int | None, bool]], helpers: Helpers) -> Gate:
    admits = tuple(cc for cc, (arm, _) in taken.items() if arm is not None)
    exact = all(sure for _, sure in taken.values())
    text = check.text if check.kind == "check" else (
        "; ".join(f"if ({arm.text}) ..." for arm in check.arms) + f"; {check.macro}(false, ...)")
    readable = "; ".join(_capability_text(arm.cond, helpers) for arm in check.arms)
    listed = ", ".join(f"{cc // 10}.{cc % 10}" for cc in admits) or "none"
    test = Evidence(Location(path, check.arms[0].line), f"reads the compute capability: {readable}; admits {listed}",
                    EvidenceKind.CONDITION, name=check.arms[0].text)
    return Gate(f"{path}:{check.line}:{check.col}", HOST_KIND, text, path, check.line, check.col, check.end_line,
                check.end_col, check.function, admits, exact, suffix="?", guards=(), sources=(), defines=(),
                list_span=None, majors_literal=None, unit="cc", local_function=check.function, arch_test=test)


def _widened_arm(check: HostCheck, taken: dict[int, tuple[int | None, bool]]) -> HostArm:
    """The arm a refused GPU would take if the gate let it through: a check's only arm; for a
    ladder, the arm of the highest capability it admits."""
    chosen = [arm for _, (arm, _) in sorted(taken.items()) if arm is not None]
    return check.arms[chosen[-1] if chosen else 0]


def _capability_text(expr: Expr, helpers: Helpers, depth: int = 0) -> str:
    """A condition with its capability reads spelled out: `major == 9 && minor == 0`."""
    return render(_spelled(expr, helpers, depth))


def _spelled(expr: Expr, helpers: Helpers, depth: int) -> Expr:
    if isinstance(expr, Name):
        if expr.name in (MAJOR, MINOR):
            return Name(expr.name[1:])
        if expr.name.startswith(CALL) and depth < _HELPER_DEPTH:
            helper, _, element = expr.name[len(CALL):].partition("#")
            values = helpers.get(helper)
            if values is not None and (element or len(values) == 1) and int(element or 0) < len(values):
                return _spelled(values[int(element or 0)], helpers, depth + 1)
            return Name(f"{helper}()" + (f"[{element}]" if element else ""))
        return expr
    if isinstance(expr, Unary):
        return Unary(expr.op, _spelled(expr.operand, helpers, depth))
    if isinstance(expr, Binary):
        return Binary(expr.op, _spelled(expr.left, helpers, depth), _spelled(expr.right, helpers, depth))
    if isinstance(expr, Ternary):
        return Ternary(*(_spelled(part, helpers, depth) for part in (expr.cond, expr.then, expr.other)))
    return expr if isinstance(expr, (Num, Opaque)) else expr


def source_definitions(index: CudaIndex) -> Definitions:
    """name -> the namespace-scope definitions of that name in every file."""
    found: Definitions = {}
    for path in sorted(index.files):
        for item in index.files[path].declarations.items:
            for name in item.names:
                found.setdefault(name, []).append((path, item))
    return found


class Reach:
    """Calls followed from one translation unit to another the way a linker does: a name the
    unit defines (in its own file or a header it includes) is the unit's own; a name it declares
    (a prototype, spelled outside every definition of its files, or a template whose
    specialisations other units define) is also defined by other units; any other name (a member,
    a namespace, a library's function) is not followed."""

    def __init__(self, index: CudaIndex) -> None:
        self.index = index
        self.definitions = source_definitions(index)
        self._closures: dict[str, frozenset[str]] = {}
        self._declared: dict[str, frozenset[str]] = {}
        self.asked: set[str] = set()  # every name units() looked up

    def closure(self, path: str) -> frozenset[str]:
        if path not in self._closures:
            seen, stack = {path}, [path]
            while stack:
                for resolved in self.index.resolved(stack.pop()):
                    if resolved.target is not None and resolved.target not in seen:
                        seen.add(resolved.target)
                        stack.append(resolved.target)
            self._closures[path] = frozenset(seen)
        return self._closures[path]

    def declared(self, path: str) -> frozenset[str]:
        if path not in self._declared:
            files = [self.index.files[p].declarations for p in self.closure(path) if p in self.index.files]
            namespaces = frozenset().union(*(d.namespaces for d in files))
            self._declared[path] = frozenset().union(*(d.loose for d in files)) - namespaces
        return self._declared[path]

    def _links(self, unit: str, name: str, local: list[tuple[str, Declaration]], other: str) -> bool:
        """Whether `unit`'s use of `name` can be `other`'s definition of it: a prototype `unit`
        declares; or a template `unit` declares that `other` specialises (it includes the same
        declaration) or explicitly instantiates. A file-local template of the same name in an
        unrelated unit is neither."""
        if not other.endswith(SOURCE_SUFFIXES):
            return False
        if name in self.declared(unit):
            return True
        templates = {where for where, item in local if item.templated}
        if not templates:
            return False
        return bool(templates & self.closure(other)) or name in self.index.files[other].declarations.instantiated

    def units(self, caller: str, names: tuple[str, ...], head: tuple[Evidence, ...],
              skip: str = "") -> dict[str, tuple[Evidence, ...]]:
        """Each unit defining a name `caller` calls and only declares, and so on from those units,
        with the hops from `head` to it; `skip`: a unit followed through but not counted."""
        sources: dict[str, tuple[Evidence, ...]] = {}
        seen = {(caller, name) for name in names}
        queue = deque((caller, name, head, 0) for name in names)
        while queue:
            unit, name, chain, depth = queue.popleft()
            self.asked.add(name)
            definitions = self.definitions.get(name, ())
            closure = self.closure(unit)
            local = [(where, item) for where, item in definitions if where in closure]
            # the unit's own definitions lead on; a header's are compiled into it whoever calls them
            targets = [(unit, where, item) for where, item in local if where == unit]
            if depth < _MAX_DEPTH:
                targets += [(where, where, item) for where, item in definitions
                            if where not in closure and self._links(unit, name, local, where)]
            for owner, where, item in targets:
                hop = chain if owner == unit and where == unit else chain + (
                    Evidence(Location(where, item.start[0], item.start[1]), f"calls `{name}`", EvidenceKind.CALL, name=name),)
                if owner != skip:
                    sources.setdefault(owner, hop)
                for used in item.uses:
                    if (owner, used) not in seen:
                        seen.add((owner, used))
                        queue.append((owner, used, hop, depth + (owner != unit)))
        return sources


def _units(reach: Reach, gate: Gate, path: str, arm: HostArm) -> GuardedUnits:
    """The units an arm reaches. The check's own file counts only where it defines a kernel."""
    head = (Evidence(Location(gate.path, gate.line, gate.col), f"gate `{gate.text}`", EvidenceKind.GATE),)
    own_kernels = any(f.kind == "global" for f in reach.index.files[path].functions)
    sources = reach.units(path, arm.calls, head, "" if own_kernels else path)
    return GuardedUnits(tuple(sorted(sources)), (), sources)
