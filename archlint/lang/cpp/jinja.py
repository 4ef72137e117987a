"""Jinja templates of CUDA sources, read as the C++ they render to.

A JIT renders `x_config.jinja` into `x_config.inc` and kernel-instance templates into `.cu` files
before it compiles them. archlint reads the template in their place with the template syntax
stubbed out, keeping every offset:

* `{{ expr }}` inside a line of C++ stands for a value (a type, a number, a name): it becomes an
  identifier of the same length, which no arch test can decide on (so it never selects a branch);
* `{{ expr }}` alone on its line, on a preprocessor line (a macro body, a condition, an include),
  or right before `(` (a function named at render time) stands for code archlint cannot see: a
  `TemplateHole` of kind 'code', which keeps every verdict on the including units UNKNOWN;
* `template __global__ void {{ name }}<...>(...)` instantiates a kernel named at render time: a hole
  of kind 'kernel', for which every kernel the unit includes counts as compiled;
* `{% ... %}` and `{# ... #}` become blanks: both arms of an `if` and one pass of a `for` body are
  read, a superset of what any rendering compiles.
"""

from __future__ import annotations

import re

from archlint.model.cuda import TemplateHole

_TAG = re.compile(rb"\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}", re.S)
_GLOBAL = re.compile(rb"\b__global__\b")
_NAME = re.compile(rb"[A-Za-z_][A-Za-z0-9_.]*")


def stub_template(data: bytes) -> tuple[bytes, tuple[TemplateHole, ...]]:
    """The template as C++ with every tag replaced, and the placeholders that are not plain values."""
    out = bytearray(data)
    holes: list[TemplateHole] = []
    for match in _TAG.finditer(data):
        start, end = match.span()
        if data.startswith(b"{{", start):
            kind = _kind(data, start, end)
            if kind != "value":
                holes.append(TemplateHole(data.count(b"\n", 0, start) + 1, _expression(match.group()), kind))
            out[start:end] = _identifier(end - start, match.group())
        else:
            out[start:end] = bytes(b if b == 0x0A else 0x20 for b in match.group())
    return bytes(out), tuple(holes)


def _expression(tag: bytes) -> str:
    return tag[2:-2].strip().decode("utf-8", "replace")


def _identifier(width: int, tag: bytes) -> bytes:
    """`__jinja` plus the placeholder's first name, cut or padded to the tag's width (newlines kept)."""
    if b"\n" in tag:
        return bytes(b if b == 0x0A else 0x20 for b in tag)
    found = _NAME.search(tag)
    word = b"__jinja_" + (found.group().replace(b".", b"_") if found else b"")
    if width < 4:
        return b"_" * width
    return word[:width].ljust(width)


def _kind(data: bytes, start: int, end: int) -> str:
    line_start = data.rfind(b"\n", 0, start) + 1
    line_end = data.find(b"\n", end)
    line_end = len(data) if line_end < 0 else line_end
    before, after = data[line_start:start], data[end:line_end].strip()
    if before.strip() == b"" and after in (b"", b"\\"):
        return "code"
    if before.lstrip().startswith(b"#"):
        return "code"
    if _GLOBAL.search(before) and after.startswith((b"<", b"(")):
        return "kernel"
    return "code" if after.startswith(b"(") else "value"
