"""CUTLASS tiles written in C++, read without compiling: CuTe shapes of three literal extents
(`Shape<_128, _128, _128>`, `cute::Shape<cute::Int<128>, ...>`) in a launcher that defines its
kernel type (the alias of rules/kb/cutlass.toml `[cxx]`), and a kernel template's loops over tile
extents (`{% for tile_n in [32, 64, 128] %}`), crossed. A shape an alias passes to a config
template (`using Tactic128x64x128Config = Config<Shape<_128, _64, _128>, true, ...>`) is one
tactic per alias; a shape in the launcher's body is the tile of every instantiation the units make.
"""

from __future__ import annotations

import ast
import re
from itertools import product

from archlint.knowledge.cutlass import CutlassKnowledge, load_cutlass
from archlint.lang.cpp.directives import mask_comments
from archlint.model.tactics import TacticChoice, TileListFact, TileRow

_EXTENT = r"\s*(?:cute::)?(?:_(\d+)|Int\s*<\s*(\d+)\s*>)\s*"
_SHAPE = re.compile(r"(?<![\w])(?:cute::)?Shape\s*<" + ",".join([_EXTENT] * 3) + r">")
_ALIAS = re.compile(r"using\s+(\w+)\s*=\s*([^;]*);")
_LOOP = re.compile(r"\{%-?\s*for\s+(\w+)\s+in\s+(\[[^\]]*\])\s*-?%\}")


def cxx_tile_lists(path: str, data: bytes, knowledge: CutlassKnowledge | None = None) -> tuple[TileListFact, ...]:
    cxx = (knowledge or load_cutlass()).cxx
    if not cxx.kernel_alias:
        return ()
    text = mask_comments(data).decode("utf-8", "replace")
    if "{%" in text:
        return _loops(path, text, cxx)
    if b"Shape" not in data or re.search(cxx.kernel_alias, text) is None:
        return ()
    return _shapes(path, text, cxx)


def launcher_arch(data: bytes, knowledge: CutlassKnowledge | None = None) -> int | None:
    """The SM a launcher builds its kernel for: the one architecture tag it names, None for none or several."""
    cxx = (knowledge or load_cutlass()).cxx
    found = {int(m.group(1)) for m in re.finditer(cxx.arch_tag, mask_comments(data).decode("utf-8", "replace"))} if cxx.arch_tag else set()
    return found.pop() if len(found) == 1 else None


def _shapes(path: str, text: str, cxx) -> tuple[TileListFact, ...]:
    body: list[TileRow] = []
    aliases: list[tuple[str, TileRow]] = []
    seen: set[tuple[int, int, int]] = set()
    for alias in _ALIAS.finditer(text):
        name, value = alias.group(1), alias.group(2)
        shape = _SHAPE.search(value)
        if shape is None or (cxx.not_tile and re.search(cxx.not_tile, name)):
            continue
        m, n, k = (int(shape.group(2 * i + 1) or shape.group(2 * i + 2)) for i in range(3))
        if min(m, n, k) < cxx.min_extent:
            continue
        start = alias.start(2) + shape.start()
        row = TileRow(m, n, k, text.count("\n", 0, start) + 1, start - text.rfind("\n", 0, start))
        if value.lstrip().startswith(("Shape", "cute::Shape")):
            if (m, n, k) not in seen:  # the body's tile: its instantiations tell the variants apart
                seen.add((m, n, k))
                body.append(row)
        else:
            aliases.append((name, row))
    out = []
    if body:
        out.append(TileListFact(path, "", "CuTe tile shape", body[0].line, body[0].col, tuple(body),
                                tuple(TacticChoice(i, ()) for i in range(len(body))), None, None, kind="cute"))
    if aliases:
        rows = tuple(row for _, row in aliases)
        out.append(TileListFact(path, "", "tactic aliases", rows[0].line, rows[0].col, rows,
                                tuple(TacticChoice(i, (("config", name),)) for i, (name, _) in enumerate(aliases)),
                                None, None, kind="alias"))
    return tuple(out)


def _loops(path: str, text: str, cxx) -> tuple[TileListFact, ...]:
    """A template's loops over the tile's M, N and K, crossed (the other loops vary the tactic, and
    the probe tells those apart)."""
    extents: dict[str, tuple[list[int], int, int]] = {}
    for loop in _LOOP.finditer(text):
        role = cxx.loop_role(loop.group(1))
        if not role or role in extents:
            continue
        try:
            values = ast.literal_eval(loop.group(2))
        except (SyntaxError, ValueError):
            continue
        if isinstance(values, list) and values and all(isinstance(v, int) for v in values):
            start = loop.start()
            extents[role] = (values, text.count("\n", 0, start) + 1, start - text.rfind("\n", 0, start))
    if set(extents) != {"m", "n", "k"}:
        return ()
    line, col = min((where[1], where[2]) for where in extents.values())
    rows = tuple(TileRow(m, n, k, line, col) for m, n, k in product(extents["m"][0], extents["n"][0], extents["k"][0]))
    return (TileListFact(path, "", "template loops", line, col, rows, tuple(TacticChoice(i, ()) for i in range(len(rows))),
                         None, None, kind="loops"),)
