"""PTX mnemonic extraction from inline-assembly text.

`opcodes()` takes the string content of an `asm(...)` statement (literals already concatenated)
and returns each instruction's opcode with its dotted modifiers, in order. `asm_strings()` is a
light lexer that finds those contents in C/C++ source; the census (`python -m archlint.lang.cpp.ptx DIR...`)
uses it to count which opcodes a tree holds and which knowledge-base row covers each.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path

from archlint.knowledge.kb import load_kb

__all__ = ["PtxError", "opcodes", "asm_strings", "census"]


class PtxError(ValueError):
    """The input is not text that could hold PTX."""


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "v": "\v", "f": "\f", "a": "", "b": "", "0": ""}
_ESCAPE_RE = re.compile(r"\\(.)", re.DOTALL)
_BLOCK_COMMENT_RE = re.compile(r"/\*.*?(?:\*/|\Z)", re.DOTALL)
_LINE_COMMENT_RE = re.compile(r"//[^\n]*")
_LABEL_RE = re.compile(r"[A-Za-z_$%][\w$%=]*:(?!:)")
_GUARD_RE = re.compile(r"@!?%?[\w$%=]+")
_OPCODE_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+(?:::[A-Za-z0-9_]+)*)*")


def opcodes(asm_text: str) -> list[str]:
    """Opcodes with modifiers of every instruction in `asm_text`, in order.

    Only `;` ends an instruction: operand lists may span lines (CUTLASS writes
    `"{%0, %1},\\n"` in the middle of an mma), so newlines are plain whitespace once comments
    are gone. Directives (`.reg`, `.pred`), labels, braces and predicate guards yield nothing.
    """
    if not isinstance(asm_text, str):
        raise PtxError(f"inline assembly must be text, not {type(asm_text).__name__}")
    text = _strip_comments(_unescape(asm_text))
    found = []
    for statement in text.split(";"):
        opcode = _statement_opcode(statement)
        if opcode:
            found.append(opcode)
    return found


def _unescape(text: str) -> str:
    return _ESCAPE_RE.sub(lambda m: _ESCAPES.get(m.group(1), m.group(1)), text)


def _strip_comments(text: str) -> str:
    text = _BLOCK_COMMENT_RE.sub(" ", text)
    return _LINE_COMMENT_RE.sub(" ", text)


def _statement_opcode(statement: str) -> str:
    rest = statement.strip()
    while rest:
        if rest[0] in "{}":
            rest = rest[1:].lstrip()
            continue
        prefix = _LABEL_RE.match(rest) or _GUARD_RE.match(rest)
        if prefix:
            rest = rest[prefix.end():].lstrip()
            continue
        break
    if not rest or rest[0] == ".":
        return ""  # empty, or a directive such as `.reg .b32 r`
    match = _OPCODE_RE.match(rest)
    if not match:
        return ""
    end = match.end()
    if end < len(rest) and not (rest[end].isspace() or rest[end] in "{["):
        return ""  # `%0,` or `a+b`: not an instruction
    return match.group(0)


# ---------------------------------------------------------------- inline asm in C/C++ source

_ASM_RE = re.compile(r"\b(?:asm|__asm__|__asm)\b\s*(?:(?:volatile|__volatile__|goto|inline)\b\s*)*\(")
_STRING_RE = re.compile(r'(?:u8|u|U|L)?"((?:[^"\\\n]|\\.)*)"', re.DOTALL)
_RAW_RE = re.compile(r'(?:u8|u|U|L)?R"([^()\\\s]{0,16})\(')
_GAP_RE = re.compile(r"(?:\s+|//[^\n]*|/\*.*?\*/|^[ \t]*#[^\n]*)+", re.DOTALL | re.MULTILINE)


def asm_strings(source: str) -> list[tuple[int, str]]:
    """(line, concatenated string content) of each `asm(...)` statement in C/C++ `source`.

    A lexer, not a parser: it follows adjacent string literals (plain and raw) after `asm (`,
    skipping comments and preprocessor lines between them. Statements whose template is a
    macro or expression yield the literal part only, or nothing.
    """
    found = []
    for match in _ASM_RE.finditer(source):
        line = source.count("\n", 0, match.start()) + 1
        text = _literals_from(source, match.end())
        if text:
            found.append((line, text))
    return found


def _literals_from(source: str, pos: int) -> str:
    parts = []
    while True:
        gap = _GAP_RE.match(source, pos)
        if gap:
            pos = gap.end()
        raw = _RAW_RE.match(source, pos)
        if raw:
            close = source.find(")" + raw.group(1) + '"', raw.end())
            if close < 0:
                break
            parts.append(raw_literal(source[raw.end():close]))
            pos = close + len(raw.group(1)) + 2
            continue
        literal = _STRING_RE.match(source, pos)
        if not literal:
            break
        parts.append(literal.group(1))
        pos = literal.end()
    return "".join(parts)


def raw_literal(body: str) -> str:
    """A raw string's body, escaped so that `opcodes()` reads it back unchanged."""
    return body.replace("\\", "\\\\")


# ---------------------------------------------------------------- census

_CUDA_SUFFIXES = {".cu", ".cuh", ".h", ".hh", ".hpp", ".hxx", ".inl", ".cc", ".cpp", ".cxx", ".cuinl"}


def census(roots: list[Path]) -> tuple[Counter, int, int]:
    """(opcode -> occurrences, asm statements, files with asm) over the C/C++ files under `roots`."""
    counts: Counter = Counter()
    statements = files = 0
    for path in _source_files(roots):
        text = path.read_text(encoding="utf-8", errors="replace")
        blocks = asm_strings(text)
        if blocks:
            files += 1
        statements += len(blocks)
        for _, asm in blocks:
            counts.update(opcodes(asm))
    return counts, statements, files


def _source_files(roots: list[Path]):
    for root in roots:
        candidates = [root] if root.is_file() else sorted(root.rglob("*"))
        for path in candidates:
            if path.suffix in _CUDA_SUFFIXES and path.is_file() and not path.is_symlink():
                yield path


def main(argv: list[str] | None = None) -> int:
    """Print the census: one `count<TAB>opcode<TAB>kb-row` line per distinct opcode."""
    roots = [Path(arg) for arg in (argv if argv is not None else sys.argv[1:])]
    if not roots:
        print("usage: python -m archlint.lang.cpp.ptx DIR...", file=sys.stderr)
        return 2
    counts, statements, files = census(roots)
    kb = load_kb()
    print(f"# {files} files with inline asm, {statements} asm statements, "
          f"{sum(counts.values())} instructions, {len(counts)} distinct opcodes")
    for opcode, count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        row = kb.match_ptx(opcode)
        print(f"{count}\t{opcode}\t{row.id if row else '-'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
