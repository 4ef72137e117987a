"""CMake facts: a build list parsed with tree-sitter's CMake grammar into plain commands and blocks.

Nothing is evaluated here: arguments are kept as written (quotes and brackets removed), so the
same facts serve every toolkit and target the build is later read for (lang/cmake)."""

from __future__ import annotations

import hashlib
from functools import lru_cache

import tree_sitter
import tree_sitter_cmake

from archlint.extract.suppressions import parse_suppression_text
from archlint.model.build import CMakeArg, CMakeBlock, CMakeClause, CMakeCommand, CMakeFacts, CMakeStatement
from archlint.model.findings import Diagnostic, Suppression

# grammar node -> the block kind it is, and the node types of its arms' opening commands
_BLOCKS = {
    "if_condition": "if",
    "foreach_loop": "foreach",
    "while_loop": "while",
    "function_def": "function",
    "macro_def": "macro",
    "block_def": "block",
}
_HEADS = {"if_command", "elseif_command", "else_command", "foreach_command", "while_command",
          "function_command", "macro_command", "block_command"}
_ENDS = {"endif_command", "endforeach_command", "endwhile_command", "endfunction_command",
         "endmacro_command", "endblock_command"}
_MAX_DEPTH = 200


@lru_cache(maxsize=1)
def _parser() -> tree_sitter.Parser:
    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_cmake.language()))


def extract_cmake(path: str, data: bytes) -> CMakeFacts:
    sha = hashlib.sha256(data).hexdigest()
    tree = _parser().parse(data)
    notes: list[Diagnostic] = []
    statements = _statements(tree.root_node, 0, notes)
    if tree.root_node.has_error:
        line = _first_error_line(tree.root_node)
        notes.append(Diagnostic(path, "CMake syntax error: the commands around it may be missing from the build lists read",
                                line, rule="AL902"))
    suppressions = _suppressions(tree.root_node) if b"archlint:" in data else ()
    return CMakeFacts(path, sha, tuple(statements), tuple(notes), suppressions)


def _suppressions(root: tree_sitter.Node) -> tuple[Suppression, ...]:
    """`# archlint: ignore[AL101]` in CMake comments: on its own line it covers the next command,
    after a command the line it ends."""
    comments, starts, ends = [], set(), set()
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type in ("line_comment", "bracket_comment"):
            comments.append(node)
        elif node.type in ("normal_command", *_HEADS):
            starts.add(node.start_point[0] + 1)
            ends.add(node.end_point[0] + 1)
        stack.extend(node.children)
    found = []
    for comment in comments:
        parsed = parse_suppression_text(_text(comment))
        if parsed is None:
            continue
        ids, file_level = parsed
        line = comment.start_point[0] + 1
        trailing = line in ends or line in starts
        covered = line if trailing else min((s for s in starts if s > line), default=line)
        found.append(Suppression(covered, ids, file_level, line))
    return tuple(sorted(found, key=lambda s: (s.comment_line, s.line)))


def _statements(node: tree_sitter.Node, depth: int, notes: list[Diagnostic]) -> list[CMakeStatement]:
    out: list[CMakeStatement] = []
    if depth > _MAX_DEPTH:
        return out
    for child in node.named_children:
        if child.type == "normal_command":
            out.append(_command(child))
        elif child.type in _BLOCKS:
            out.append(_block(child, depth, notes))
    return out


def _block(node: tree_sitter.Node, depth: int, notes: list[Diagnostic]) -> CMakeBlock:
    """The arms of a block: each opening command with the `body` node that follows it."""
    clauses: list[CMakeClause] = []
    head: CMakeCommand | None = None
    body: list[CMakeStatement] = []
    for child in node.named_children:
        if child.type in _HEADS:
            if head is not None:
                clauses.append(CMakeClause(head, tuple(body)))
            head, body = _command(child), []
        elif child.type == "body":
            body.extend(_statements(child, depth + 1, notes))
        elif child.type in _ENDS:
            break
    if head is not None:
        clauses.append(CMakeClause(head, tuple(body)))
    return CMakeBlock(_BLOCKS[node.type], tuple(clauses))


def _command(node: tree_sitter.Node) -> CMakeCommand:
    name = ""
    args: list[CMakeArg] = []
    for child in node.children:
        if child.type == "identifier" or (not name and child.type in ("if", "elseif", "else", "foreach", "while",
                                                                       "function", "macro", "block")):
            name = _text(child)
        elif child.type == "argument_list":
            args.extend(_arguments(child))
    start, end = node.start_point, node.end_point
    return CMakeCommand(name, tuple(args), start[0] + 1, start[1] + 1, end[0] + 1, end[1] + 1)


def _arguments(node: tree_sitter.Node) -> list[CMakeArg]:
    out = []
    for child in node.named_children:
        if child.type != "argument" or not child.named_children:
            continue
        inner = child.named_children[0]
        text = _text(inner)
        if inner.type == "quoted_argument":
            out.append(CMakeArg(text[1:-1] if text.startswith('"') and text.endswith('"') else text, "quoted"))
        elif inner.type == "bracket_argument":
            out.append(CMakeArg(_unbracket(text), "bracket"))
        else:
            out.append(CMakeArg(text, "unquoted"))
    return out


def _unbracket(text: str) -> str:
    """`[==[ text ]==]` -> ` text `; a first newline right after the opening is dropped, as CMake does."""
    opening = text.find("[", 1) + 1
    inner = text[opening: len(text) - opening]
    return inner[1:] if inner.startswith("\n") else inner


def _text(node: tree_sitter.Node) -> str:
    return (node.text or b"").decode("utf-8", "replace")


def _first_error_line(node: tree_sitter.Node) -> int:
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type == "ERROR" or current.is_missing:
            return current.start_point[0] + 1
        stack.extend(reversed(current.children))
    return 1
