"""The C++ a build-time generator script writes, read from its module-level string constants.

vLLM's CMake build runs `csrc/quantization/marlin/generate_kernels.py` (and machete's `generate.py`)
before it globs the `.cu` files the script writes. The script's templates are string constants:

    FILE_HEAD = FILE_HEAD_COMMENT + '''#include "kernel.h"\n#include "marlin_template.h"\n...'''
    TEMPLATE = ("template __global__ void Marlin<" "{{a_type_id}}, " ... ">( MARLIN_KERNEL_PARAMS );")

Each constant that holds an `#include` line or an explicit instantiation is C++ the generated units
are made of, with Jinja placeholders where the script fills in values. The script is never run:
constants are read from literals, implicit concatenation, `+` of constants read before, and
`.strip()`/`.lstrip()`; anything else is left out (the units then hold less, never more).
"""

from __future__ import annotations

import re

from archlint.extract.python.queries import language
from archlint.lang.python.expr import node_text, string_value

import tree_sitter

_CXX_RE = re.compile(r'^\s*#\s*include\s*["<]|^\s*template\s+(?:__global__\s+)?\w[^\n]*<', re.M)
_STRIPS = frozenset({"strip", "lstrip", "rstrip"})


def generator_templates(data: bytes) -> tuple[str, ...]:
    """The module-level string constants of a generator script that hold C++, in file order."""
    tree = tree_sitter.Parser(language()).parse(data)
    constants: dict[str, str] = {}
    found: list[str] = []
    for statement in tree.root_node.named_children:
        node = statement.named_children[0] if statement.type == "expression_statement" and statement.named_children else None
        if node is None or node.type != "assignment":
            continue
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        if left is None or right is None or left.type != "identifier":
            continue
        value = _value(right, constants)
        if value is None:
            continue
        constants[node_text(left)] = value
        if _CXX_RE.search(value):
            found.append(value)
    return tuple(found)


def _value(node, constants: dict[str, str]) -> str | None:
    """A string expression's value from literals and the constants read so far, else None."""
    if node.type in ("string", "concatenated_string"):
        return string_value(node)
    if node.type == "parenthesized_expression" and node.named_children:
        return _value(node.named_children[0], constants)
    if node.type == "identifier":
        return constants.get(node_text(node))
    if node.type == "binary_operator" and node_text(node.child_by_field_name("operator")) == "+":
        left = _value(node.child_by_field_name("left"), constants)
        right = _value(node.child_by_field_name("right"), constants)
        return left + right if left is not None and right is not None else None
    if node.type == "call":
        function, arguments = node.child_by_field_name("function"), node.child_by_field_name("arguments")
        if (function is not None and function.type == "attribute" and arguments is not None and not arguments.named_children
                and node_text(function.child_by_field_name("attribute")) in _STRIPS):
            owner = _value(function.child_by_field_name("object"), constants)
            method = node_text(function.child_by_field_name("attribute"))
            return None if owner is None else getattr(owner, method)()
    return None


_TAGS_RE = re.compile(r"\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}", re.S)


def unit_text(templates: tuple[str, ...]) -> str:
    """One unit from a script's templates: each in turn, with the braces a file head leaves open (a
    `namespace x {` the script closes when it writes the file) closed at the end."""
    text = "\n".join(templates)
    code = _TAGS_RE.sub("", text)
    return text + "\n" + "}\n" * max(0, code.count("{") - code.count("}"))
