"""Measure CUTLASS tactics whose tiles are written in C++, by compiling the unit that instantiates
them: `sizeof(GemmKernel::SharedStorage)` per instantiation, read from nvcc's front-end errors.

A copy of the launcher header (in a scratch folder, ahead of the tree on the include path) gets,
after its kernel alias (rules/kb/cutlass.toml `[cxx]`), `Show<size, M, N, K> archlint_show_;`
with the kernel's own tile. The unit is the launcher's includer as the build compiles it: a kernel
template written out for every combination of the values its JIT renders it with (probe/jinja.py),
or a source file as it is. Every instantiation the unit makes prints its size; the unit line it
was made at gives its loop variables and values, the tactic. Type aliases that each pass a tile
to a config template are measured where they are written instead (`Show<size, row>` after each).
Nothing of the tree is run or written; answers are cached by content like probe/tactics.py's.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from itertools import product
from pathlib import Path

from archlint.knowledge.arch import Target
from archlint.knowledge.cutlass import CutlassKnowledge, load_cutlass
from archlint.lang.cpp.directives import mask_comments
from archlint.link.cuda import CudaIndex
from archlint.model.tactics import LinkedTileList, TacticChoice, TacticSize
from archlint.probe import tactics as single
from archlint.probe.jinja import Bindings, render
from archlint.probe import nvcc as tools
from archlint.probe.tactics import Measurement, ProbeSettings

RENDERS_PER_UNIT = 4  # renderings of one template compiled in one unit
_SHOW = re.compile(r'incomplete type "Show<([\d, ]+)>"')
_DECLARE = "template <int...> struct Show;\n"


@dataclass(frozen=True)
class _Job:
    linked: LinkedTileList
    target: Target
    unit: str  # the unit's text
    lines: tuple[Bindings, ...]  # the unit's line (1-based, index + 1) -> what was bound where it was written
    copies: tuple[tuple[str, str], ...]  # scanned path -> the text its scratch copy holds
    roots: tuple[str, ...]  # the scanned files whose include roots the unit needs
    alias_rows: bool = False  # Show<size, row>: a row of the fact per Show


def tactic_sizes(tile_lists: tuple[LinkedTileList, ...], targets: tuple[Target, ...], index: CudaIndex,
                 settings: ProbeSettings) -> tuple[TacticSize, ...] | None:
    """Every tactic's measurement as frozen facts for the checks, those of the Python tile lists
    (probe/tactics.py) and those written in C++; None without nvcc."""
    if (settings.nvcc or tools.find_nvcc()) is None:
        return None
    answers = {**single.measure(tile_lists, targets, index, settings), **measure_cxx(tile_lists, targets, index, settings)}
    return tuple(TacticSize(path, line, choice, target, answer.nbytes, answer.note)
                 for (path, line, choice, target), answer in answers.items())


def measure_cxx(tile_lists: tuple[LinkedTileList, ...], targets: tuple[Target, ...], index: CudaIndex,
                settings: ProbeSettings, knowledge: CutlassKnowledge | None = None) -> dict[tuple, Measurement]:
    """(tile list path, line, choice, target name) -> its measurement, for every instantiation the
    units of a C++ tile list make for a served target; a tile list nvcc could not size gets one
    answer per tile with the reason."""
    knowledge = knowledge or load_cutlass()
    nvcc = settings.nvcc or tools.find_nvcc()
    if nvcc is None:
        raise FileNotFoundError("the compile probe needs nvcc (not found on PATH)")
    jobs: list[_Job] = []
    results: dict[tuple, Measurement] = {}
    done: set[tuple] = set()
    for linked in tile_lists:
        if not linked.fact.kind:
            continue
        for target in (t for t in targets if linked.serves(t.cc)):
            once = (linked.fact.path, linked.fact.line, target.name)
            if once in done:
                continue  # the same tiles linked to another gate
            done.add(once)
            made, why = _jobs(linked, target, index, settings, knowledge)
            jobs += made
            if why:
                results.update({(linked.fact.path, linked.fact.line, c, target.name): Measurement(None, why)
                                for c in linked.fact.choices})
    compiles = [_unit_compile(job, index, settings, nvcc) for job in jobs]
    outputs = single.compile_all(compiles, settings, nvcc)
    for job, unit in zip(jobs, compiles):
        for key, answer in _answered(job, outputs[unit.key], settings).items():
            if answer.nbytes is not None or key not in results:
                results[key] = answer
    sized = {(key[0], key[1], key[2].tile, key[3]) for key, answer in results.items() if answer.nbytes is not None}
    # a unit that made no instantiation of a tile another unit sized says nothing of that tile
    return {key: answer for key, answer in results.items()
            if answer.nbytes is not None or (key[0], key[1], key[2].tile, key[3]) not in sized}


def _jobs(linked: LinkedTileList, target: Target, index: CudaIndex, settings: ProbeSettings,
          knowledge: CutlassKnowledge) -> tuple[list[_Job], str]:
    cxx = knowledge.cxx
    header = linked.launcher
    text = _read(settings, header)
    if text is None:
        return [], f"cannot read {header}"
    text = _anchored(text, str(Path(settings.root) / os.path.dirname(header)))
    placed = single._include_text(index, header)
    if linked.fact.kind == "alias":
        patched = _after_aliases(text, linked, cxx.kernel_alias)
        if patched is None:
            return [], "the aliases were not found again in the launcher"
        unit = f'#include "{placed}"\n'
        return [_Job(linked, target, unit, ((),) * 2, ((header, patched),), (header,), alias_rows=True)], ""
    patched = _after_kernel(text, cxx)
    if patched is None:
        return [], "the launcher has no kernel alias the probe can follow"
    includers = [linked.fact.path] if linked.fact.kind == "loops" else sorted(
        src for src in index.files if src != header and any(e.target == header for e in index.resolved(src)))
    jobs, why = [], "no unit of the tree includes the launcher"
    for includer in includers:
        source = _read(settings, includer)
        if source is None:
            continue
        pieces = _renderings(includer, source, knowledge)
        if pieces is None:
            why = f"`{includer}` is a template whose render values rules/kb/cutlass.toml does not give"
            continue
        for start in range(0, len(pieces), RENDERS_PER_UNIT):
            unit, lines = _unit(pieces[start:start + RENDERS_PER_UNIT])
            jobs.append(_Job(linked, target, unit, lines, ((header, patched),), (includer, header)))
    return jobs, "" if jobs else why


def _anchored(text: str, folder: str) -> str:
    """The header's includes relative to its own folder (`"../allocator.h"`), pointed at the scanned
    tree: its copy lives elsewhere."""
    return re.sub(r'(#\s*include\s*")(\.\.?/[^"]+)"', lambda m: f'{m.group(1)}{os.path.normpath(os.path.join(folder, m.group(2)))}"', text)


def _renderings(path: str, text: str, knowledge: CutlassKnowledge) -> list[list[tuple[str, Bindings]]] | None:
    """A kernel template rendered with every combination of the values the JIT passes; a source file as it is."""
    if "{%" not in text and "{{" not in text:
        return [[(text, ())]]
    values = {name: v for name, v in (knowledge.cxx.render_values(path) or {}).items()
              if re.search(r"\{\{-?\s*" + re.escape(name) + r"\b", text)}  # a value the template never writes tells no tactic apart
    names = sorted(values)
    out = []
    for combination in product(*(values[n] for n in names)):
        pieces = render(text, dict(zip(names, combination)))
        if pieces is None:
            return None
        out.append(pieces)
    return out


def _unit(renderings: list[list[tuple[str, Bindings]]]) -> tuple[str, tuple[Bindings, ...]]:
    """The renderings one after another, and for each line of the unit what was bound where its
    first word was written (line 1 declares the Show)."""
    text = _DECLARE
    bound_of_line: list[Bindings] = [()]
    for pieces in renderings:
        current: Bindings | None = None
        for piece, bound in pieces:
            for i, part in enumerate(piece.split("\n")):
                if i:
                    bound_of_line.append(current or ())
                    current = None
                if part.strip() and current is None:
                    current = bound
            text += piece
        bound_of_line.append(current or ())
        text += "\n"
    return text, tuple(bound_of_line)


def _after_kernel(text: str, cxx) -> str | None:
    masked = mask_comments(text.encode("utf-8", "surrogateescape")).decode("utf-8", "surrogateescape")
    matches = list(re.finditer(cxx.kernel_alias, masked))
    if not matches:
        return None
    out, pos = [_DECLARE], 0
    for match in matches:
        kernel = match.group(1)
        args = [cxx.show_size.format(kernel=kernel)] + [cxx.show_tile.format(kernel=kernel, i=i) for i in range(3)]
        out += [text[pos:match.end()], " Show<" + ", ".join(f"(int){a}" for a in args) + "> archlint_show_;"]
        pos = match.end()
    return "".join(out) + text[pos:]


def _after_aliases(text: str, linked: LinkedTileList, kernel_alias: str) -> str | None:
    masked = mask_comments(text.encode("utf-8", "surrogateescape")).decode("utf-8", "surrogateescape")
    kernel = re.search(kernel_alias, masked)
    inserts = []
    for row, choice in enumerate(linked.fact.choices):
        name = choice.axis("config")
        found = re.search(r"using\s+" + re.escape(name) + r"\s*=[^;]*;", masked)
        if found is None or kernel is None:
            return None
        inserts.append((found.end(), f" Show<(int)sizeof(typename {name}::{kernel.group(1)}::SharedStorage), {row}> archlint_show_{row}_;"))
    out, pos = [_DECLARE], 0
    for end, show in sorted(inserts):
        out += [text[pos:end], show]
        pos = end
    return "".join(out) + text[pos:]


def _unit_compile(job: _Job, index: CudaIndex, settings: ProbeSettings, nvcc: str) -> single.Compile:
    roots = list(dict.fromkeys(root for path in job.roots for root in single._include_roots(index, path, settings)))
    header = job.linked.launcher
    placed = single._include_text(index, header)
    if header.endswith("/" + placed):
        roots.insert(0, str(Path(settings.root) / header[: -len(placed)].rstrip("/")))
    return single.unit_compile(job.unit, dict(job.copies), job.target, job.linked.defines, roots,
                               single._closure_digests(index, list(job.roots)), settings, nvcc)


def _answered(job: _Job, output: str | None, settings: ProbeSettings) -> dict[tuple, Measurement]:
    if output is None:
        fact = job.linked.fact
        return {(fact.path, fact.line, c, job.target.name): single.timed_out(settings) for c in fact.choices}
    return _answers(output, job)


def _answers(output: str, job: _Job) -> dict[tuple, Measurement]:
    fact, target = job.linked.fact, job.target
    answers: dict[tuple, Measurement] = {}
    first_error = ""
    for block in re.split(r"\n(?=\S)", output):  # one diagnostic with its notes
        show = _SHOW.search(block)
        if show is None:
            error = re.search(r"error: (.*)", block)
            first_error = first_error or (error.group(1).strip() if error else "")
            continue
        numbers = [int(n) for n in show.group(1).split(",")]
        if job.alias_rows:
            if len(numbers) == 2 and 0 <= numbers[1] < len(fact.choices):
                answers[(fact.path, fact.line, fact.choices[numbers[1]], target.name)] = Measurement(numbers[0])
            continue
        if len(numbers) != 4:
            continue
        tile = next((i for i, row in enumerate(fact.tiles) if (row.m, row.n, row.k) == tuple(numbers[1:])), None)
        line = _unit_line(block)
        if tile is None or line is None or line > len(job.lines):
            continue
        roles = {"tile_m", "tile_n", "tile_k"}
        axes = tuple((name, value) for name, value in job.lines[line - 1] if name not in roles)
        answers.setdefault((fact.path, fact.line, TacticChoice(tile, axes), target.name), Measurement(numbers[0]))
    if not answers:
        note = f"no size in nvcc's output{': ' + first_error[:240] if first_error else ''}{single._settle(first_error)}"
        return {(fact.path, fact.line, c, target.name): Measurement(None, note) for c in fact.choices}
    return answers


def _unit_line(block: str) -> int | None:
    """The unit's line an instantiation was made at: the last `at line N of unit.cu` of the
    diagnostic's context, or the error's own line when it is in the unit (a macro's expansion)."""
    context = re.findall(r"at line (\d+) of unit\.cu", block)
    if context:
        return int(context[-1])
    own = re.match(r"\((\d+)\): error", block)
    return int(own.group(1)) if own else None


def _read(settings: ProbeSettings, path: str) -> str | None:
    try:
        return (Path(settings.root) / path).read_text(encoding="utf-8", errors="surrogateescape")
    except OSError:
        return None
