"""Import statements as facts: what `import a.b as c` and `from ..x import y as z, *` bind.

Each becomes a `PyImport` (module, names, aliases, relative level, line, enclosing function), from
which `link` builds every module's scope. It is its own module because reading an import needs
nothing of the walk but the node and the function it is in.
"""

from __future__ import annotations

from archlint.lang.python.expr import node_text
from archlint.model import python as pf


def plain_imports(node, function: str) -> list[pf.PyImport]:
    """`import a.b, c as d`: one import per module it names, bound to its alias or top name."""
    found = []
    line = node.start_point[0] + 1
    for child in node.named_children:
        if child.type == "aliased_import":
            module = node_text(child.child_by_field_name("name"))
            alias = node_text(child.child_by_field_name("alias"))
        elif child.type == "dotted_name":
            module = node_text(child)
            alias = module.split(".")[0]
        else:
            continue
        found.append(pf.PyImport(module, (), (alias,), 0, line, function))
    return found


def from_import(node, function: str) -> pf.PyImport:
    """`from ..pkg import a, b as c` (or `import *`): the module, its level, the names and aliases."""
    module_node = node.child_by_field_name("module_name")
    level, module = 0, ""
    if module_node is not None:
        text = node_text(module_node)
        level = len(text) - len(text.lstrip("."))
        module = text.lstrip(".")
    names, aliases = [], []
    for child in node.children_by_field_name("name"):
        if child.type == "aliased_import":
            names.append(node_text(child.child_by_field_name("name")))
            aliases.append(node_text(child.child_by_field_name("alias")))
        else:
            names.append(node_text(child))
            aliases.append(node_text(child).split(".")[-1])
    if any(child.type == "wildcard_import" for child in node.named_children):
        names, aliases = ["*"], ["*"]
    line = node.start_point[0] + 1
    return pf.PyImport(module, tuple(names), tuple(aliases), level, line, function)
