"""What a C++ tree says about the names around a point: the function a node is in, its template
and value parameters, the places the file calls or instantiates it, the constants, aliases and
structs in scope there, and the locals whose value follows a given read. Used to size shared-memory
opt-ins (extract/cuda/sizes.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from tree_sitter import Node

from archlint.lang.cpp.constant import Scope, text, type_name

_DEFINITIONS = ("declaration", "field_declaration")


_ALIASES = ("alias_declaration", "type_definition")


CLASSES = ("struct_specifier", "class_specifier")


def internal(function: Node) -> bool:
    """A function no other file can call: `static`, or in an anonymous namespace."""
    if any(c.type == "storage_class_specifier" and text(c) == "static" for c in function.children):
        return True
    node = function.parent
    while node is not None:
        if node.type == "namespace_definition" and node.child_by_field_name("name") is None:
            return True
        node = node.parent
    return False


def parameters(function: Node) -> tuple[str, ...]:
    declarator = function.child_by_field_name("declarator")
    while declarator is not None and declarator.type != "function_declarator":
        declarator = declarator.child_by_field_name("declarator")
    listing = declarator.child_by_field_name("parameters") if declarator is not None else None
    names = []
    for param in listing.named_children if listing is not None else ():
        declared = param.child_by_field_name("declarator")
        while declared is not None and declared.type not in ("identifier",):
            declared = declared.child_by_field_name("declarator")
        names.append(text(declared) if declared is not None else "")
    return tuple(names)


def call_sites(root: Node, name: str, template: bool) -> Iterator[tuple[Node | None, Node | None, Node | None]]:
    """(template argument list, call, the function it is in) of each explicit instantiation of
    `name` and each call of it; a template's calls only where they spell its arguments."""
    for node in walk(root):
        if node.type == "template_function":
            called, arguments = node.child_by_field_name("name"), node.child_by_field_name("arguments")
            if called is None or arguments is None or text(called).split("::")[-1] != name:
                continue
            parent = node.parent
            if parent is not None and parent.type == "qualified_identifier":
                parent = parent.parent
            if parent is None:
                continue
            if parent.type == "function_declarator" and enclosing(parent, ("template_instantiation",)) is not None:
                yield arguments, None, None
            elif parent.type == "call_expression" and parent.child_by_field_name("function") in (node, node.parent):
                yield arguments, parent, enclosing(parent, ("function_definition",))
        elif node.type == "call_expression" and not template:
            function = node.child_by_field_name("function")
            if function is not None and function.type in ("identifier", "qualified_identifier") \
                    and text(function).split("::")[-1].strip() == name:
                yield None, node, enclosing(node, ("function_definition",))


NAME_NODES = ("identifier", "field_identifier", "qualified_identifier")


def last_name(node: Node) -> str:
    return text(node).split("::")[-1].strip()


def names_following(function: Node, reads: frozenset[str]) -> set[str]:
    """The names of the limit reads, and the locals whose value follows one: written through a
    pointer by a call that names one (`cudaDeviceGetAttribute(&v, ..., device)`), or set from an
    expression that names one or another such local."""
    following = set(reads)
    flows: list[tuple[str, Node]] = []
    for node in walk(function):
        if node.type == "init_declarator":
            name, value = node.child_by_field_name("declarator"), node.child_by_field_name("value")
        elif node.type == "assignment_expression":
            name, value = node.child_by_field_name("left"), node.child_by_field_name("right")
        elif node.type == "call_expression":
            arguments = node.child_by_field_name("arguments")
            for argument in arguments.named_children if arguments is not None else ():
                target = argument.child_by_field_name("argument") if argument.type == "pointer_expression" else None
                if target is not None and target.type == "identifier":
                    flows.append((text(target), node))
            continue
        else:
            continue
        if name is not None and value is not None and name.type == "identifier":
            flows.append((text(name), value))
    changed = True
    while changed:
        changed = False
        for local, value in flows:
            if local not in following and any(leaf.type in NAME_NODES and last_name(leaf) in following for leaf in walk(value)):
                following.add(local)
                changed = True
    return following


def conditions(node: Node, function: Node) -> Iterator[Node]:
    """The conditions of the `if`, `switch` and `?:` the node is made under, inside the function."""
    child, parent = node, node.parent
    while parent is not None and parent != function:
        if parent.type in ("if_statement", "switch_statement", "conditional_expression"):
            condition = parent.child_by_field_name("condition")
            if condition is not None and condition != child:
                yield condition
        child, parent = parent, parent.parent


def walk(node: Node) -> Iterator[Node]:
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(current.children))


def enclosing(node: Node | None, types: tuple[str, ...]) -> Node | None:
    while node is not None and node.type not in types:
        node = node.parent
    return node


def function_name(function: Node) -> str:
    declarator = function.child_by_field_name("declarator")
    while declarator is not None and declarator.type != "function_declarator":
        declarator = declarator.child_by_field_name("declarator")
    name = declarator.child_by_field_name("declarator") if declarator is not None else None
    return re.sub(r"<.*", "", text(name)).split("::")[-1].strip() if name is not None else ""


def template_parameters(function: Node) -> list[tuple[str, bool, Node | None]] | None:
    """(name, is a type, default) of each template parameter of a function template; None for a
    function that is no template."""
    parent = function.parent
    if parent is None or parent.type != "template_declaration":
        return None
    listing = parent.child_by_field_name("parameters")
    params: list[tuple[str, bool, Node | None]] = []
    for param in listing.named_children if listing is not None else ():
        is_type = "type_parameter" in param.type
        name = param.child_by_field_name("name") if is_type else param.child_by_field_name("declarator")
        if name is None:
            name = next((c for c in param.named_children if c.type in ("type_identifier", "identifier")), None)
        default = param.child_by_field_name("default_type" if is_type else "default_value")
        params.append((text(name) if name is not None else "", is_type, default))
    return params


def argument_nodes(listing: Node) -> list[Node]:
    return [a for a in listing.named_children if a.type != "comment"]


def function_scope(outer: Scope, function: Node, before: int, values: dict[str, int], types: dict[str, str]) -> Scope:
    """The scope of a point in a function: the members of the classes around it, its template
    arguments, and the constants it defines before the point in the blocks that hold it."""
    for owner in reversed(list(_owners(function))):
        nodes: dict[str, Node] = {}
        member_types: dict[str, str] = {}
        body = owner.child_by_field_name("body")
        if body is not None:
            collect(body, (), nodes, member_types, members_only=True)
        outer = outer.inner({}, nodes, member_types)
    nodes = {}
    local_types: dict[str, str] = {}
    body = function.child_by_field_name("body")
    assigned = _assigned(body) if body is not None else set()
    block = body
    while block is not None:
        inner = None
        for child in block.named_children:
            if child.start_byte >= before:
                break
            if child.end_byte > before:
                inner = child
                break
            if child.type == "declaration":
                for name, value, constant in _declared(child):
                    if constant or name not in assigned:
                        nodes[name] = value
            elif child.type in _ALIASES:
                _alias(child, local_types)
        block = inner
    opaque = frozenset(name for name in parameters(function) if name and name not in values) | frozenset(
        name for name in assigned if name not in nodes)
    return outer.inner(dict(values), nodes, {**types, **local_types}, opaque)


def _owners(function: Node) -> Iterator[Node]:
    node = function.parent
    while node is not None:
        if node.type in CLASSES:
            yield node
        node = node.parent


def _assigned(body: Node) -> set[str]:
    """Names the body assigns, increments or takes the address of: no constant, whatever their
    declaration says."""
    found: set[str] = set()
    for node in walk(body):
        target = None
        if node.type == "assignment_expression":
            target = node.child_by_field_name("left")
        elif node.type == "update_expression":
            target = node.child_by_field_name("argument")
        elif node.type == "pointer_expression" and text(node.child_by_field_name("operator") or node).startswith("&"):
            target = node.child_by_field_name("argument")
        if target is not None and target.type == "identifier":
            found.add(text(target))
    return found


def _declared(declaration: Node) -> Iterator[tuple[str, Node, bool]]:
    """(name, initializer, declared const or constexpr) of an integral declaration."""
    qualifiers = {text(c) for c in declaration.children if c.type == "type_qualifier"}
    constant = bool(qualifiers & {"const", "constexpr"})
    for declarator in declaration.children_by_field_name("declarator"):
        if declarator.type != "init_declarator":
            continue
        name = declarator.child_by_field_name("declarator")
        value = declarator.child_by_field_name("value")
        if name is not None and name.type in ("identifier", "field_identifier") and value is not None:
            if value.type == "initializer_list" and value.named_child_count == 1:
                value = value.named_children[0]
            yield text(name), value, constant


def _alias(node: Node, types: dict[str, str]) -> None:
    """`using bf16_t = __nv_bfloat16;` and `typedef __nv_bfloat16 bf16_t;`"""
    if node.type == "alias_declaration":
        name, kind = node.child_by_field_name("name"), node.child_by_field_name("type")
    else:
        kind = node.child_by_field_name("type")
        name = node.child_by_field_name("declarator")
    if name is not None and kind is not None and name.type == "type_identifier":
        types.setdefault(text(name), type_name(kind))


def collect(node: Node, scope: tuple[str, ...], nodes: dict[str, Node], types: dict[str, str],
             members_only: bool = False, structs: dict[str, Node] | None = None) -> None:
    """Constants and aliases defined outside functions, by their name and, for a class member, its
    qualified name too (`Traits::kStages`); and the structs and unions outside templates."""
    for child in node.named_children:
        if structs is not None and child.type in (*CLASSES, "union_specifier") and node.type != "template_declaration":
            owner = child.child_by_field_name("name")
            if owner is not None and child.child_by_field_name("body") is not None:
                _bind_name(structs, scope, text(owner), child)
        if child.type in _DEFINITIONS:
            if child.type == "field_declaration":
                for name, value in _field_constants(child):
                    _bind_name(nodes, scope, name, value)
            else:
                for name, value, constant in _declared(child):
                    if constant:
                        _bind_name(nodes, scope, name, value)
        elif child.type in _ALIASES:
            _alias(child, types)
        elif child.type in CLASSES and not members_only:
            owner = child.child_by_field_name("name")
            body = child.child_by_field_name("body")
            if owner is not None and body is not None:
                collect(body, (*scope, text(owner)), nodes, types, structs=structs)
        elif child.type in ("namespace_definition", "linkage_specification") and not members_only:
            body = child.child_by_field_name("body")
            named = child.child_by_field_name("name") if child.type == "namespace_definition" else None
            if body is not None:
                collect(body, (*scope, text(named)) if named is not None else scope, nodes, types, structs=structs)
        elif child.type in ("template_declaration", "declaration_list", "preproc_if", "preproc_ifdef", "preproc_else"):
            if not members_only or child.type != "template_declaration":
                collect(child, scope, nodes, types, members_only, structs if child.type != "template_declaration" else None)


def _field_constants(field: Node) -> Iterator[tuple[str, Node]]:
    """`static constexpr int kStages = 4;` in a class body."""
    specifiers = {text(c) for c in field.children if c.type in ("type_qualifier", "storage_class_specifier")}
    if "constexpr" not in specifiers and not {"static", "const"} <= specifiers:
        return
    name = field.child_by_field_name("declarator")
    value = field.child_by_field_name("default_value")
    if name is not None and value is not None and name.type == "field_identifier":
        if value.type == "initializer_list" and value.named_child_count == 1:
            value = value.named_children[0]
        yield text(name), value


def _bind_name(nodes: dict[str, Node], scope: tuple[str, ...], name: str, value: Node) -> None:
    nodes.setdefault(name, value)
    if scope:
        nodes.setdefault("::".join((*scope, name)), value)
        nodes.setdefault(f"{scope[-1]}::{name}", value)


def constexpr_functions(root: Node) -> dict[str, tuple[tuple[str, ...], Node]]:
    """`constexpr int SmemBytes(int stages) { return ...; }` outside templates: each whose body is
    one `return`, by name."""
    found: dict[str, tuple[tuple[str, ...], Node]] = {}
    for node in walk(root):
        if node.type != "function_definition" or (node.parent is not None and node.parent.type == "template_declaration"):
            continue
        if not any(text(c) == "constexpr" for c in node.children if c.type in ("type_qualifier", "storage_class_specifier")):
            continue
        declarator, body = node.child_by_field_name("declarator"), node.child_by_field_name("body")
        statements = [c for c in body.named_children if c.type != "comment"] if body is not None else []
        if declarator is None or declarator.type != "function_declarator" or len(statements) != 1 \
                or statements[0].type != "return_statement" or not statements[0].named_children:
            continue
        name = declarator.child_by_field_name("declarator")
        parameters = declarator.child_by_field_name("parameters")
        names = []
        for param in parameters.named_children if parameters is not None else ():
            declared = param.child_by_field_name("declarator")
            names.append(text(declared) if declared is not None and declared.type == "identifier" else "")
        if name is not None and all(names):
            found.setdefault(text(name), (tuple(names), statements[0].named_children[0]))
    return found
