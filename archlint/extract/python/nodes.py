"""Questions the Python walk asks of one tree-sitter node: its first statement, a function's
parameter names, whether an `if` exits, raises or has alternatives, a subscript's target, where the
first syntax error is, and whether a statement runs only on some paths."""

from __future__ import annotations

from archlint.lang.python.expr import dotted, node_text, string_value

EXITS = frozenset({"raise_statement", "return_statement", "continue_statement", "break_statement"})
BRANCHING = frozenset({"if_statement", "for_statement", "while_statement", "try_statement", "with_statement",
                       "match_statement", "conditional_expression"})


def first_statement(node):
    named = [child for child in node.named_children if child.type != "comment"]
    return named[0] if named else None


def param_names(node) -> tuple[str, ...]:
    names = []
    for child in node.named_children if node is not None else ():
        if child.type == "identifier":
            names.append(node_text(child))
        elif child.type in ("default_parameter", "typed_default_parameter"):
            names.append(node_text(child.child_by_field_name("name")))
        elif child.type == "typed_parameter":
            inner = [c for c in child.named_children if c.type == "identifier"]
            if inner:
                names.append(node_text(inner[0]))
    return tuple(names)


def exits(if_node) -> bool:
    body = if_node.child_by_field_name("consequence")
    statements = [child for child in body.named_children if child.type != "comment"] if body else []
    return bool(statements) and statements[-1].type in EXITS


def raises(if_node) -> bool:
    body = if_node.child_by_field_name("consequence")
    statements = [child for child in body.named_children if child.type != "comment"] if body else []
    return bool(statements) and statements[-1].type == "raise_statement"


def has_alternatives(if_node) -> bool:
    return bool(if_node.children_by_field_name("alternative"))


def subscript_target(node) -> str:
    if node.type != "subscript":
        return ""
    value = dotted(node.child_by_field_name("value")) or ""
    index = node.child_by_field_name("subscript")
    key = string_value(index) if index is not None else None
    return f"{value}[{key}]" if value and key else ""


def first_error_line(root) -> int:
    stack = [root]
    while stack:
        node = stack.pop()
        if node.is_error or node.is_missing:
            return node.start_point[0] + 1
        stack.extend(reversed([child for child in node.children if child.has_error or child.is_missing]))
    return 1


def is_conditional(node) -> bool:
    """The statement runs only on some paths through its function (or the module)."""
    parent = node.parent
    while parent is not None and parent.type not in ("function_definition", "class_definition"):
        if parent.type in BRANCHING:
            return True
        parent = parent.parent
    return False
