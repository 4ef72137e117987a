"""What the Python walk asks tree-sitter's query engine (in C) instead of visiting node by node:
which subtrees hold anything the walk records, and the calls and nested scopes of a module."""

from __future__ import annotations

import bisect
import re
from functools import lru_cache

import tree_sitter
import tree_sitter_python

from archlint.lang.python.expr import dotted

MAX_CALLEES = 64
_SCOPES = frozenset({"function_definition", "class_definition", "lambda"})


@lru_cache(maxsize=1)
def language() -> tree_sitter.Language:
    return tree_sitter.Language(tree_sitter_python.language())


_STRINGS = frozenset({"string", "concatenated_string"})
# A string literal can name a source or a target, or hold an interpolation, only if it spells one of these.
_MAY_RECORD = re.compile(rb"[0-9.\\{]")


@lru_cache(maxsize=4)
def _interesting_query(kinds: frozenset[str]) -> tree_sitter.Query:
    """Captures: `call`, `scope` (definitions), `lambda`, `string` (literals) and `node` (the other
    kinds): every one but `lambda` is a node the walk records."""
    rest = sorted((kinds | {"ERROR"}) - {"module", "call", "lambda", *_SCOPES} - _STRINGS)
    patterns = ["(call) @call", "[(function_definition) (class_definition)] @scope", "(lambda) @lambda",
                "[" + " ".join(f"({kind})" for kind in rest) + "] @node"]
    strings = sorted(kinds & _STRINGS)
    if strings:
        patterns.append("[" + " ".join(f"({kind})" for kind in strings) + "] @string")
    return tree_sitter.Query(language(), " ".join(patterns))


class Interesting:
    """Which subtrees hold a node the walk records (a handled kind, a statement, a parse error):
    found by one tree-sitter query, so the walk skips the rest (most identifiers, attributes and
    operators) without visiting them node by node. A string literal counts only when its text
    could name a source or a target or holds an interpolation: the walk records nothing from the
    others and does not look inside them. The same query finds the module's calls and scopes
    (`calls`)."""

    def __init__(self, root, kinds: frozenset[str]) -> None:
        captured = tree_sitter.QueryCursor(_interesting_query(kinds)).captures(root)
        calls, scopes = captured.get("call", []), captured.get("scope", [])
        spans = [(node.start_byte, node.end_byte) for node in captured.get("node", [])]
        spans += [(node.start_byte, node.end_byte) for node in captured.get("string", [])
                  if _MAY_RECORD.search(node.text or b"")]
        if "call" in kinds:
            spans += [(node.start_byte, node.end_byte) for node in calls]
        spans += [(node.start_byte, node.end_byte) for node in scopes if node.type in kinds]
        spans.sort()
        self.kinds = kinds - _STRINGS
        self.starts = [start for start, _ in spans]
        self.ends = [end for _, end in spans]
        self._calls, self._scopes = calls, scopes + captured.get("lambda", [])
        self._table: CallTable | None = None

    def holds(self, node) -> bool:
        """The node is one the walk records or has one below it (the walk inlines this test)."""
        if node.type in self.kinds or node.has_error:
            return True
        return bool(node.named_child_count) and self.holds_below(node)

    def holds_below(self, node) -> bool:
        """A node the walk records lies below this one (of another kind, with no parse error and
        named children: a leaf holds nothing but itself). A node starting strictly inside the node's
        span lies below it (tree-sitter nests spans); one starting where it starts may be an
        ancestor, so it counts only if it also ends inside."""
        start, end = node.start_byte, node.end_byte
        starts = self.starts
        index = bisect.bisect_left(starts, start)
        while index < len(starts) and starts[index] <= end:
            if starts[index] > start or self.ends[index] <= end:
                return True
            index += 1
        return False

    def calls(self) -> CallTable:
        if self._table is None:
            self._table = CallTable(self._calls, self._scopes)
        return self._table


def find_callees(node) -> tuple[str, ...]:
    """The dotted callees of the calls inside `node`, not inside a scope nested in it; at most
    MAX_CALLEES, the first met in a depth-first walk from the last child to the first."""
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


class CallTable:
    """Every call of a module with the innermost scope around it, by span: what `find_callees` reads
    from a subtree, from the nodes one tree-sitter query found. A call's dotted callee is read when
    a subtree holding it is first asked about."""

    def __init__(self, calls, scopes) -> None:
        ordered = sorted(range(len(calls)), key=lambda index: (calls[index].start_byte, calls[index].end_byte))
        self.nodes = [calls[index] for index in ordered]
        self.calls = [(node.start_byte, node.end_byte) for node in self.nodes]
        self.call_starts = [start for start, _ in self.calls]
        self.scopes = self._innermost_scopes(sorted((n.start_byte, n.end_byte) for n in scopes))
        self.names: dict[int, str] = {}

    def _innermost_scopes(self, scopes: list[tuple[int, int]]) -> list[tuple[int, int]]:
        """Per call, the span of the innermost scope around it, (-1, -1) when none. Spans nest, and
        no call starts where a scope starts (`def`, `class`, `lambda` start only a scope)."""
        found = []
        open_scopes: list[tuple[int, int]] = []
        next_scope = 0
        for call_start, _ in self.calls:
            while next_scope < len(scopes) and scopes[next_scope][0] <= call_start:
                while open_scopes and open_scopes[-1][1] <= scopes[next_scope][0]:
                    open_scopes.pop()
                open_scopes.append(scopes[next_scope])
                next_scope += 1
            while open_scopes and open_scopes[-1][1] <= call_start:
                open_scopes.pop()
            found.append(open_scopes[-1] if open_scopes else (-1, -1))
        return found

    def name(self, index: int) -> str:
        name = self.names.get(index)
        if name is None:
            name = self.names[index] = dotted(self.nodes[index].child_by_field_name("function")) or ""
        return name

    def callees(self, node) -> tuple[str, ...]:
        """What `find_callees(node)` gives: the calls inside the node, less those inside a scope
        nested in it (a call is, when the innermost scope around it lies in the node; a scope with
        the node's own span lies below it: a scope's first token, `def`, `class` or `lambda`, is its
        own). Past the cap, the first callees in find_callees' order are kept: an enclosing call
        before the calls inside it, else the later call first."""
        if node.type in _SCOPES:
            return ()
        start, end = node.start_byte, node.end_byte
        calls, scopes = self.calls, self.scopes
        kept: list[tuple[int, int, str]] = []
        for index in range(bisect.bisect_left(self.call_starts, start), bisect.bisect_right(self.call_starts, end)):
            call_start, call_end = calls[index]
            if call_end > end:
                continue
            scope_start, scope_end = scopes[index]
            if scope_start >= start and scope_end <= end:
                continue
            name = self.names.get(index)
            if name is None:
                name = self.name(index)
            if name:
                kept.append((call_start, call_end, name))
        found = {name for _, _, name in kept}
        if len(found) >= MAX_CALLEES:
            found = set()
            for _, _, name in sorted(kept, key=lambda call: (-call[1], call[0])):
                found.add(name)
                if len(found) == MAX_CALLEES:
                    break
        return tuple(sorted(found))
