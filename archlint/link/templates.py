"""Template placeholders that stand for code, filled in from what the scanned Python passes them.

`{{ variant_decl }}` in a config template is whatever string the spec function renders it with.
Where every scanned call passes text archlint can read (`pyvalues`), the placeholder is no longer a
blind spot: its `#include` lines join the template's includes and the calls it makes join the
template's calls. Text with a body, inline assembly, a kernel or other preprocessor lines is left a
placeholder (UNKNOWN): archlint reads code from files, not from strings.
"""

from __future__ import annotations

import re
from dataclasses import replace

from archlint.lang.cpp.lexical import lexical_calls
from archlint.link.values import Reader, Texts
from archlint.model.cuda import CudaFacts, Include

_INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]\s*$')
_NOT_PLAIN = re.compile(r"[{}]|\basm\b|__global__|__device__|^\s*#", re.M)


def fill_holes(pyindex, facts: list) -> list:
    """`facts` (FileFacts) with each template's code placeholders filled in where their values are known."""
    if pyindex is None or not pyindex.renders:
        return facts
    by_template: dict[str, list] = {}
    for render in pyindex.renders:
        by_template.setdefault(render.template, []).append(render)
    reader = Reader(pyindex)
    out = []
    for item in facts:
        cuda = item.cuda
        renders = by_template.get(item.file.path) if cuda is not None else None
        if renders and any(hole.kind == "code" for hole in cuda.template_holes):
            item = replace(item, cuda=_filled(cuda, renders, reader))
        out.append(item)
    return out


def read_templates(facts) -> dict[str, CudaFacts]:
    """The templates whose placeholders `fill_holes` read (path -> facts): a partial re-scan, which
    does not read the Python again, takes these in place of the facts cache's."""
    return {item.file.path: item.cuda for item in facts if item.cuda is not None
            and any(hole.kind == "filled" or hole.why for hole in item.cuda.template_holes)}


def _filled(cuda: CudaFacts, renders: list, reader: Reader) -> CudaFacts:
    includes, calls, kept = list(cuda.includes), list(cuda.calls), []
    for hole in cuda.template_holes:
        if hole.kind != "code":
            kept.append(hole)
            continue
        texts = _values(hole.name, renders, reader)
        why = texts.why if not texts.known else _why_not_plain(texts.values, cuda)
        if why:
            kept.append(replace(hole, why=why))
            continue
        kept.append(replace(hole, kind="filled", why="read as the scanned callers fill it"))
        for text in sorted(texts.values):
            targets, code = _split(text)
            includes.extend(Include(target, system, hole.line, -1) for target, system in targets)
            body = code.encode()
            calls.extend((name, -1) for name in sorted(set(lexical_calls(body, 0, len(body)))))
    return replace(cuda, includes=tuple(includes), calls=tuple(calls), template_holes=tuple(kept))


def _values(name: str, renders: list, reader: Reader) -> Texts:
    """Every text the scanned renderings give the placeholder `name`."""
    if not name.isidentifier():
        return Texts.unknown(f"`{name}` is an expression")
    found: set[str] = set()
    for render in renders:
        passed = dict(render.arguments)
        if name in passed:
            texts = reader.texts(render.module, render.function, passed[name])
        elif "**" in passed:
            texts = Texts.unknown("the rendering passes a splat archlint cannot read")
        else:
            texts = Texts(frozenset({""}))  # a name the rendering does not pass renders as nothing
        if not texts.known:
            return texts
        found |= texts.values
    return Texts(frozenset(found))


def _split(text: str) -> tuple[list[tuple[str, bool]], str]:
    """(the (target, system) of each `#include` line, the rest of the text)."""
    targets, rest = [], []
    for line in text.splitlines():
        match = _INCLUDE.match(line)
        if match:
            targets.append((match.group(2).strip(), match.group(1) == "<"))
        else:
            rest.append(line)
    return targets, "\n".join(rest)


def _why_not_plain(values: frozenset[str], cuda: CudaFacts) -> str:
    if cuda.regions:
        return "the template has preprocessor branches"
    if any(_NOT_PLAIN.search(_split(text)[1]) for text in values):
        return "a value passed holds code with a body, assembly or directives"
    return ""
