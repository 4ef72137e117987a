"""Integer constant expressions of C++ over tree-sitter nodes: what a `constexpr` size evaluates to.

The evaluator knows literals, the arithmetic, comparison and logical operators, `?:`, `sizeof` of
element types whose size is fixed (`__nv_bfloat16` 2, `float` 4 ...) or an alias of one,
`std::max`/`std::min`, integral casts, and names bound in a `Scope`: template arguments, constexpr
locals and members, namespace-scope constants and object-like macros. Anything else is None: a
size the evaluator cannot compute is never guessed.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from tree_sitter import Node

# Element types whose size the language or the CUDA headers fix.
TYPE_SIZES = {
    "char": 1, "int8_t": 1, "uint8_t": 1, "bool": 1, "__nv_fp8_e4m3": 1, "__nv_fp8_e5m2": 1,
    "__nv_fp8_e8m0": 1, "__nv_fp8x2_e4m3": 2, "__nv_fp4x2_e2m1": 1, "cutlass::float_e4m3_t": 1,
    "cutlass::float_e5m2_t": 1, "cutlass::half_t": 2, "cutlass::bfloat16_t": 2,
    "half": 2, "__half": 2, "__nv_bfloat16": 2, "nv_bfloat16": 2, "short": 2, "int16_t": 2, "uint16_t": 2,
    "half2": 4, "__half2": 4, "__nv_bfloat162": 4, "nv_bfloat162": 4, "float": 4, "int": 4, "unsigned": 4,
    "unsigned int": 4, "uint32_t": 4, "int32_t": 4, "unsigned char": 1, "signed char": 1, "unsigned short": 2,
    "long long": 8, "unsigned long": 8, "unsigned long long": 8,
    "double": 8, "int64_t": 8, "uint64_t": 8, "long": 8, "size_t": 8, "float2": 8, "int2": 8, "uint2": 8,
    "float4": 16, "int4": 16, "uint4": 16, "double2": 16,
}
_EXTREMA = {"max": max, "min": min}
_NAMESPACES = ("std", "cute", "cuda::std", "")
_INT_TYPES = frozenset({"int", "unsigned", "long", "size_t", "int32_t", "uint32_t", "int64_t", "uint64_t", "unsigned int"})
_MAX_DEPTH = 64


@dataclass
class Scope:
    """What names mean where an expression is read. `values`: names already known (template
    arguments); `nodes`: names defined by an initializer, evaluated on first use in `outer` (the
    scope the definition was made in, None for this one); `types`: type names bound to a type
    (`T` to `__nv_bfloat16`, `bf16_t` to its aliased type); `macros`: object-like macros' values."""

    values: dict[str, int] = field(default_factory=dict)
    nodes: dict[str, Node] = field(default_factory=dict)
    types: dict[str, str] = field(default_factory=dict)
    macros: Callable[[str], int | None] = lambda name: None
    outer: "Scope | None" = None
    # the names evaluated, in the order their values were found: the arithmetic a report shows,
    # and the names and types found to have no value (both shared by the scopes inside this one)
    trail: dict[str, int] = field(default_factory=dict)
    missing: dict[str, None] = field(default_factory=dict)
    opaque: frozenset[str] = frozenset()  # names here that are no constant (parameters, assigned locals)
    # constexpr functions of one `return`: name -> (parameter names, the returned expression)
    functions: dict[str, tuple[tuple[str, ...], Node]] = field(default_factory=dict)
    # plain structs and unions of the file, and how to lay one out: (size, alignment) or None
    structs: dict[str, Node] = field(default_factory=dict)
    lay_out: Callable[[Node, "Scope"], tuple[int, int] | None] | None = None

    def lookup(self, name: str, depth: int) -> int | None:
        value, defined = self._find(name, depth)
        if value is not None:
            self.trail.setdefault(name, value)
        elif not defined:
            self.missing.setdefault(name, None)  # a leaf: nothing defines it (a definition that fails names its own)
        return value

    def _find(self, name: str, depth: int) -> tuple[int | None, bool]:
        scope: Scope | None = self
        while scope is not None:
            if name in scope.opaque:
                return None, False
            if name in scope.values:
                return scope.values[name], True
            if name in scope.nodes:
                node = scope.nodes.pop(name)  # popped first: a definition that names itself stays None
                value = evaluate(node, scope, depth + 1)
                if value is not None:
                    scope.values[name] = value
                return value, True
            scope = scope.outer
        return self.macros(name), False

    def type_size(self, name: str) -> int | None:
        found = self._type_layout(name)
        if found is None:
            self.missing.setdefault(f"sizeof({self._resolved(name)})", None)
        return found[0] if found is not None else None

    def type_align(self, name: str) -> int | None:
        found = self._type_layout(name)
        return found[1] if found is not None else None

    def _type_layout(self, name: str) -> tuple[int, int] | None:
        name = self._resolved(name)
        short = name.split("::")[-1]
        size = TYPE_SIZES.get(name)
        if size is None and name.startswith(("std::", "::")):
            size = TYPE_SIZES.get(short)
        if size is not None:
            return (size, size) if size in (1, 2, 4, 8, 16) else None
        scope: Scope | None = self
        while scope is not None:
            if name in scope.structs and scope.lay_out is not None:
                body = scope.structs.pop(name)  # popped while laid out: a struct holding itself stays unknown
                found = scope.lay_out(body, scope)
                scope.structs[name] = body
                return found
            scope = scope.outer
        return None

    def _resolved(self, name: str) -> str:
        """A type name through the aliases and type parameters bound in the scope."""
        seen: set[str] = set()
        while name not in seen:
            seen.add(name)
            if name in TYPE_SIZES:
                return name
            short = name.split("::")[-1]
            if short in TYPE_SIZES and name.startswith(("std::", "::")):
                return name
            head, _, rest = name.partition("::")
            bound = self._type(name) or self._type(short)
            if bound is None and rest and self._type(head) is not None:
                bound = f"{self._type(head)}::{rest}"  # `Traits::SharedStorage` with `Traits` bound
            if bound is None:
                break
            name = bound
        return name

    def function(self, name: str) -> tuple[tuple[str, ...], Node, "Scope"] | None:
        """A constexpr function by name, with the scope it is defined in."""
        scope: Scope | None = self
        while scope is not None:
            if name in scope.functions:
                params, body = scope.functions[name]
                return params, body, scope
            scope = scope.outer
        return None

    def _type(self, name: str) -> str | None:
        scope: Scope | None = self
        while scope is not None:
            if name in scope.types:
                return scope.types[name]
            scope = scope.outer
        return None

    def inner(self, values: dict[str, int], nodes: dict[str, Node], types: dict[str, str],
              opaque: frozenset[str] = frozenset()) -> "Scope":
        """A scope inside this one that shares its trail."""
        return Scope(values, nodes, types, self.macros, self, self.trail, self.missing, opaque, lay_out=self.lay_out)


def text(node: Node) -> str:
    return (node.text or b"").decode("utf-8", "replace")


def type_name(node: Node) -> str:
    """A type as written, with whitespace and `const` dropped (`const __nv_bfloat16` → `__nv_bfloat16`)."""
    spelled = re.sub(r"\bconst\b|\bvolatile\b|\btypename\b", " ", text(node))
    return re.sub(r"\s*::\s*", "::", " ".join(spelled.split()))


def evaluate(node: Node | None, scope: Scope, depth: int = 0) -> int | None:
    """The integer value of an expression node, or None where any part of it is not known."""
    if node is None or depth > _MAX_DEPTH:
        return None
    handler = _HANDLERS.get(node.type)
    return handler(node, scope, depth + 1) if handler is not None else None


def _number(node: Node, scope: Scope, depth: int) -> int | None:
    spelled = text(node).replace("'", "").rstrip("uUlL")
    try:
        return int(spelled, 0) if not re.fullmatch(r"0\d+", spelled) else int(spelled, 8)
    except ValueError:
        return None


def _name(node: Node, scope: Scope, depth: int) -> int | None:
    name = text(node)
    if name in ("true", "false"):
        return int(name == "true")
    return scope.lookup(name, depth)


def _qualified(node: Node, scope: Scope, depth: int) -> int | None:
    """`Traits::kStages` bound in the scope under its qualified name, else its last part if it names a
    member of the enclosing class (`Self::kStages`)."""
    name = re.sub(r"\s+", "", text(node))
    value = scope.lookup(name, depth)
    if value is None and name.startswith("::"):
        value = scope.lookup(name[2:], depth)
    return value


def _parenthesized(node: Node, scope: Scope, depth: int) -> int | None:
    inner = [child for child in node.named_children if child.type != "comment"]
    return evaluate(inner[0], scope, depth) if len(inner) == 1 else None


def _binary(node: Node, scope: Scope, depth: int) -> int | None:
    operator = node.child_by_field_name("operator")
    left = evaluate(node.child_by_field_name("left"), scope, depth)
    if operator is None or left is None:
        return None
    op = text(operator)
    if op == "&&" and not left:
        return 0
    if op == "||" and left:
        return 1
    right = evaluate(node.child_by_field_name("right"), scope, depth)
    if right is None:
        return None
    return _apply(op, left, right)


def _apply(op: str, left: int, right: int) -> int | None:
    if op in ("/", "%"):
        if right == 0:
            return None
        quotient = abs(left) // abs(right) * (1 if (left >= 0) == (right >= 0) else -1)  # C truncates toward zero
        return quotient if op == "/" else left - quotient * right
    if op in ("<<", ">>") and not 0 <= right < 64:
        return None
    table: dict[str, Callable[[int, int], int]] = {
        "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
        "<<": lambda a, b: a << b, ">>": lambda a, b: a >> b, "&": lambda a, b: a & b, "|": lambda a, b: a | b,
        "^": lambda a, b: a ^ b, "<": lambda a, b: int(a < b), ">": lambda a, b: int(a > b),
        "<=": lambda a, b: int(a <= b), ">=": lambda a, b: int(a >= b), "==": lambda a, b: int(a == b),
        "!=": lambda a, b: int(a != b), "&&": lambda a, b: int(bool(a) and bool(b)), "||": lambda a, b: int(bool(a) or bool(b)),
    }
    compute = table.get(op)
    return compute(left, right) if compute is not None else None


def _unary(node: Node, scope: Scope, depth: int) -> int | None:
    operator = node.child_by_field_name("operator")
    value = evaluate(node.child_by_field_name("argument"), scope, depth)
    if operator is None or value is None:
        return None
    return {"-": -value, "+": value, "!": int(not value), "~": ~value}.get(text(operator))


def _conditional(node: Node, scope: Scope, depth: int) -> int | None:
    condition = evaluate(node.child_by_field_name("condition"), scope, depth)
    if condition is None:
        return None
    return evaluate(node.child_by_field_name("consequence" if condition else "alternative"), scope, depth)


def _sizeof(node: Node, scope: Scope, depth: int) -> int | None:
    kind = node.child_by_field_name("type")
    if kind is not None:
        return scope.type_size(type_name(kind))
    value = node.child_by_field_name("value")
    # `sizeof(T)` where the grammar reads the type as an expression: `sizeof(bf16_t)`
    while value is not None and value.type == "parenthesized_expression" and value.named_child_count == 1:
        value = value.named_children[0]
    if value is not None and value.type in ("identifier", "qualified_identifier", "type_identifier"):
        return scope.type_size(type_name(value))
    if value is not None:
        scope.missing.setdefault(f"sizeof({type_name(value)})", None)
    return None


def _call(node: Node, scope: Scope, depth: int) -> int | None:
    function = node.child_by_field_name("function")
    arguments = node.child_by_field_name("arguments")
    if function is None or arguments is None:
        return None
    values = [evaluate(argument, scope, depth) for argument in arguments.named_children if argument.type != "comment"]
    if any(value is None for value in values) or not values:
        return None
    known = [value for value in values if value is not None]
    name = re.sub(r"<.*", "", re.sub(r"\s+", "", text(function)))
    namespace, _, short = name.rpartition("::")
    if short in _EXTREMA and namespace in _NAMESPACES:
        return _EXTREMA[short](known)
    if short in ("static_cast", "int", "size_t", "uint32_t", "int64_t") and len(known) == 1:
        return known[0]
    found = scope.function(name) or scope.function(short)
    if found is None or len(found[0]) != len(known) or depth > _MAX_DEPTH // 2:
        return None
    params, body, defined = found
    # the call's own scope: its parameters, then the names where the function is defined
    inner = Scope(dict(zip(params, known)), {}, {}, defined.macros, defined, {}, scope.missing)
    return evaluate(body, inner, depth)


def _cast(node: Node, scope: Scope, depth: int) -> int | None:
    kind = node.child_by_field_name("type")
    if kind is None or type_name(kind) not in _INT_TYPES:
        return None
    return evaluate(node.child_by_field_name("value"), scope, depth)


_HANDLERS: dict[str, Callable[[Node, Scope, int], int | None]] = {
    "number_literal": _number,
    "identifier": _name,
    "true": _name,
    "false": _name,
    "type_identifier": _name,  # a template argument the grammar reads as a type: `f<kHdIn>`
    "qualified_identifier": _qualified,
    "parenthesized_expression": _parenthesized,
    "binary_expression": _binary,
    "unary_expression": _unary,
    "conditional_expression": _conditional,
    "sizeof_expression": _sizeof,
    "call_expression": _call,
    "cast_expression": _cast,
}


def _type_descriptor(node: Node, scope: Scope, depth: int) -> int | None:
    inner = node.named_children
    return evaluate(inner[0], scope, depth) if len(inner) == 1 else None


_HANDLERS["type_descriptor"] = _type_descriptor
