"""The preprocessor structure of a C/C++/CUDA file: conditional regions, macros and includes.

Directives are line-oriented by the C standard, so they are read here by a lexer over the bytes
(comments and string literals masked first), not from tree-sitter's C++ parse: a `#if` inside an
argument list or around half a function header leaves the C++ grammar with ERROR nodes but does
not disturb this scan. Cost is linear in the file size; nesting is handled with an explicit
stack, so depth coming from the input cannot exhaust recursion.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass
from itertools import accumulate

from archlint.lang.cpp.expr import parse_condition
from archlint.model.cexpr import TRUE_EXPR, Binary, Defined, Expr, Unary
from archlint.model.cuda import Include, MacroDef, Region
from archlint.model.findings import Diagnostic

# Comments and literals, earliest match first, so `"/*"` in a string or `// /*` is not a comment.
_MASK_RE = re.compile(
    rb'//[^\n]*|/\*.*?(?:\*/|\Z)|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n]){1,4}\'', re.S
)
_DIRECTIVE_RE = re.compile(rb"^[ \t]*#[ \t]*([a-z_]+)\b", re.M)
_INCLUDE_RE = re.compile(r'^\s*(?:"([^"]+)"|<([^>]+)>)')
_DEFINE_RE = re.compile(r"^\s*([A-Za-z_]\w*)(\(([^)]*)\))?\s*(.*)$", re.S)
_CONDITIONALS = {b"if", b"ifdef", b"ifndef", b"elif", b"elifdef", b"elifndef", b"else", b"endif"}
_WANTED = _CONDITIONALS | {b"define", b"undef", b"include"}


@dataclass(frozen=True)
class Structure:
    regions: tuple[Region, ...]
    defines: tuple[MacroDef, ...]
    includes: tuple[Include, ...]
    diagnostics: tuple[Diagnostic, ...]
    line_region: tuple[int, ...]  # index = line number (1-based; slot 0 unused) -> innermost region
    masked: bytes  # the file with comments and string/char literal contents blanked (same offsets)
    line_starts: tuple[int, ...]  # byte offset of each line's start; line n starts at line_starts[n-1]
    raw: bytes = b""  # the file as read

    def line_text(self, line: int, masked: bool = False) -> bytes:
        source = self.masked if masked else self.raw
        start = self.line_starts[line - 1]
        end = self.line_starts[line] if line < len(self.line_starts) else len(source)
        return source[start:end]

    def region_at(self, line: int) -> int:
        if 0 < line < len(self.line_region):
            return self.line_region[line]
        return -1

    def line_of(self, offset: int) -> int:
        return bisect_right(self.line_starts, offset)


def macro_at(defines: tuple[MacroDef, ...], line: int) -> MacroDef | None:
    """The `#define` whose definition (continuation lines included) spans a line."""
    return next((d for d in defines if not d.undef and d.line <= line <= max(d.line, d.end_line)), None)


def mask_comments(data: bytes) -> bytes:
    """Blank comments and literal contents with spaces, keeping newlines and offsets."""

    def blank(match: re.Match) -> bytes:
        text = match.group(0)
        if text[:1] in (b'"', b"'"):
            return text[:1] + _spaces(text[1:-1]) + text[-1:]
        return _spaces(text)

    if b"/" not in data and b'"' not in data and b"'" not in data:
        return data
    return _MASK_RE.sub(blank, data)


def _spaces(text: bytes) -> bytes:
    """Every byte but newlines turned into a space."""
    if b"\n" not in text:
        return b" " * len(text)
    return b"\n".join(b" " * len(part) for part in text.split(b"\n"))


def _line_starts(data: bytes) -> tuple[int, ...]:
    return (0, *accumulate(len(line) + 1 for line in data.split(b"\n")[:-1]))


def _logical_line(data: bytes, start: int) -> tuple[str, int]:
    """The directive's text from `start`, with backslash-newline continuations joined."""
    parts, pos = [], start
    while True:
        end = data.find(b"\n", pos)
        end = len(data) if end < 0 else end
        chunk = data[pos:end]
        if chunk.rstrip(b" \t\r").endswith(b"\\") and end < len(data):
            parts.append(chunk.rstrip(b" \t\r")[:-1])
            pos = end + 1
            continue
        parts.append(chunk)
        return b" ".join(parts).decode("utf-8", "replace"), end


@dataclass
class _Open:
    """A conditional chain being read: its earlier branch conditions and the open region."""

    earlier: list[Expr]
    region: int
    parent: int


class _Builder:
    def __init__(self, path: str, data: bytes):
        self.path = path
        self.raw = data
        self.masked = mask_comments(data)
        self.starts = _line_starts(data)
        self.regions: list[dict] = []
        self.defines: list[MacroDef] = []
        self.includes: list[Include] = []
        self.diagnostics: list[Diagnostic] = []
        self.stack: list[_Open] = []

    @property
    def current(self) -> int:
        return self.stack[-1].region if self.stack else -1

    def line_of(self, offset: int) -> int:
        return bisect_right(self.starts, offset)

    def run(self) -> Structure:
        for match in _DIRECTIVE_RE.finditer(self.masked):
            keyword = match.group(1)
            if keyword not in _WANTED:
                continue
            line = self.line_of(match.start())
            text, end = _logical_line(self.masked, match.end())
            raw_text, _ = _logical_line(self.raw, match.end())
            self.directive(keyword.decode(), text.strip(), raw_text.strip(), line, self.line_of(max(end - 1, 0)))
        last = len(self.starts)
        while self.stack:
            opened = self.stack.pop()
            self.close(opened.region, last)
            self.diagnostics.append(
                Diagnostic(self.path, f"#{self.regions[opened.region]['directive']} without #endif", self.regions[opened.region]["line"])
            )
        self.mark_include_guard()
        return self.structure()

    def directive(self, keyword: str, text: str, raw_text: str, line: int, end_line: int) -> None:
        if keyword in ("if", "ifdef", "ifndef"):
            cond = _condition(keyword, text)
            parent = self.current
            index = self.open(keyword, cond, raw_text, line, parent)
            self.stack.append(_Open([cond], index, parent))
        elif keyword in ("elif", "elifdef", "elifndef", "else"):
            self.branch(keyword, text, raw_text, line)
        elif keyword == "endif":
            if not self.stack:
                self.diagnostics.append(Diagnostic(self.path, "#endif without #if", line))
                return
            self.close(self.stack.pop().region, line - 1)
        elif keyword in ("define", "undef"):
            self.define(keyword, raw_text, line, max(line, end_line))
        elif keyword == "include":
            self.include(raw_text, line)

    def branch(self, keyword: str, text: str, raw_text: str, line: int) -> None:
        if not self.stack:
            self.diagnostics.append(Diagnostic(self.path, f"#{keyword} without #if", line))
            return
        opened = self.stack[-1]
        self.close(opened.region, line - 1)
        first, *rest = opened.earlier  # a chain is opened with its `#if` condition
        negated: Expr = Unary("!", first)
        for earlier in rest:
            negated = Binary("&&", negated, Unary("!", earlier))
        own = TRUE_EXPR if keyword == "else" else _condition(keyword, text)
        cond = negated if keyword == "else" else Binary("&&", negated, own)
        opened.earlier.append(own)
        opened.region = self.open(keyword, cond, raw_text, line, opened.parent)

    def open(self, directive: str, cond: Expr, raw_text: str, line: int, parent: int) -> int:
        shown = f"#{directive} {raw_text}".strip()
        self.regions.append(
            {"parent": parent, "cond": cond, "directive": directive, "text": shown[:300], "line": line, "start": line + 1, "end": line}
        )
        return len(self.regions) - 1

    def close(self, index: int, end_line: int) -> None:
        self.regions[index]["end"] = max(end_line, self.regions[index]["start"] - 1)

    def define(self, keyword: str, raw_text: str, line: int, end_line: int) -> None:
        match = _DEFINE_RE.match(raw_text)
        if not match:
            return
        name, has_params, params, value = match.groups()
        value = re.sub(r"\s*//.*$", "", value).strip() if value else ""
        param_names = tuple(p.strip() for p in params.split(",") if p.strip()) if has_params else None
        limit = 4000 if param_names is not None else 200  # function-like bodies name kernels they launch
        self.defines.append(MacroDef(name, value[:limit], param_names, line, self.current, undef=keyword == "undef",
                                     end_line=end_line))

    def include(self, raw_text: str, line: int) -> None:
        match = _INCLUDE_RE.match(raw_text)
        if match:
            target = match.group(1) or match.group(2)
            self.includes.append(Include(target, match.group(2) is not None, line, self.current))

    def mark_include_guard(self) -> None:
        """`#ifndef X` / `#define X` around the whole file counts as always taken."""
        if not self.regions:
            return
        first = self.regions[0]
        if first["directive"] != "ifndef" or first["parent"] != -1:
            return
        guard = first["cond"].operand.name if isinstance(first["cond"], Unary) and isinstance(first["cond"].operand, Defined) else None
        defines_guard = any(d.name == guard and d.region == 0 and not d.undef for d in self.defines[:3])
        top_level_after = any(r["parent"] == -1 for r in self.regions[1:] if r["directive"] in ("elif", "else"))
        if guard and defines_guard and not top_level_after:
            first["cond"] = TRUE_EXPR
            first["guard"] = True

    def structure(self) -> Structure:
        regions = tuple(
            Region(i, r["parent"], r["cond"], r["directive"], r["text"], r["line"], r["start"], r["end"], r.get("guard", False))
            for i, r in enumerate(self.regions)
        )
        return Structure(
            regions, tuple(self.defines), tuple(self.includes), tuple(self.diagnostics),
            _line_regions(regions, len(self.starts)), self.masked, self.starts, self.raw,
        )


def _condition(keyword: str, text: str) -> Expr:
    if keyword in ("ifdef", "elifdef"):
        return Defined(text.split()[0]) if text.split() else parse_condition("")
    if keyword in ("ifndef", "elifndef"):
        return Unary("!", Defined(text.split()[0])) if text.split() else parse_condition("")
    return parse_condition(text)


def _line_regions(regions: tuple[Region, ...], line_count: int) -> tuple[int, ...]:
    table = [-1] * (line_count + 2)
    for region in regions:  # file order: a child starts after its parent, so it overwrites it
        if region.end_line >= region.start_line:
            table[region.start_line : region.end_line + 1] = [region.index] * (region.end_line - region.start_line + 1)
    return tuple(table)


def scan_directives(path: str, data: bytes) -> Structure:
    return _Builder(path, data).run()


def guard_chain(regions: tuple[Region, ...], index: int) -> tuple[Expr, ...]:
    """The conditions that must all hold for code in region `index` to be compiled, innermost first."""
    chain: list[Expr] = []
    seen = 0
    while 0 <= index < len(regions) and seen <= len(regions):
        chain.append(regions[index].cond)
        index = regions[index].parent
        seen += 1
    return tuple(chain)


def comment_spans(data: bytes):
    """Every `//` and `/* */` comment of the file, as regex matches (strings are skipped over)."""
    return (m for m in _MASK_RE.finditer(data) if m.group(0)[:2] in (b"//", b"/*"))
