"""Shared-memory requests whose size folds to a constant within the file.

Three shapes: static `__shared__ T name[N][M];`, the dynamic opt-in
`cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, N)`, and the third
launch parameter `<<<grid, block, N>>>`. Sizes fold through integer literals, `sizeof` of
builtin types and `constexpr`/`#define` constants of the same file; anything else stays None.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from functools import cached_property

from archlint.lang.cpp.directives import Structure
from archlint.lang.cpp.evaluate import Evaluator
from archlint.lang.cpp.expr import parse_condition
from archlint.model.cuda import SmemRequest

# `__shared__ T name[N];` after a whitespace byte that does not follow `extern` (_statics checks
# that: a pattern that starts with the literal is searched for many times faster)
_STATIC_RE = re.compile(
    rb"__shared__\s+(?:__align__\s*\(\s*\d+\s*\)\s*)?([A-Za-z_][\w:]*(?:\s*<[^;{}<>]*>)?)\s+(?:__align__\s*\(\s*\d+\s*\)\s*)?([A-Za-z_]\w*)\s*((?:\[[^\]\n;]+\]\s*)+);"
)
_ATTR_RE = re.compile(rb"cudaFuncSetAttribute\s*\(([^;]*?)cudaFuncAttributeMaxDynamicSharedMemorySize\s*,([^;]*?)\)\s*;")
_LAUNCH_RE = re.compile(rb"<<<([^;]*?)>>>")
_CONST_RE = re.compile(
    rb"\b(?:static\s+)?(?:constexpr|const)\s+(?:static\s+)?(?:unsigned\s+|signed\s+)?(?:int|long|size_t|uint32_t|int32_t|int64_t|uint64_t|auto|unsigned)\s+(?:long\s+)?([A-Za-z_]\w*)\s*=\s*([^;{}]+);"
)
_SIZEOF_RE = re.compile(r"sizeof\s*\(\s*([A-Za-z_][\w:\s]*?)\s*\)")
TYPE_SIZES = {
    "char": 1, "int8_t": 1, "uint8_t": 1, "bool": 1, "__nv_fp8_e4m3": 1, "__nv_fp8_e5m2": 1,
    "half": 2, "__half": 2, "__nv_bfloat16": 2, "nv_bfloat16": 2, "short": 2, "int16_t": 2, "uint16_t": 2,
    "half2": 4, "__half2": 4, "__nv_bfloat162": 4, "float": 4, "int": 4, "unsigned": 4, "uint32_t": 4, "int32_t": 4,
    "double": 8, "int64_t": 8, "uint64_t": 8, "long": 8, "size_t": 8, "float2": 8, "int2": 8, "uint2": 8,
    "float4": 16, "int4": 16, "uint4": 16, "double2": 16,
}


def macro_values(structure: Structure) -> Callable[[str], int | None]:
    """The integer value of each object-like macro of the file, by name (None where it has none)."""
    fold = _Folder(structure, macros_only=True)
    return lambda name: fold(name) if name in fold.constants else None


def smem_requests(structure: Structure, enclosing: Callable[[int], str]) -> list[SmemRequest]:
    masked = structure.masked
    if b"__shared__" not in masked and b"MaxDynamicSharedMemorySize" not in masked and b"<<<" not in masked:
        return []
    fold = _Folder(structure)
    found: list[SmemRequest] = []
    for match in _statics(masked):
        type_name = re.sub(rb"\s+", b"", match.group(1)).decode()
        dims = re.findall(rb"\[([^\]]+)\]", match.group(3))
        element = TYPE_SIZES.get(type_name.split("::")[-1])
        sizes = [fold(d.decode()) for d in dims]
        known = [size for size in sizes if size is not None]
        total = None if element is None or len(known) != len(sizes) else element * _product(known)
        text = f"{type_name} {match.group(2).decode()}{match.group(3).decode().strip()}"
        found.append(_request(structure, "static", total, text, match.start(2), enclosing))
    for match in _ATTR_RE.finditer(masked):
        expr = _last_argument(match.group(2).decode())
        found.append(_request(structure, "dynamic-attr", fold(expr), expr, match.start(), enclosing))
    for match in _LAUNCH_RE.finditer(masked):
        parts = _split_args(match.group(1).decode())
        if len(parts) >= 3:
            found.append(_request(structure, "launch", fold(parts[2]), parts[2], match.start(), enclosing))
    return found


_SPACE = frozenset(b" \t\n\r\f\v")


def _last_argument(text: str) -> str:
    """The size argument as written: without a macro's line continuations, and without the closing
    parentheses of calls around the attribute call (`CHECK(cudaFuncSetAttribute(k, ..., size));`)."""
    text = text.replace("\\\n", " ").replace("\\", " ").strip()
    while text.endswith(")") and text.count(")") > text.count("("):
        text = text[:-1].rstrip()
    return text


def _statics(masked: bytes) -> Iterator[re.Match[bytes]]:
    """_STATIC_RE's matches that follow a whitespace byte not preceded by `extern`: those of
    `(?<!extern)\\s__shared__...`, searched from the literal."""
    if b"__shared__" not in masked:
        return
    pos = 0
    while (match := _STATIC_RE.search(masked, pos)) is not None:
        start = match.start()
        if start and masked[start - 1] in _SPACE and masked[max(0, start - 7) : start - 1] != b"extern":
            yield match
            pos = match.end()
        else:
            pos = start + 1


def _request(structure: Structure, kind: str, nbytes: int | None, text: str, offset: int, enclosing) -> SmemRequest:
    line = structure.line_of(offset)
    col = offset - structure.line_starts[line - 1] + 1
    return SmemRequest(kind, nbytes, " ".join(text.split())[:200], line, col, structure.region_at(line), enclosing(line))


def _product(values: list[int]) -> int:
    total = 1
    for value in values:
        total *= value
    return total


def _split_args(text: str) -> list[str]:
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for char in text:
        if char in "([{<":
            depth += 1
        elif char in ")]}>":
            depth -= 1
        if char == "," and depth == 0:
            parts.append("".join(current).strip())
            current = []
        else:
            current.append(char)
    parts.append("".join(current).strip())
    return parts


class _Folder:
    """Folds a size expression with the file's own integer constants (`macros_only`: its object-like
    macros, the values a C++ evaluation takes from the preprocessor)."""

    def __init__(self, structure: Structure, macros_only: bool = False):
        self.structure = structure
        self.macros_only = macros_only
        self.cache: dict[str, int | None] = {}

    @cached_property
    def constants(self) -> dict[str, str]:
        """The file's object-like macros and integer constants, read when a size first names one."""
        constants: dict[str, str] = {}
        for define in self.structure.defines:
            if define.params is None and define.value and not define.undef:
                constants.setdefault(define.name, define.value)
        if self.macros_only:
            return constants
        for match in _CONST_RE.finditer(self.structure.masked):
            constants.setdefault(match.group(1).decode(), match.group(2).decode())
        return constants

    def __call__(self, text: str, depth: int = 0) -> int | None:
        if text in self.cache:
            return self.cache[text]
        self.cache[text] = None  # breaks cycles
        value = self._fold(text, depth)
        self.cache[text] = value
        return value

    def _fold(self, text: str, depth: int) -> int | None:
        if depth > 16 or len(text) > 300:
            return None
        expanded = _SIZEOF_RE.sub(lambda m: str(TYPE_SIZES.get(m.group(1).strip(), "sizeof_unknown")), text)
        expanded = re.sub(r"static_cast<[^<>]*>", "", expanded)
        expr = parse_condition(expanded)
        names = set(re.findall(r"\b[A-Za-z_]\w*\b", expanded))
        values: dict[str, int] = {}
        for name in names:
            if name not in self.constants:
                return None
            value = self(self.constants[name], depth + 1)
            if value is None:
                return None
            values[name] = value
        result = Evaluator(None, defines=values).value(expr)
        return result if result is None or result >= 0 else None
