"""The size and alignment of a plain struct or union, as the compiler lays it out.

Each member is a field of an element type of known size (`__nv_bfloat16`, `float4`, another
struct of the file), optionally an array of constant dimensions and an `__align__(N)` /
`alignas(N)`; an element's natural alignment is its size (1, 2, 4, 8 or 16 bytes), a struct's the
largest of its members'. Members are placed in order, each at the next multiple of its alignment;
a union is as large as its largest member; the whole rounds up to its alignment. Anything else in
the body (a base class, a bit field, a pointer, a member of a type of unknown size) gives None.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from tree_sitter import Node

from archlint.lang.cpp.constant import Scope, evaluate, text

_FIELD_RE = re.compile(
    r"^\s*(?:(?:__align__|alignas)\s*\(\s*(\w+)\s*\)\s*)?(?:const\s+)?"
    r"((?:(?:unsigned|signed|long|short)\s+)*[A-Za-z_][\w:]*(?:\s*<[^;{}]*>)?)\s+(?:(?:__align__|alignas)\s*\(\s*(\w+)\s*\)\s*)?"
    r"([A-Za-z_]\w*)\s*((?:\[[^\]]*\]\s*)*);\s*$",
    re.S,
)
_ALIGN_RE = re.compile(r"\s*(?:__align__|alignas)\s*\(\s*\w+\s*\)\s*")
_SKIPPED = ("comment", "access_specifier", "function_definition", "declaration", "template_declaration",
            "alias_declaration", "type_definition", "static_assert_declaration", "friend_declaration")
_NATURAL = (1, 2, 4, 8, 16)


def layout(body: Node, union: bool, scope: Scope, expression: Callable[[str], Node | None]) -> tuple[int, int] | None:
    """(size, alignment) of a struct or union body (a field_declaration_list); `expression` parses
    an array dimension or alignment as written."""
    offset = size = 0
    align = 1
    pending = ""  # `__align__(16)`, which the grammar leaves before the field it aligns
    for child in body.named_children:
        if child.type in _SKIPPED:
            continue
        if child.type == "ERROR" and _ALIGN_RE.fullmatch(text(child)):
            pending = text(child)
            continue
        if child.type != "field_declaration":
            return None
        members = [_member(child, scope, expression, pending)]
        if members[0] is None and "{" not in text(child) and text(child).count(";") > 1:
            # fields the grammar ran together (`__align__(16) T a[N];\n __align__(16) T b[M];`)
            members = [_lexical_member(f"{pending} {piece};", scope, expression) for piece in text(child).split(";")[:-1]]
        pending = ""
        for member in members:
            if member is None:
                if _declares_nothing(child):
                    break  # a nested type's definition, or a static member
                return None
            member_size, member_align = member
            align = max(align, member_align)
            if union:
                size = max(size, member_size)
            else:
                offset = _round_up(offset, member_align) + member_size
    total = size if union else offset
    return _round_up(total, align), align


def _member(field: Node, scope: Scope, expression: Callable[[str], Node | None], prefix: str = "") -> tuple[int, int] | None:
    kind = field.child_by_field_name("type")
    if kind is not None and kind.type in ("struct_specifier", "union_specifier") and kind.child_by_field_name("body") is not None:
        inner = layout(kind.child_by_field_name("body"), kind.type == "union_specifier", scope, expression)  # type: ignore[arg-type]
        declarator = field.child_by_field_name("declarator")
        if inner is None or declarator is None:
            return None
        dims = re.findall(r"\[([^\]]*)\]", text(declarator))
        count = _count(dims, scope, expression)
        return (inner[0] * count, inner[1]) if count is not None else None
    if any(text(c) in ("static", "constexpr") for c in field.children):
        return None
    return _lexical_member(f"{prefix} {text(field)}", scope, expression)


def _lexical_member(spelled: str, scope: Scope, expression: Callable[[str], Node | None]) -> tuple[int, int] | None:
    """(size, alignment) of one field as written: `__align__(16) __nv_bfloat16 Q[NROW * HD];`."""
    match = _FIELD_RE.match(spelled)
    if match is None or re.search(r"\b(?:static|constexpr)\b", spelled):
        return None
    element = " ".join(match.group(2).split())
    element_size = scope.type_size(element)
    element_align = scope.type_align(element)
    count = _count(re.findall(r"\[([^\]]*)\]", match.group(5)), scope, expression)
    if element_size is None or element_align is None or count is None:
        return None
    explicit = match.group(1) or match.group(3)
    if explicit:
        value = _value(explicit, scope, expression)
        if value is None or value not in _NATURAL + (32, 64, 128, 256, 512, 1024):
            return None
        element_align = max(element_align, value)
    return element_size * count, element_align


def _count(dims: list[str], scope: Scope, expression: Callable[[str], Node | None]) -> int | None:
    count = 1
    for dim in dims:
        value = _value(dim, scope, expression)
        if value is None or value < 0:
            return None
        count *= value
    return count


def _value(spelled: str, scope: Scope, expression: Callable[[str], Node | None]) -> int | None:
    node = expression(spelled)
    return evaluate(node, scope) if node is not None else None


def _declares_nothing(field: Node) -> bool:
    """A field declaration that adds no member: `struct Inner { ... };`, or a static one."""
    return field.child_by_field_name("declarator") is None or any(
        text(c) in ("static", "constexpr") for c in field.children if c.type in ("storage_class_specifier", "type_qualifier"))


def natural_align(size: int) -> int | None:
    return size if size in _NATURAL else None


def _round_up(value: int, align: int) -> int:
    return (value + align - 1) // align * align
