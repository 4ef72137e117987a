"""Sources a JIT spec function generates from Jinja templates, traced through its Python.

FlashInfer's spec functions render a template and write the result where the build finds it:

    with open(jit_env.FLASHINFER_CSRC_DIR / "x_customize_config.jinja") as f:
        config_templ = jinja2.Template(f.read())
    config_str = config_templ.render(dtype=...)
    write_if_different(gen_directory / "x_config.inc", config_str)

A `Rendering` says that, in one function, the file named `output` is written from `template`.
The trace is local to the function and follows names through their assignments; what it cannot
follow yields no rendering, so the output stays unresolved as before (UNKNOWN, never a guess).
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from typing import NamedTuple

from archlint.knowledge.idioms import Idioms, load_idioms
from archlint.model.python import PyExpr, PythonFacts

_MAX_HOPS = 16
_HOLE = re.compile(r"\{[^{}]*\}")


@dataclass(frozen=True)
class Rendering:
    function: str  # local qualname of the spec function
    template: str  # the template's file name ('x_customize_config.jinja')
    output: str  # the written file's name, '{}' where it is formatted at run time
    arguments: tuple[tuple[str, PyExpr], ...] = ()  # what `render(...)` passes, by name; '**' for a splat not read


def output_pattern(name: str) -> str:
    """A file name with every formatted part as '{}', to compare a written name with a source reference."""
    return _HOLE.sub("{}", name)


def renderings(facts: PythonFacts, idioms: Idioms | None = None) -> tuple[Rendering, ...]:
    """Every rendering the file's functions write; writer calls come from `idioms` (the shipped
    vocabulary by default)."""
    writer_calls = (idioms or load_idioms()).writer_calls
    writes = facts.calls.having(lambda callee, _: callee.rpartition(".")[2] in writer_calls
                                or callee.endswith(".write_text"))
    if not writes:
        return ()
    assigns: dict[tuple[str, str], list[tuple[_Site, PyExpr]]] = defaultdict(list)
    for assign in facts.assigns.having(lambda targets, _function: len(targets) == 1):
        if not assign.unpack:
            assigns[(assign.function, assign.targets[0])].append((_Site(assign.line, assign.path), assign.value))
    found: list[Rendering] = []
    for call in writes:
        written = _written(call.expr, writer_calls)
        if written is None:
            continue
        path, value = written
        trace = _Trace(assigns, call.function)
        line = _Site(call.span.line, call.path)
        for template, render, at in sorted(trace.renders(value, line), key=lambda item: (item[0], item[2].line)):
            arguments = trace.arguments(render, at)
            for output in sorted(trace.names(path, line)):
                found.append(Rendering(call.function, template, output, arguments))
    return tuple(dict.fromkeys(found))


def _written(expr: PyExpr, writer_calls: frozenset[str]) -> tuple[PyExpr, PyExpr] | None:
    """(path, text) of a writer call `write_if_different(path, text)` or of `path.write_text(text)`."""
    callee, args = expr.args[0], expr.positional()
    last = expr.text.rpartition(".")[2]
    if last in writer_calls and len(args) >= 2:
        return args[0], args[1]
    if last == "write_text" and args:
        owner = _owner(callee)
        if owner is not None:
            return owner, args[0]
    return None


def _owner(callee: PyExpr) -> PyExpr | None:
    """The object a method is called on: `a.b.m` -> name `a.b`, `(expr).m` -> expr."""
    if callee.kind == "attr" and callee.args:
        return callee.args[0]
    if callee.kind == "name" and "." in callee.text:
        return PyExpr("name", callee.text.rpartition(".")[0])
    return None


class _Site(NamedTuple):
    """Where a name is read or bound: its line, and the branch conditions it runs under."""

    line: int
    path: tuple = ()

    def excludes(self, other: "_Site") -> bool:
        """The two lie in branches no run takes both of: one condition taken here, not there."""
        taken = dict(self.path)
        return any(cond in taken and taken[cond] != polarity for cond, polarity in other.path)


class _Trace:
    """Follows names back through their assignments in one function. A name may be bound in several
    branches, so every binding counts but those in a branch that excludes the read's (the `fa2` and
    `fa3` arms of one `if`), and for a file handle (`with open(p) as f`), whose reads happen inside
    its own block, only the binding nearest above the read."""

    def __init__(self, assigns: dict, function: str):
        self.assigns = assigns
        self.function = function

    def values(self, name: str, line: "_Site") -> list[tuple["_Site", PyExpr]]:
        bound = [item for item in self.assigns.get((self.function, name), []) if not line.excludes(item[0])]
        if bound and all(_is_open(value) for _, value in bound):
            before = [item for item in bound if item[0].line <= line.line]
            return [max(before, key=lambda item: item[0].line)] if before else []
        return bound

    def renders(self, expr: PyExpr, line: _Site, hops: int = 0) -> set[tuple[str, PyExpr, _Site]]:
        """(template file name, the `render(...)` call, its line) for each rendering `expr` evaluates to."""
        if hops > _MAX_HOPS:
            return set()
        if expr.kind == "name":
            return {r for at, value in self.values(expr.text, line) for r in self.renders(value, at, hops + 1)}
        if expr.kind != "call" or _method(expr) != "render":
            return set()
        owner = _owner(expr.args[0])
        return {(t, expr, line) for t in self.templates(owner, line, hops + 1)} if owner is not None else set()

    def arguments(self, render: PyExpr, line: _Site) -> tuple[tuple[str, PyExpr], ...]:
        """The names a `render(...)` call passes: its keywords, and the entries of a `**dict` literal."""
        out: list[tuple[str, PyExpr]] = []
        for arg in render.args[1:]:
            if arg.kind == "kw":
                out.append((arg.text, arg.args[0]))
            elif arg.kind == "splat" and arg.text.startswith("**"):
                bound = self.values(arg.text[2:].strip(), line)
                if len(bound) == 1 and bound[0][1].kind == "dict":
                    out.extend((item.text, item.args[0]) for item in bound[0][1].args)
                else:
                    out.append(("**", arg))
            else:
                out.append(("**", arg))
        return tuple(out)

    def templates(self, expr: PyExpr, line: _Site, hops: int = 0) -> set[str]:
        """Template file names a `Template` object comes from."""
        if hops > _MAX_HOPS:
            return set()
        if expr.kind == "name":
            return {t for at, value in self.values(expr.text, line) for t in self.templates(value, at, hops + 1)}
        if expr.kind != "call":
            return set()
        last = _method(expr)
        if last in ("Template", "from_string") and expr.positional():
            return self.read_from(expr.positional()[0], line, hops + 1)
        return set()

    def read_from(self, expr: PyExpr, line: _Site, hops: int) -> set[str]:
        """Template names a `Template(...)` argument reads: `f.read()`, `path.read_text()`, `open(p).read()`."""
        if hops > _MAX_HOPS or expr.kind != "call" or _method(expr) not in ("read", "read_text"):
            return set()
        owner = _owner(expr.args[0])
        return self.opened(owner, line, hops + 1) if owner is not None else set()

    def opened(self, expr: PyExpr, line: _Site, hops: int) -> set[str]:
        if hops > _MAX_HOPS:
            return set()
        if expr.kind == "name" and self.values(expr.text, line):
            return {t for at, value in self.values(expr.text, line) for t in self.opened(value, at, hops + 1)}
        if _is_open(expr):
            expr = expr.positional()[0]
        return {name for name in self.names(expr, line, hops) if name.endswith(".jinja")}

    def names(self, expr: PyExpr, line: _Site, hops: int = 0) -> set[str]:
        """The file names a path expression can end in, '{}' where formatted."""
        if hops > _MAX_HOPS:
            return set()
        if expr.kind == "str":
            return {expr.text.rpartition("/")[2]} if expr.text else set()
        if expr.kind == "fstr":
            return {output_pattern(expr.text.rpartition("/")[2])}
        if expr.kind == "name":
            return {n for at, value in self.values(expr.text, line) for n in self.names(value, at, hops + 1)}
        if expr.kind == "binop" and expr.text in ("/", "+") and len(expr.args) == 2:
            return self.names(expr.args[1], line, hops + 1)
        if expr.kind == "call" and _method(expr) in ("Path", "join", "str") and expr.positional():
            return self.names(expr.positional()[-1], line, hops + 1)
        return set()


def _method(call: PyExpr) -> str:
    callee = call.args[0] if call.args else None
    if callee is not None and callee.kind == "attr":
        return callee.text
    return call.text.rpartition(".")[2] if call.text else ""


def _is_open(expr: PyExpr) -> bool:
    return expr.kind == "call" and _method(expr) == "open" and bool(expr.positional())
