"""Op registrations in host code: what `TORCH_LIBRARY*` and `PYBIND11_MODULE` blocks register.

Each `m.def("op(Tensor x) -> ()", &fn)` / `m.impl("op", torch::kCUDA, &fn)` of a registration block
becomes an `OpRegistration` (namespace, op, the function bound, the dispatch key), which
`link.ops` follows from `torch.ops.ns.op` to the C++ function. It is its own module because it
reads registration calls, not the capability checks the rest of the host reading follows.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from tree_sitter import Node

from archlint.extract.cuda.host_nodes import call_arguments, calls_within
from archlint.knowledge.host import HostKnowledge
from archlint.lang.cpp.constant import text
from archlint.model.host import OpRegistration


def op_registrations(macro: str, kind: str, declarator: Node, body: Node,
                     knowledge: HostKnowledge) -> list[OpRegistration]:
    """The ops a registration block registers (`TORCH_LIBRARY(ns, m) { m.def(...); m.impl(...); }`,
    a `PYBIND11_MODULE`); `kind`: what the knowledge says its macro registers."""
    registrations: list[OpRegistration] = []
    parameters = declarator.child_by_field_name("parameters")
    names = [text(p).strip() for p in parameters.named_children] if parameters is not None else []
    if len(names) < 2:
        return registrations
    namespace, module = names[0], names[-1]
    # `TORCH_EXTENSION_NAME`, or pasted to a suffix: `CONCAT(TORCH_EXTENSION_NAME, _cache_ops)`
    is_macro = any(re.search(rf"\b{re.escape(m)}\b", namespace) for m in knowledge.namespace_macros)
    for call in calls_within(body):
        function = call.child_by_field_name("function")
        if function is None or function.type != "field_expression":
            continue
        method = function.child_by_field_name("field")
        owner = function.child_by_field_name("argument")
        if method is None or owner is None or text(owner) != module or text(method) not in ("def", "impl"):
            continue
        arguments = call_arguments(call)
        schema = _string(arguments[0]) if arguments else None
        if schema is None:
            continue
        op = schema.split("(")[0].strip()
        bound = _bound_function(arguments[1:]) if text(method) == "impl" or len(arguments) > 1 else ""
        if kind == "pybind":
            bound = _bound_function(arguments[1:2])
        fact_kind = "pybind" if kind == "pybind" else text(method)
        keys = [text(a) for a in arguments[1:] if a.type == "qualified_identifier" and text(a).startswith("torch::k")]
        dispatch = keys[0] if keys else names[1] if kind == "impl" and len(names) > 2 else ""
        registrations.append(OpRegistration(fact_kind, macro, namespace, op, bound, call.start_point[0] + 1,
                                            call.start_point[1] + 1, is_macro, dispatch))
    return registrations


def _string(node: Node) -> str | None:
    if node.type == "string_literal":
        return "".join(text(c) for c in node.named_children if c.type == "string_content")
    if node.type == "concatenated_string":
        return "".join(_string(c) or "" for c in node.named_children if c.type == "string_literal")
    return None


def _bound_function(arguments: list[Node]) -> str:
    """The function a registration binds: the last plain name among its arguments (`&fn`,
    `TORCH_BOX(&fn)`, `torch::kCUDA, &fn`); '' for none."""
    for argument in reversed(arguments):
        names = [n for n in _identifiers(argument)]
        if argument.type == "qualified_identifier" and text(argument).startswith("torch::k"):
            continue  # a dispatch key
        if names and argument.type != "string_literal":
            return names[-1]
    return ""


def _identifiers(node: Node) -> Iterator[str]:
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type == "identifier":
            yield text(current)
        stack.extend(reversed(current.named_children))
