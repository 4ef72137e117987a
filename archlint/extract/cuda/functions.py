"""Functions of a C++/CUDA file: kernels and device functions, their spans, calls and body lines.

tree-sitter-cuda gives the definitions and call expressions. Its C++ grammar loses some kernels
in ERROR nodes (a `#if` inside a parameter list, `__cluster_dims__(...)` before the name), and
parsing multi-megabyte generated files whole is slow, so every `__global__`/`__device__`
definition it misses is recovered lexically: name, parenthesised parameters, balanced braces.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from functools import lru_cache

import tree_sitter
import tree_sitter_cuda
from tree_sitter import Node

from archlint.lang.cpp.directives import Structure
from archlint.lang.cpp.lexical import FileCalls, closing_bracket
from archlint.lang.cpp.traps import CALL_LINE_RE, TRAP_RE, false_arguments
from archlint.model.cuda import BodyLine, Function

_QUALIFIER_RE = re.compile(rb"\b(__global__|__device__|__host__)\b")
_RETURN_ONLY_RE = re.compile(rb"^\s*(?:return\s*;)?\s*$")
_NAME_RE = re.compile(rb"(~?[A-Za-z_]\w*|operator\s*\(\s*\)|operator\s*[^\s(]{1,3})\s*(?:<[^;{}()]*>)?\s*\($")


@lru_cache(maxsize=1)
def _parser() -> tree_sitter.Parser:
    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_cuda.language()))


def parse(data: bytes) -> tree_sitter.Tree:
    return _parser().parse(data)


def find_functions(data: bytes, structure: Structure, calls: FileCalls, parse_limit: int,
                   host_code: bool = False) -> tuple[list[Function], bool, tree_sitter.Tree | None]:
    """All function definitions with a CUDA qualifier, whether the C++ parse was partial, and the
    parse (None where the file was not parsed). `calls`: the file's calls, read for each body.
    `host_code`: parse a file with no CUDA qualifier too (its host functions place what it hands a
    run-time compiler)."""
    found: dict[int, Function] = {}
    covered: list[tuple[int, int]] = []
    partial = False
    tree = None
    if len(data) <= parse_limit and (host_code or _QUALIFIER_RE.search(structure.masked)):
        tree = _parser().parse(data)
        partial = tree.root_node.has_error
        for function, start, end in _tree_functions(tree.root_node, structure, calls):
            found[function.line] = function
            covered.append((start, end))
    for function in _lexical_functions(structure, calls, set(found), _Covered(covered)):
        found.setdefault(function.line, function)
    return sorted(found.values(), key=lambda f: (f.line, f.col)), partial, tree


# ------------------------------------------------------------------ tree-sitter


def _tree_functions(root, structure: Structure, calls: FileCalls):
    stack: list[tuple[Node, tuple[str, ...]]] = [(root, ())]  # (node, enclosing scope)
    while stack:
        node, scope = stack.pop()
        if node.type == "function_definition":
            function = _from_definition(node, scope, structure, calls)
            if function is not None:
                yield function, node.start_byte, node.end_byte
            continue
        child_scope = scope
        if node.type in ("namespace_definition", "struct_specifier", "class_specifier"):
            name = node.child_by_field_name("name")
            if name is not None:
                child_scope = (*scope, (name.text or b"").decode("utf-8", "replace"))
        stack.extend((child, child_scope) for child in reversed(node.children))


def _from_definition(node, scope: tuple[str, ...], structure: Structure, calls: FileCalls) -> Function | None:
    declarator = node.child_by_field_name("declarator")
    body = node.child_by_field_name("body")
    while declarator is not None and declarator.type not in ("function_declarator",):
        declarator = declarator.child_by_field_name("declarator")
    if declarator is None or body is None:
        return None
    name_node = declarator.child_by_field_name("declarator")
    if name_node is None:
        return None
    qualified = name_node.text.decode("utf-8", "replace")
    name = re.split(r"::", re.sub(r"<.*", "", qualified))[-1].strip() or qualified
    kind = _kind(structure, name_node.start_byte)
    line = name_node.start_point.row + 1
    return _function(structure, name, "::".join((*scope, qualified)), kind, line, name_node.start_point.column + 1,
                     body.start_byte, body.end_byte, calls.guarded(body.start_byte, body.end_byte), _is_template(node))


def _is_template(node) -> bool:
    parent = node.parent
    return parent is not None and parent.type == "template_declaration"


# ------------------------------------------------------------------ lexical fallback


class _Covered:
    """Byte spans of the definitions tree-sitter found, to skip their qualifiers quickly."""

    def __init__(self, spans: list[tuple[int, int]]):
        self.spans = sorted(spans)
        self.starts = [start for start, _ in self.spans]

    def __contains__(self, offset: int) -> bool:
        index = bisect_right(self.starts, offset) - 1
        return index >= 0 and self.spans[index][0] <= offset < self.spans[index][1]


def _lexical_functions(structure: Structure, calls: FileCalls, known_lines: set[int], covered: _Covered):
    masked = structure.masked
    for match in _QUALIFIER_RE.finditer(masked):
        if match.group(1) == b"__host__" or match.start() in covered:
            continue
        opening = _signature_paren(masked, match.end())
        if opening is None:
            continue
        name_match = _NAME_RE.search(masked[max(match.end(), opening - 200) : opening + 1])
        if name_match is None:
            continue
        name_offset = opening - (len(masked[max(match.end(), opening - 200) : opening + 1]) - name_match.start())
        line = structure.line_of(name_offset)
        if line in known_lines:
            continue
        body = _body_after(masked, opening)
        if body is None:
            continue
        name = re.sub(r"\s+", "", name_match.group(1).decode())
        kind = _kind(structure, name_offset)
        col = name_offset - structure.line_starts[line - 1] + 1
        known_lines.add(line)
        yield _function(structure, name, name, kind, line, col, body[0], body[1], calls.guarded(body[0], body[1]), False)


def _signature_paren(masked: bytes, start: int) -> int | None:
    """Offset of the `(` opening the parameter list after a qualifier (skips attribute calls)."""
    pos = start
    for _ in range(8):
        opening = masked.find(b"(", pos, pos + 400)
        if opening < 0 or masked.find(b";", pos, opening) >= 0 or masked.find(b"{", pos, opening) >= 0:
            return None
        before = masked[max(pos, opening - 40) : opening].rstrip()
        if before.endswith((b"__launch_bounds__", b"__cluster_dims__", b"__align__", b"__attribute__", b"alignas")):
            closing = closing_bracket(masked, opening, b"(", b")")
            if closing is None:
                return None
            pos = closing + 1
            continue
        return opening
    return None


def _body_after(masked: bytes, opening: int) -> tuple[int, int] | None:
    closing = closing_bracket(masked, opening, b"(", b")")
    if closing is None:
        return None
    brace = masked.find(b"{", closing, closing + 400)
    if brace < 0 or masked.find(b";", closing, brace) >= 0:
        return None
    end = closing_bracket(masked, brace, b"{", b"}")
    return None if end is None else (brace, end + 1)


# ------------------------------------------------------------------ shared


def _kind(structure: Structure, name_offset: int) -> str:
    """CUDA execution space from the qualifiers between the previous statement and the name."""
    masked = structure.masked
    window_start = max(masked.rfind(b";", 0, name_offset), masked.rfind(b"}", 0, name_offset), masked.rfind(b"{", 0, name_offset), name_offset - 600)
    qualifiers = set(_QUALIFIER_RE.findall(masked[window_start + 1 : name_offset]))
    if b"__global__" in qualifiers:
        return "global"
    if b"__device__" in qualifiers:
        return "host_device" if b"__host__" in qualifiers else "device"
    return "host"


def _function(structure: Structure, name: str, qualname: str, kind: str, line: int, col: int,
              body_start: int, body_end: int, calls: tuple[tuple[str, int], ...], template: bool) -> Function:
    first, last = structure.line_of(body_start), structure.line_of(max(body_start, body_end - 1))
    region = structure.region_at(line)
    body = _body_lines(structure, first, last, body_start, body_end, region)
    keep = kind == "global" or any(b.trap or b.call for b in body)
    return Function(
        name=name,
        qualname=qualname,
        kind=kind,
        line=line,
        col=col,
        end_line=last,
        region=region,
        calls=calls,
        body=body if keep else (),
        template=template,
    )


def _body_lines(structure: Structure, first: int, last: int, body_start: int, body_end: int,
                own_region: int) -> tuple[BodyLine, ...]:
    """Distinct (region, trap, call) triples of the body's code lines: what is compiled under which
    guard. `call`: a line that is one call statement under a conditional of the body, whose callee
    may be a macro that traps (told when the macro table is known)."""
    may_trap = _may_trap(structure, body_start, body_end)
    body = structure.masked[body_start + 1 : max(body_start + 1, body_end - 1)]
    seen: set[BodyLine] = set()
    with_code: set[int] = set()
    for offset, text in enumerate(body.split(b"\n")):
        line = first + offset
        region = structure.region_at(line)
        nested = region != own_region
        if region in with_code and not may_trap and not nested:
            continue
        stripped = text.strip().strip(b"{};").strip()
        if not stripped or stripped.startswith(b"#") or _RETURN_ONLY_RE.match(stripped):
            continue
        trap = may_trap and bool(TRAP_RE.search(_raw_line(structure, line)))
        call = CALL_LINE_RE.match(stripped) if nested and not trap else None
        if call is not None:
            seen.add(BodyLine(region, False, call.group(1).decode(), false_arguments(call.group(2))))
        else:
            seen.add(BodyLine(region, trap))
        if not trap:
            with_code.add(region)
    return tuple(sorted(seen, key=lambda b: (b.region, b.trap, b.call, b.false_arg)))


def _may_trap(structure: Structure, body_start: int, body_end: int) -> bool:
    """Whether a body can hold a trap line (kernels keep their body lines whatever; other functions
    only for this: a device function whose arch fallback traps makes its callers trap)."""
    raw = structure.raw[body_start:body_end]
    return b"trap" in raw or b"__brkpt" in raw or b"assert" in structure.masked[body_start:body_end]


def _raw_line(structure: Structure, line: int) -> str:
    # The masked text blanks string contents, and `asm("trap;")` is recognised by its string.
    return structure.line_text(line).decode("utf-8", "replace")
