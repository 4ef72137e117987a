"""What a string literal in Python code names, read off the syntax tree around it: a CUDA source
(with the path expression it sits in: `CSRC / "x.cu"`, `os.path.join(root, "x.cu")`) or an arch
string (`"sm_90a"`, `"9.0a"`, with the names near it that say what it is for)."""

from __future__ import annotations

import re

from archlint.lang.python.expr import (
    ExprBuilder,
    dotted,
    fstring_parts,
    node_text,
    short,
    string_value,
)
from archlint.model import python as pf
from archlint.model.python import PyExpr

ARCH_STRING_RE = re.compile(
    r"(?:sm|compute)_\d{2,3}[af]?\b|^\d{2,3}[af]$|^\d{1,2}\.\d[af]?(?:\+PTX)?(?:[ ;,]+\d{1,2}\.\d[af]?(?:\+PTX)?)*$"
)
STATEMENTS = frozenset(
    """expression_statement return_statement raise_statement if_statement for_statement while_statement
    try_statement with_statement assert_statement import_statement import_from_statement pass_statement
    function_definition class_definition decorated_definition delete_statement global_statement
    nonlocal_statement break_statement continue_statement match_statement""".split()
)


def same_node(a, b) -> bool:
    return b is not None and a.start_byte == b.start_byte and a.end_byte == b.end_byte and a.type == b.type


def source_ref(exprs: ExprBuilder, node, value: str, dynamic: bool, function: str, col: int,
               join_calls: tuple[str, ...]) -> pf.SourceRef:
    """The source a string names, with the `/`-chain or join call around it (its root built by
    `exprs`). `join_calls`: ends of the dotted callees that join path parts (`path.join`, `Path`)."""
    whole = _path_expression(node, join_calls)
    root, parts, root_node = _flatten_path(whole, join_calls)
    if dynamic and same_node(root_node, node):  # a bare formatted name, `f"x_{variant}.cu"`: no folder
        root, parts, root_node = "", (value,), None
    helper, position = _helper_call(whole, join_calls) if root_node is None else (None, -1)
    return pf.SourceRef(
        function,
        node.start_point[0] + 1,
        col,
        root,
        parts,
        exprs.short_text(whole),
        exprs.build(root_node) if root_node is not None else None,
        template=value.endswith(".jinja"),
        dynamic=dynamic,
        helper=exprs.build(helper) if helper is not None else None,
        helper_arg=position,
    )


def _helper_call(node, join_calls: tuple[str, ...]) -> tuple[object, int]:
    """(the call, the positional index) where a bare file name is a positional argument of a call to
    a named function (`_source(csrc_dir, "x.cu")`); (None, -1) otherwise."""
    parent = node.parent
    if parent is None or parent.type != "argument_list" or parent.parent is None or parent.parent.type != "call":
        return None, -1
    call = parent.parent
    if _is_join_call(call, join_calls) or dotted(call.child_by_field_name("function")) is None:
        return None, -1
    index = 0
    for child in parent.named_children:
        if same_node(child, node):
            return call, index
        if child.type in ("list_splat", "dictionary_splat"):
            return None, -1  # the positions after a splat are not known
        if child.type not in ("comment", "keyword_argument"):
            index += 1
    return None, -1


_COMPREHENSIONS = frozenset({"list_comprehension", "generator_expression", "set_comprehension"})


def each_source_ref(exprs: ExprBuilder, node, function: str, col: int,
                    join_calls: tuple[str, ...]) -> pf.SourceRef | None:
    """A comprehension that builds one path per element of a sequence, `[csrc / name for name in
    DEVICE_SOURCES]`: its path hangs off a root and ends in the loop variable. The reference keeps the
    root and the sequence (`each`); linking reads the file names from the sequence's elements."""
    if node.type not in _COMPREHENSIONS:
        return None
    body = node.child_by_field_name("body")
    clauses = [child for child in node.named_children if child.type == "for_in_clause"]
    if body is None or len(clauses) != 1 or any(child.type == "if_clause" for child in node.named_children):
        return None
    variable, sequence = clauses[0].child_by_field_name("left"), clauses[0].child_by_field_name("right")
    if variable is None or sequence is None or variable.type != "identifier":
        return None
    is_path = (body.type == "binary_operator" and _op(body) == "/") or (body.type == "call" and _is_join_call(body, join_calls))
    if not is_path:
        return None
    root, parts, root_node = _flatten_path(body, join_calls)
    loop_part = "{" + node_text(variable) + "}"
    if root_node is None or not parts or parts[-1] != loop_part or any("{" in part for part in parts[:-1]):
        return None
    return pf.SourceRef(function, node.start_point[0] + 1, col, root, parts, exprs.short_text(body),
                        exprs.build(root_node), dynamic=True, each=exprs.build(sequence))


def _path_expression(node, join_calls: tuple[str, ...]):
    """The whole path expression a string ends: the `/`-chain above it, or the join call around that."""
    top = node
    while top.parent is not None and top.parent.type == "binary_operator" and _op(top.parent) == "/":
        top = top.parent
    join = _enclosing_join(top, join_calls)
    return join if join is not None else top


_PROBE_METHODS = frozenset({"is_file", "exists", "is_dir", "stat"})
_PROBE_CALLS = ("path.exists", "path.isfile", "path.isdir", "os.stat")


def is_probe(node, join_calls: tuple[str, ...]) -> bool:
    """The path a string ends is only tested for existence (`(include / "tvm_ffi_utils.h").is_file()`,
    `os.path.exists(os.path.join(root, "x.cuh"))`): a marker that locates a folder, not a source."""
    whole = _path_expression(node, join_calls)
    while whole.parent is not None and whole.parent.type == "parenthesized_expression":
        whole = whole.parent
    parent = whole.parent
    if parent is None:
        return False
    if parent.type == "attribute" and same_node(parent.child_by_field_name("object"), whole):
        method = node_text(parent.child_by_field_name("attribute"))
        return method in _PROBE_METHODS and parent.parent is not None and parent.parent.type == "call"
    if parent.type == "argument_list" and parent.parent is not None and parent.parent.type == "call":
        callee = dotted(parent.parent.child_by_field_name("function")) or ""
        return callee.endswith(_PROBE_CALLS)
    return False


_TEXT_METHODS = frozenset({"removesuffix", "removeprefix", "endswith", "startswith", "replace", "split", "rsplit",
                           "strip", "rstrip", "lstrip", "partition", "rpartition", "find", "rfind", "index", "count"})


def is_text_operand(node) -> bool:
    """A string a str method edits or tests text with (`source.removesuffix("_kernel.cu")`,
    `name.endswith(".cu")`): a piece of a file name, never a file the build compiles."""
    parent = node.parent
    if parent is None or parent.type != "argument_list" or parent.parent is None or parent.parent.type != "call":
        return False
    function = parent.parent.child_by_field_name("function")
    return (function is not None and function.type == "attribute"
            and node_text(function.child_by_field_name("attribute")) in _TEXT_METHODS)


def string_context(node) -> str:
    """Names near a string: enclosing call callee, keyword, assignment target, subscript key."""
    names: list[str] = []
    current = node.parent
    hops = 0
    while current is not None and hops < 8 and current.type not in STATEMENTS:
        if current.type == "keyword_argument":
            names.append(node_text(current.child_by_field_name("name")))
        elif current.type == "call":
            names.append(dotted(current.child_by_field_name("function")) or "")
        elif current.type == "assignment":
            names.append(short(node_text(current.child_by_field_name("left"))))
        elif current.type == "pair":
            names.append("dict-key" if same_node(current.child_by_field_name("key"), node) else "dict-value")
        current, hops = current.parent, hops + 1
    return " ".join(name for name in names if name)


def is_path_expr(expr: PyExpr, path_calls: tuple[str, ...]) -> bool:
    """An assigned value that builds a file path (`/` on a path, `Path(...)`, `__file__`).
    `path_calls`: ends of the dotted callees whose value is a path."""
    stack = [expr]
    while stack:
        sub = stack.pop()
        kind = sub.kind
        if kind == "binop" and sub.text == "/" and any(a.kind in _PATH_OPERANDS for a in sub.args):
            return expr.kind in ("binop", "call", "subscript", "attr")
        if kind == "call" and sub.text.endswith(path_calls):
            return True
        if kind == "name" and sub.text == "__file__":
            return True
        if sub.args:
            stack.extend(reversed(sub.args))
    return False


_PATH_OPERANDS = frozenset({"str", "name", "call", "attr", "subscript"})


def _op(node) -> str:
    operator = node.child_by_field_name("operator")
    return node_text(operator) if operator is not None else ""


def _enclosing_join(node, join_calls: tuple[str, ...]):
    """The `os.path.join(...)` / `Path(...)` call a path string is an argument of, if any."""
    parent = node.parent
    if parent is None or parent.type != "argument_list" or parent.parent is None:
        return None
    return parent.parent if _is_join_call(parent.parent, join_calls) else None


def _is_join_call(call, join_calls: tuple[str, ...]) -> bool:
    return (dotted(call.child_by_field_name("function")) or "").endswith(join_calls)


def _flatten_path(node, join_calls: tuple[str, ...]) -> tuple[str, tuple[str, ...], object]:
    """(root text, literal parts, root node) of a '/'-chain or join call."""
    parts: list[str] = []
    while True:
        if node.type == "binary_operator" and _op(node) == "/":
            right = node.child_by_field_name("right")
            parts.append(_part(right))
            node = node.child_by_field_name("left")
        elif node.type == "parenthesized_expression" and node.named_child_count == 1:
            node = node.named_children[0]
        elif node.type == "call" and _is_join_call(node, join_calls):
            args = [child for child in node.child_by_field_name("arguments").named_children if child.type != "comment"]
            for arg in reversed(args[1:]):
                parts.append(_part(arg))
            if not args:
                return "", tuple(reversed(parts)), None
            node = args[0]
        else:
            literal = string_value(node)
            if literal is not None:
                parts.append(literal)
                return "", tuple(reversed(parts)), None
            return short(node_text(node)), tuple(reversed(parts)), node


def _part(node) -> str:
    literal = string_value(node)
    if literal is not None:
        return literal
    if node.type == "string":
        return fstring_parts(node)[0]
    return "{" + short(node_text(node)) + "}"
