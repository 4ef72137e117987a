"""Evaluating Python conditions for one compute capability, without running anything.

A condition is folded with the device's (major, minor) fixed: capability sources (the calls the
gate vocabulary names, such as `torch.cuda.get_device_capability()`, FlashInfer's
`get_compute_capability` and device properties, or scanned helpers such as SGLang's
`get_device_sm`) yield concrete numbers, scanned functions are evaluated from their own return
statements, and everything else is unknown. Three-valued: True, False, or UNKNOWN.

The values and the three-valued logic are in `capability_values`, the attribute tables in
`capability_tables`, what looks like an arch by its name in `arch_names`; this module is the walk.
"""

from __future__ import annotations

import operator
import re

from archlint.gates.arch_names import ARCHY, is_dunder
from archlint.gates.capability_tables import table_function
from archlint.gates.capability_values import (
    UNKNOWN,
    ArchTest,
    AttrTable,
    Capability,
    FuncRef,
    Props,
    Scope,
    Trace,
    and_,
    compare,
    element,
    members,
    or_,
    truth,
)
from archlint.lang.python.expr import new_expr
from archlint.model.python import PyExpr, version_tuple

_MAX_CALL_DEPTH = 6
_VERSION = re.compile(r"^\d+(?:\.\d+)*$")
_RECURSION = ("recursion",)  # what a call still being evaluated reads as, asked again from within


class Evaluator:
    """`toolkit`: the CUDA toolkit version a toolkit-version call (`is_cuda_version_at_least("12.9")`)
    is answered for; None leaves such calls unknown."""

    def __init__(self, index, ccs: tuple[int, ...], toolkit: tuple[int, ...] | None = None,
                 env_defaults: bool = False):
        self.index = index
        # `os.getenv("X", "80;90")` reads as its default: a build script read for an unset environment
        self.env_defaults = env_defaults
        self.idioms = index.idioms  # which calls read the capability, which wrap a function
        self.ccs = ccs
        self.toolkit = toolkit
        self._memo: dict = {}
        self._assigned_memo: dict = {}
        self._unfinished = 0  # how often a call in progress was asked for (its memo is a placeholder)

    # ---------------------------------------------------------------- public

    def truth_table(self, expr: PyExpr, module: str, function: str, line: int | None) -> tuple[dict, Trace]:
        trace = Trace()
        table = {}
        for cc in self.ccs:
            value = self.value(expr, Scope(module, function, line), cc, trace, 0)
            table[cc] = truth(value)
            if not trace.arch:
                # nothing read the capability: the condition does not depend on the arch
                return {cc: table[cc] for cc in self.ccs[:1]}, trace
        return table, trace

    def call_value(self, qualname: str, args: tuple, cc: int, trace: Trace) -> object:
        return self._call_function(FuncRef(qualname), args, (), cc, trace, 0)

    def call_ref(self, ref: "FuncRef", cc: int, trace: Trace) -> object:
        """The value of calling a function value with no arguments (`lru_cache(partial(f, x=[10]))`)."""
        return self._call_function(ref, (), (), cc, trace, 0)

    # ---------------------------------------------------------------- expressions

    def value(self, expr: PyExpr, scope: Scope, cc: int, trace: Trace, depth: int) -> object:
        handler = getattr(self, "_" + expr.kind, None)
        if handler is None:
            return UNKNOWN
        return handler(expr, scope, cc, trace, depth)

    def _int(self, expr, scope, cc, trace, depth):
        return expr.value

    def _str(self, expr, scope, cc, trace, depth):
        return expr.text

    def _bool(self, expr, scope, cc, trace, depth):
        return expr.text == "True"

    def _none(self, expr, scope, cc, trace, depth):
        return None

    def _seq(self, expr, scope, cc, trace, depth):
        return tuple(self.value(item, scope, cc, trace, depth) for item in expr.args)

    def _fstr(self, expr, scope, cc, trace, depth):
        holes = [self.value(item, scope, cc, trace, depth) for item in expr.args]
        if any(hole is UNKNOWN for hole in holes):
            return UNKNOWN
        pieces = expr.text.split("{}")
        if len(pieces) != len(holes) + 1:
            return UNKNOWN
        return pieces[0] + "".join(str(hole) + piece for hole, piece in zip(holes, pieces[1:]))

    def _name(self, expr, scope, cc, trace, depth):
        name = expr.text
        for key, bound in scope.bound:
            if key == name:
                return bound
        head, _, rest = name.partition(".")
        if rest:
            base = dict(scope.bound).get(head, None) if any(key == head for key, _ in scope.bound) else None
            if base is None:
                found = self._lookup(name, scope, cc, trace, depth)
                if found is not UNKNOWN:
                    return found
                base = self._lookup(head, scope, cc, trace, depth)
            if isinstance(base, AttrTable) and "." not in rest:
                return self._table_attr(base, rest, scope, cc, trace, depth)
            return members(base, rest.split("."), trace)
        return self._lookup(name, scope, cc, trace, depth)

    def _lookup(self, name, scope, cc, trace, depth):
        if depth > 20:
            return UNKNOWN
        index = self.index
        found = index.assign_of(scope.module, name, scope.function, scope.line)
        if found is not None:
            owner, assign = found
            if self.env_defaults and assign.path:
                return UNKNOWN  # a build script's branch-dependent setting (IS_ROCM = True / False)
            value = self._assigned(owner, assign, cc, trace, depth + 1)
            if assign.unpack:
                return element(value, assign.targets.index(name) if name in assign.targets else -1)
            return value
        binding = index.resolve(scope.module, name, scope.function)
        if binding is not None and binding.kind == "function" and not is_dunder(binding.name):
            return FuncRef(index.qualify(binding.module, binding.name))
        return UNKNOWN

    def _assigned(self, owner, assign, cc, trace, depth):
        """The value an assignment gives, in its own scope. Conditions read the same module-level
        names over and over, so it is remembered per capability and depth (the depth decides where
        evaluation stops); not when it read a call still being evaluated, whose value it would then
        remember before it is known."""
        key = (id(assign), cc, depth)
        known = self._assigned_memo.get(key)
        if known is None:
            unfinished, inner = self._unfinished, Trace()
            value = self.value(assign.value, Scope(owner, assign.function, assign.line), cc, inner, depth)
            # assign: keeps its id taken
            known = (value, inner.arch, inner.predicate, tuple(inner.opaque), tuple(inner.tests),
                     tuple(inner.toolkit_tests), assign)
            if self._unfinished == unfinished:
                self._assigned_memo[key] = known
        value, arch, predicate, opaque, tests, toolkit_tests, _ = known
        trace.take(arch, predicate, opaque, tests, toolkit_tests)
        return value

    def _attr(self, expr, scope, cc, trace, depth):
        base = self.value(expr.args[0], scope, cc, trace, depth)
        if isinstance(base, AttrTable):
            return self._table_attr(base, expr.text, scope, cc, trace, depth)
        return members(base, [expr.text], trace)

    def _subscript(self, expr, scope, cc, trace, depth):
        base = self.value(expr.args[0], scope, cc, trace, depth)
        key = self.value(expr.args[1], scope, cc, trace, depth)
        if isinstance(base, tuple) and isinstance(key, int) and -len(base) <= key < len(base):
            return base[key]
        return UNKNOWN

    def _compare(self, expr, scope, cc, trace, depth):
        was, known = trace.arch, len(trace.tests)
        trace.arch = False
        values = [self.value(item, scope, cc, trace, depth) for item in expr.args]
        if trace.arch and len(trace.tests) == known and scope.line is not None:
            trace.tests.append(ArchTest(scope.module, scope.line, expr))  # the innermost that read it
        trace.arch |= was
        result = True
        for op, left, right in zip(expr.text.split(","), values, values[1:]):
            step = compare(op, left, right)
            result = and_(result, step)
        return result

    def _and(self, expr, scope, cc, trace, depth):
        left = self.value(expr.args[0], scope, cc, trace, depth)
        right = self.value(expr.args[1], scope, cc, trace, depth)
        return and_(truth(left), truth(right))

    def _or(self, expr, scope, cc, trace, depth):
        left = self.value(expr.args[0], scope, cc, trace, depth)
        right = self.value(expr.args[1], scope, cc, trace, depth)
        return or_(truth(left), truth(right))

    def _not(self, expr, scope, cc, trace, depth):
        inner = truth(self.value(expr.args[0], scope, cc, trace, depth))
        return UNKNOWN if inner is UNKNOWN else not inner

    def _cond(self, expr, scope, cc, trace, depth):
        then, test, other = expr.args
        chosen = truth(self.value(test, scope, cc, trace, depth))
        if chosen is UNKNOWN:
            a, b = self.value(then, scope, cc, trace, depth), self.value(other, scope, cc, trace, depth)
            return a if a == b else UNKNOWN
        return self.value(then if chosen else other, scope, cc, trace, depth)

    def _binop(self, expr, scope, cc, trace, depth):
        left = self.value(expr.args[0], scope, cc, trace, depth)
        right = self.value(expr.args[1], scope, cc, trace, depth)
        op = _BINOPS.get(expr.text)
        if op is None or left is UNKNOWN or right is UNKNOWN:
            return UNKNOWN
        try:
            return op(left, right)
        except (TypeError, ValueError, ZeroDivisionError):
            return UNKNOWN

    def _call(self, expr, scope, cc, trace, depth):
        callee = expr.args[0]
        last = expr.text.rpartition(".")[2] or (callee.text if callee.kind == "attr" else "")
        known = self._vocabulary_call(expr, last, scope, cc, trace, depth)
        if known is not _NOT_VOCABULARY:
            return known
        if callee.kind == "call":
            inner_last = callee.text.rpartition(".")[2]
            if inner_last in self.idioms.wrapper_calls and len(expr.args) == 2:
                return self.value(expr.args[1], scope, cc, trace, depth)
        if last == "partial" and len(expr.args) >= 2:
            return self._partial(expr, scope, cc, trace, depth)
        if self.toolkit is not None and last in self.idioms.toolkit_version_calls:
            return self._toolkit_at_least(expr, scope, cc, trace, depth)
        target = self.value(callee, scope, cc, trace, depth) if callee.kind == "name" else UNKNOWN
        if isinstance(target, FuncRef) and depth < _MAX_CALL_DEPTH * 4:
            args = tuple(self.value(arg, scope, cc, trace, depth) for arg in expr.positional())
            kwargs = tuple((arg.text, self.value(arg.args[0], scope, cc, trace, depth)) for arg in expr.args[1:] if arg.kind == "kw")
            return self._call_function(target, args, kwargs, cc, trace, depth + 1)
        return self._builtin(expr, last, scope, cc, trace, depth)

    def _vocabulary_call(self, expr, last, scope, cc, trace, depth):
        """The calls the gate vocabulary gives a meaning of their own, whatever scanned function
        their name would resolve to; _NOT_VOCABULARY for any other call."""
        idioms = self.idioms
        if last in idioms.capability_calls:
            # SGLang's own get_device_capability() tries XPU and HPU too: its body says less than its name
            trace.arch = True
            return Capability(cc // 10, cc % 10)
        relation = idioms.predicate_relation.get(last)
        if relation is not None:
            return self._predicate(expr, relation, scope, cc, trace, depth)
        if last in idioms.capability_value_calls:
            args = tuple(self.value(arg, scope, cc, trace, depth) for arg in expr.positional())
            return Capability(*args) if len(args) == 2 and all(type(a) is int for a in args) else UNKNOWN
        if last in idioms.table_names:
            return AttrTable(last)
        callee = expr.args[0]
        if self.env_defaults and expr.text.endswith(idioms.env_default_calls):
            args = expr.positional()
            return self.value(args[1], scope, cc, trace, depth) if len(args) == 2 else UNKNOWN
        if callee.kind != "attr":
            return _NOT_VOCABULARY
        if last in idioms.capability_int_methods and not expr.positional():
            base = self.value(callee.args[0], scope, cc, trace, depth)
            return base.major * 10 + base.minor if isinstance(base, Capability) else UNKNOWN
        if last in _STR_METHODS:
            base = self.value(callee.args[0], scope, cc, trace, depth)
            args = tuple(self.value(arg, scope, cc, trace, depth) for arg in expr.positional())
            if isinstance(base, str) and all(isinstance(arg, str) for arg in args) and len(args) <= 1:
                return _STR_METHODS[last](base, *args)
        return _NOT_VOCABULARY

    def _predicate(self, expr, relation: str, scope, cc, trace, depth):
        """`has_device_capability(90)`, `is_device_capability((12, 0))`, `is_device_capability_family(120)`."""
        args = expr.positional()
        wanted = self.value(args[0], scope, cc, trace, depth) if args else UNKNOWN
        device = Capability(cc // 10, cc % 10)
        trace.arch = trace.predicate = True
        if scope.line is not None:
            trace.tests.append(ArchTest(scope.module, scope.line, expr))
        if type(wanted) is int:
            number = device.major * 10 + device.minor
            if relation == "same_major":
                return number // 10 == wanted // 10
            return number >= wanted if relation == "at_least" else number == wanted
        if isinstance(wanted, tuple) and len(wanted) == 2 and all(type(part) is int for part in wanted):
            pair = tuple(wanted)
            if relation == "same_major":
                return device.major == pair[0]
            return device >= pair if relation == "at_least" else device == pair
        return UNKNOWN

    def _table_attr(self, table: AttrTable, name: str, scope, cc, trace, depth):
        """`get_platform().is_sm100`: the call of the function the table names for `is_sm100`, in
        the module that defines it (a def, or a name bound to `lru_cache(partial(...))`)."""
        key = ("table", table.call, name)
        if key not in self._memo:
            self._memo[key] = table_function(self.index, self.idioms.table_names[table.call], name)
        found = self._memo[key]
        if found is None or depth > _MAX_CALL_DEPTH * 4:
            return UNKNOWN
        module, function = found
        call = new_expr("call", function, None, (new_expr("name", function),))
        return self.value(call, Scope(module, "", None), cc, trace, depth + 1)

    def _builtin(self, expr, last, scope, cc, trace, depth):
        if last in self.idioms.capability_calls:
            trace.arch = True
            return Capability(cc // 10, cc % 10)
        if last in self.idioms.properties_calls:
            return Props(cc // 10, cc % 10)
        args = expr.positional()
        if last in ("tuple", "list") and len(args) == 1 and expr.text == last:
            value = self.value(args[0], scope, cc, trace, depth)
            return value if isinstance(value, tuple) else UNKNOWN
        if last in ("int", "str") and expr.text == last and len(args) == 1:
            value = self.value(args[0], scope, cc, trace, depth)
            return UNKNOWN if value is UNKNOWN else _convert(last, value)
        if ARCHY.search(last):
            trace.opaque.append(expr.text)
        return UNKNOWN

    def _toolkit_at_least(self, expr, scope, cc, trace, depth):
        args = expr.positional()
        version = self.value(args[0], scope, cc, trace, depth) if len(args) == 1 else UNKNOWN
        if not isinstance(version, str) or not _VERSION.match(version):
            return UNKNOWN
        trace.toolkit_tests.append(version)
        assert self.toolkit is not None
        return self.toolkit >= version_tuple(version)

    def _partial(self, expr, scope, cc, trace, depth):
        target = self.value(expr.args[1], scope, cc, trace, depth)
        if not isinstance(target, FuncRef):
            return UNKNOWN
        bound = tuple((arg.text, self.value(arg.args[0], scope, cc, trace, depth)) for arg in expr.args[2:] if arg.kind == "kw")
        return FuncRef(target.qualname, target.bound + bound)

    # ---------------------------------------------------------------- scanned functions

    def _call_function(self, ref: FuncRef, args: tuple, kwargs: tuple, cc: int, trace: Trace, depth: int):
        fn = self.index.functions.get(ref.qualname)
        if fn is None or depth > _MAX_CALL_DEPTH * 4:
            return UNKNOWN
        params = fn.params[1:] if fn.cls and fn.params[:1] in (("self",), ("cls",)) else fn.params
        bound = dict(ref.bound)
        bound.update(zip(params, args))
        bound.update(kwargs)
        key = (ref.qualname, cc, _freeze(bound))
        if key in self._memo:
            value, arch, predicate, opaque, tests, toolkit_tests = self._memo[key]
            self._unfinished += opaque is _RECURSION
        else:
            self._memo[key] = (UNKNOWN, False, False, _RECURSION, (), ())
            inner = Trace()
            value = self._returns(ref.qualname, fn, tuple(sorted(bound.items(), key=str)), params, cc, inner, depth)
            arch, predicate, opaque, tests = inner.arch, inner.predicate, tuple(inner.opaque), tuple(inner.tests)
            toolkit_tests = tuple(inner.toolkit_tests)
            if arch and (isinstance(value, bool) or value is UNKNOWN):
                predicate = True
            self._memo[key] = (value, arch, predicate, opaque, tests, toolkit_tests)
        trace.take(arch, predicate, opaque, tests, toolkit_tests)
        return value

    def _returns(self, qualname, fn, bound, params, cc, trace, depth):
        module = self.index.module_of_path.get(fn.path, "")
        local = qualname[len(module) + 1 :] if module else qualname
        facts = self.index.modules.get(module)
        if facts is None:
            return UNKNOWN
        unbound = tuple((p, UNKNOWN) for p in params if p not in dict(bound))
        candidates = []
        for ret in facts.returns:
            if ret.function != local:
                continue
            scope = Scope(module, local, ret.line, bound + unbound)
            sub = Trace()
            reach = True
            for cond, wanted in ret.path:
                held = truth(self.value(cond, scope, cc, sub, depth))
                reach = and_(reach, held if wanted or held is UNKNOWN else not held)
                if reach is False:
                    break
            if reach is False:
                continue
            value = self.value(ret.value, scope, cc, sub, depth) if ret.value is not None else None
            candidates.append((reach, value, sub))
            trace.opaque.extend(sub.opaque)
            trace.toolkit_tests.extend(sub.toolkit_tests)
            if reach is True:
                break
        return _merge(candidates, trace)


def _merge(candidates, trace: Trace):
    """One value out of the reachable returns; returns that read the capability outrank fallbacks."""
    if not candidates:
        return UNKNOWN
    if any(sub.arch for _, _, sub in candidates):
        candidates = [c for c in candidates if c[2].arch] or candidates
        trace.arch = True
    for _, _, sub in candidates:
        trace.predicate |= sub.predicate
        trace.tests.extend(sub.tests)
    values = [value for _, value, _ in candidates]
    first = values[0]
    if all(value == first and type(value) is type(first) for value in values):
        return first
    if all(type(value) is tuple and len(value) == len(first) for value in values):
        # `return False, "requires CUDA"` beside `return False, "requires 8.9"`: the parts they agree on
        return tuple(part if all(v[i] == part and type(v[i]) is type(part) for v in values) else UNKNOWN
                     for i, part in enumerate(first))
    if all(isinstance(v, bool) or v is UNKNOWN for v in values):
        return UNKNOWN
    return UNKNOWN


_BINOPS = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "//": operator.floordiv, "%": operator.mod,
}


_NOT_VOCABULARY = object()
_STR_METHODS = {"split": lambda text, *sep: tuple(text.split(*sep)), "strip": lambda text, *chars: text.strip(*chars),
                "lower": lambda text: text.lower(), "upper": lambda text: text.upper()}


def _convert(kind: str, value):
    try:
        return int(value) if kind == "int" else str(value)
    except (TypeError, ValueError):
        return UNKNOWN


def _freeze(bound: dict):
    try:
        frozen = tuple(sorted(bound.items(), key=lambda item: item[0]))
        hash(frozen)
        return frozen
    except TypeError:
        return tuple(sorted((key, repr(value)) for key, value in bound.items()))
