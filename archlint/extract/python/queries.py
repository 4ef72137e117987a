"""What the Python walk asks tree-sitter's query engine (in C) instead of visiting node by node:
which subtrees hold anything the walk records, and the calls and nested scopes of a module."""

from __future__ import annotations

import bisect
from functools import lru_cache

import tree_sitter
import tree_sitter_python

from archlint.lang.python.expr import dotted

MAX_CALLEES = 64
_SCOPES = ("function_definition", "class_definition", "lambda")


@lru_cache(maxsize=1)
def language() -> tree_sitter.Language:
    return tree_sitter.Language(tree_sitter_python.language())


@lru_cache(maxsize=4)
def _interesting_query(kinds: frozenset[str]) -> tree_sitter.Query:
    shown = sorted((kinds | {"ERROR"}) - {"module"})
    return tree_sitter.Query(language(), "[" + " ".join(f"({kind})" for kind in shown) + "] @node")


class Interesting:
    """Which subtrees hold a node the walk records (a handled kind, a statement, a parse error):
    found by one tree-sitter query, so the walk skips the rest (most identifiers, attributes and
    operators) without visiting them node by node."""

    def __init__(self, root, kinds: frozenset[str]) -> None:
        nodes = tree_sitter.QueryCursor(_interesting_query(kinds)).captures(root).get("node", [])
        spans = sorted((node.start_byte, node.end_byte) for node in nodes)
        self.kinds = kinds
        self.starts = [start for start, _ in spans]
        self.ends = [end for _, end in spans]

    def holds(self, node) -> bool:
        """The node is one the walk records or has one below it. A node starting strictly inside the
        node's span lies below it (tree-sitter nests spans); one starting where it starts may be an
        ancestor, so it counts only if it also ends inside."""
        if node.type in self.kinds or node.has_error or node.parent is None:
            return True
        start, end = node.start_byte, node.end_byte
        index = bisect.bisect_left(self.starts, start)
        while index < len(self.starts) and self.starts[index] <= end:
            if self.starts[index] > start or self.ends[index] <= end:
                return True
            index += 1
        return False


def find_callees(node) -> tuple[str, ...]:
    found: set[str] = set()
    stack = [node]
    while stack and len(found) < MAX_CALLEES:
        current = stack.pop()
        if current.type == "call":
            name = dotted(current.child_by_field_name("function"))
            if name:
                found.add(name)
        if current.type not in ("function_definition", "class_definition", "lambda"):
            stack.extend(current.named_children)
    return tuple(sorted(found))


@lru_cache(maxsize=1)
def _calls_query() -> tree_sitter.Query:
    return tree_sitter.Query(language(), "(call) @call [(function_definition) (class_definition) (lambda)] @scope")


def root_of(node):
    while node.parent is not None:
        node = node.parent
    return node


class CallTable:
    """Every call of a module with its dotted callee, and every nested scope, by span: what
    `find_callees` reads from a subtree, found once per module by a tree-sitter query."""

    def __init__(self, root) -> None:
        captured = tree_sitter.QueryCursor(_calls_query()).captures(root)
        calls = sorted((c.start_byte, c.end_byte, dotted(c.child_by_field_name("function")) or "") for c in captured.get("call", []))
        self.call_starts = [start for start, _, _ in calls]
        self.calls = calls
        scopes = sorted((n.start_byte, n.end_byte) for n in captured.get("scope", []))
        self.scope_starts = [start for start, _ in scopes]
        self.scopes = scopes

    def callees(self, node) -> tuple[str, ...]:
        """What `find_callees(node)` gives: the calls inside the node, less those inside a scope
        nested in it. A scope with the node's own span (it or an ancestor) and a cap reached, where
        the walk's order decides what is kept, are left to the walk."""
        if node.type in _SCOPES:
            return ()
        start, end = node.start_byte, node.end_byte
        nested: list[tuple[int, int]] = []
        for index in range(bisect.bisect_left(self.scope_starts, start), bisect.bisect_right(self.scope_starts, end)):
            scope_start, scope_end = self.scopes[index]
            if scope_end <= end:
                if (scope_start, scope_end) == (start, end):
                    return find_callees(node)
                if not nested or scope_end > nested[-1][1]:
                    nested.append((scope_start, scope_end))
        outer_starts = [scope_start for scope_start, _ in nested]
        found: set[str] = set()
        for index in range(bisect.bisect_left(self.call_starts, start), bisect.bisect_right(self.call_starts, end)):
            call_start, call_end, name = self.calls[index]
            if not name or call_end > end:
                continue
            inside = bisect.bisect_right(outer_starts, call_start) - 1
            if inside >= 0 and call_end <= nested[inside][1]:
                continue
            found.add(name)
        if len(found) >= MAX_CALLEES:
            return find_callees(node)
        return tuple(sorted(found))
