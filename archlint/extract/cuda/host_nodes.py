"""Questions the host-code reading asks of one tree-sitter node: the name a call calls and the
classes it is qualified with, a call's arguments, the calls under a node, the statements of a block
(through preprocessor conditionals), what a branch returns, and the locals bound to a function.

They answer from the node alone, so the readers of host checks, of host conditions and of op
registrations share them.
"""

from __future__ import annotations

from collections.abc import Iterator

from tree_sitter import Node

from archlint.lang.cpp.constant import text

_PREPROC = frozenset(("preproc_if", "preproc_ifdef", "preproc_else", "preproc_elif", "preproc_elifdef"))


def called_name(node: Node) -> str:
    """The unqualified name a call_expression calls, '' for a member call or an expression."""
    function = node.child_by_field_name("function")
    while function is not None and function.type in ("qualified_identifier", "template_function"):
        function = function.child_by_field_name("name")
    return text(function) if function is not None and function.type == "identifier" else ""


def call_names(node: Node) -> list[str]:
    """What a call names: the function, and the classes it is qualified with
    (`LoopUnroller<1, 16>::unroll(...)` names `unroll` and `LoopUnroller`, whose definition leads on)."""
    callee = called_name(node)
    names = [callee] if callee else []
    function = node.child_by_field_name("function")
    while function is not None and function.type == "qualified_identifier":
        scope = function.child_by_field_name("scope")
        if scope is not None and scope.type == "template_type":
            scope = scope.child_by_field_name("name")
        if scope is not None and scope.type == "type_identifier":
            names.append(text(scope))
        function = function.child_by_field_name("name")
    return names


def call_arguments(node: Node) -> list[Node]:
    arguments = node.child_by_field_name("arguments")
    return [child for child in arguments.named_children if child.type != "comment"] if arguments is not None else []


def calls_within(node: Node) -> Iterator[Node]:
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type == "call_expression":
            yield current
        stack.extend(reversed(current.named_children))


def block_statements(node: Node) -> Iterator[Node]:
    """The statements of a block, those under preprocessor conditionals among them, in order."""
    for child in node.named_children:
        if child.type in _PREPROC:
            yield from block_statements(child)
        elif child.type not in ("comment", "preproc_defined", "identifier", "binary_expression", "preproc_call"):
            yield child


def returned_literal(node: Node) -> int | None:
    """1 or 0 for a branch that only returns `true` or `false`; None otherwise."""
    statements = list(block_statements(node)) if node.type == "compound_statement" else [node]
    if len(statements) != 1 or statements[0].type != "return_statement":
        return None
    value = [c for c in statements[0].named_children if c.type != "comment"]
    if len(value) == 1 and value[0].type in ("true", "false"):
        return 1 if value[0].type == "true" else 0
    return None


def function_pointers(body: Node) -> dict[str, str]:
    """Locals bound to a function (`auto launch = &run_mha_bwd;`): calls through them call it."""
    found: dict[str, str] = {}
    stack = [body]
    while stack:
        current = stack.pop()
        if current.type == "init_declarator":
            target, value = current.child_by_field_name("declarator"), current.child_by_field_name("value")
            if target is not None and value is not None and target.type == "identifier" and value.type == "pointer_expression":
                operand = value.child_by_field_name("argument")
                if operand is not None and operand.type in ("identifier", "qualified_identifier") and text(value).startswith("&"):
                    found[text(target)] = text(operand).rpartition("::")[2]
        stack.extend(current.named_children)
    return found
