"""Logical lines: the lines one Python statement spans, as the language counts them.

A simple statement is one logical line however many physical lines its brackets take
(`flags = get_nvcc_flags_list(\\n    supported_major_versions=[9, 10]\\n)`); a compound
statement's header runs from its keyword to the `:` before its body (`def f(a,\\n      b):`), and
each clause (`elif`, `except`, `case`, ...) and each decorator is a logical line of its own. What
a comment on any of those lines says is said of the whole logical line.
"""

from __future__ import annotations

import bisect

# Nodes whose header is a logical line and whose blocks hold more statements.
_COMPOUND = frozenset("""if_statement for_statement while_statement try_statement with_statement
    function_definition class_definition match_statement elif_clause else_clause except_clause
    except_group_clause finally_clause case_clause""".split())
# Nodes that only hold statements, clauses or decorators.
_CONTAINERS = frozenset({"module", "block", "decorated_definition", "ERROR"})

Span = tuple[int, int]  # first and last line, 1-based


def logical_lines(root) -> list[Span]:
    """Every logical line of a syntax tree, sorted by first line."""
    spans: list[Span] = []
    stack = [root]
    while stack:
        node = stack.pop()
        kind = node.type
        if kind in _CONTAINERS:
            stack.extend(child for child in node.named_children if child.type != "comment")
        elif kind in _COMPOUND:
            spans.append((node.start_point[0] + 1, _header_end(node) + 1))
            stack.extend(child for child in node.named_children if child.type in _COMPOUND or child.type in _CONTAINERS)
        else:
            spans.append((node.start_point[0] + 1, node.end_point[0] + 1))
    spans.sort()
    return spans


def _header_end(node) -> int:
    """The row of the `:` that opens a compound statement's first block (its first row if none)."""
    colon = node.start_point[0]
    for child in node.children:
        if child.type == "block":
            break
        if child.type == ":":
            colon = child.start_point[0]
    return colon


def line_span(spans: list[Span], line: int, own_line: bool) -> Span:
    """The lines a comment on `line` speaks for: every logical line that holds it (the union, as a
    one-line `if x: y(...)` puts two on one line); a comment on a line of its own between
    statements speaks for the next one; else only its own line."""
    after = bisect.bisect_left(spans, (line + 1,))  # the first logical line starting below it
    holding = [span for span in spans[:after] if span[1] >= line]
    if holding:
        return min(span[0] for span in holding), max(span[1] for span in holding)
    if own_line and after < len(spans):
        return spans[after]
    return line, line
