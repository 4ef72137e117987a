"""Measure CUTLASS tactics with the compiler: `sizeof(GemmKernel::SharedStorage)` per tactic.

A copy of the launcher (in a scratch folder, never in the scanned tree) gets, after the statement
that makes its kernel type complete, `Show<size> archlint_show_;` where `Show` is declared and never
defined: nvcc's front end rejects the incomplete type and prints its arguments, the size. One
translation unit per launcher and target holds every tactic (one instantiation line each, from
rules/kb/cutlass.toml), split into chunks compiled in parallel with a timeout; nothing is linked,
run or written outside the scratch folder. Answers are cached by the unit's content, the flags and
the nvcc version, and a unit two jobs make alike (one launcher offered by two gates) is compiled
once. The include roots are those archlint resolved the launcher's includes with.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import tempfile
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from archlint.knowledge.arch import Target
from archlint.knowledge.cutlass import CutlassKnowledge, Launcher, Probe, load_cutlass
from archlint.lang.cpp.directives import mask_comments
from archlint.link.cuda import CudaIndex, include_closure
from archlint.model.tactics import LinkedTileList, TacticChoice
from archlint.probe.nvcc import default_cache_dir, find_nvcc, nvcc_version

# Tactics per translation unit, at most: the headers' parse is paid once per unit, and each tactic
# adds its instantiations (nvcc's front end took 1.6 GB for 8 of FlashInfer's MoE tactics, 2.7 GB
# for 22 and 3.1 GB for 44).
CHUNK = 32
_SHOW_RE = re.compile(r"\((\d+)\): error: incomplete type \"Show<(\d+)>\"")


@dataclass(frozen=True)
class Measurement:
    nbytes: int | None  # None: not measured (see `note`)
    note: str = ""  # why there is no size: a compile error, a timeout, a tactic the rows cannot spell


@dataclass(frozen=True)
class ProbeSettings:
    root: str  # the scan root: the index's paths are relative to it
    include_dirs: tuple[str, ...] = ()
    jobs: int = 2
    timeout_s: float = 600.0
    nvcc: str | None = None
    cache_dir: str | None = None


def measure(tile_lists: tuple[LinkedTileList, ...], targets: tuple[Target, ...], index: CudaIndex,
            settings: ProbeSettings, knowledge: CutlassKnowledge | None = None) -> dict[tuple, Measurement]:
    """(tile list path, line, choice, target name) -> its measurement, for every tactic a served
    target's launcher can be probed for."""
    knowledge = knowledge or load_cutlass()
    nvcc = settings.nvcc or find_nvcc()
    if nvcc is None:
        raise FileNotFoundError("the compile probe needs nvcc (not found on PATH)")
    jobs: list[tuple[str, Target, list[tuple[tuple, str]], Launcher, tuple[str, ...]]] = []
    results: dict[tuple, Measurement] = {}
    for linked in tile_lists:
        if linked.fact.kind:
            continue  # tiles written in C++: probe/units.py compiles their units
        launcher = knowledge.launcher_for(linked.launcher, linked.fact.arch) if linked.launcher else None
        path = _launcher_path(index, linked.launcher) or (_launcher_path(index, launcher.probe.file)
                                                            if launcher and launcher.probe and launcher.probe.file else None)
        served = [t for t in targets if linked.serves(t.cc)]
        if launcher is None or launcher.probe is None or path is None:
            why = ("no launcher is known for the generator" if launcher is None else
                   "rules/kb/cutlass.toml has no probe for the launcher" if launcher.probe is None else
                   f"{linked.launcher} is not among the scanned CUDA files")
            results.update({(linked.fact.path, linked.fact.line, choice, t.name): Measurement(None, why)
                            for choice in linked.fact.choices for t in served})
            continue
        for target in served:
            lines = []
            for choice in linked.fact.choices:
                key = (linked.fact.path, linked.fact.line, choice, target.name)
                text = _instantiation(linked, choice, launcher, knowledge)
                if text:
                    lines.append((key, text))
                else:
                    results[key] = Measurement(None, "rules/kb/cutlass.toml cannot spell this tactic's instantiation")
            size = _even_chunk(len(lines))
            for start in range(0, len(lines), size):
                jobs.append((path, target, lines[start:start + size], launcher, linked.defines))
    prepared = [_prepare(job, index, settings, nvcc) for job in jobs]
    outputs = compile_all([made for made in prepared if isinstance(made, Compile)], settings, nvcc)
    for made in prepared:
        results.update(_answered(made, outputs[made.key], settings) if isinstance(made, Compile) else made)
    return results


def _launcher_path(index: CudaIndex, name: str) -> str | None:
    matches = sorted(path for path in index.files if name and (path == name or path.endswith("/" + name)))
    return matches[0] if matches else None


def _instantiation(linked: LinkedTileList, choice: TacticChoice, launcher: Launcher, knowledge: CutlassKnowledge) -> str:
    probe = launcher.probe
    assert probe is not None
    dtype = choice.axis("dtype")
    names = [part.strip() for part in dtype.strip("()").split(",") if part.strip()] if dtype else list(launcher.elements)
    elements = [knowledge.element(name) for name in names]
    if not elements or any(e is None or not e.cuda for e in elements):
        return ""
    act, weight = elements[0], elements[-1]
    assert act is not None and weight is not None
    scale = knowledge.block_scale(act, weight, linked.fact.arch or 0)
    cluster = [part.strip() for part in choice.axis("cluster").strip("()").split(",")] if choice.axis("cluster") else ["1", "1", "1"]
    fusion = dict(probe.fusions).get(choice.axis("fusion"), "NONE" if not choice.axis("fusion") else "")
    tile = linked.fact.tiles[choice.tile]
    if not fusion or len(cluster) != 3:
        return ""
    return probe.instantiate.format(arch=linked.fact.arch, act=act.cuda, weight=weight.cuda, output=probe.output, fusion=fusion,
                                    m=tile.m, n=tile.n, k=tile.k, cluster_m=cluster[0], cluster_n=cluster[1],
                                    cluster_k=cluster[2], mx=str(bool(scale and scale.mx)).lower(),
                                    swap=str(choice.axis("swap") == "True").lower())


def _even_chunk(count: int) -> int:
    """Tactics per unit: at most CHUNK, the units alike in size (44 tactics: 22 and 22, not 32 and 12)."""
    units = max(1, -(-count // CHUNK))
    return max(1, -(-count // units))


@dataclass(frozen=True)
class Compile:
    """One nvcc run of a probe unit: what the scratch folder holds, the flags, and the cache key
    that covers them (with the digests of the scanned files the unit includes and nvcc's version)."""

    key: str
    unit: str
    copies: tuple[tuple[str, str], ...]  # scanned path -> the text of its scratch copy
    flags: tuple[str, ...]
    answers: tuple[tuple, ...] = ()  # the measurement key of each tactic line, in order
    first: int = 1  # the unit's line of the first tactic


def compile_all(compiles: list[Compile], settings: ProbeSettings, nvcc: str) -> dict[str, str | None]:
    """nvcc's output for each key (None past the timeout): from the probe cache, else compiled in
    parallel, each distinct unit once however many jobs made it."""
    unique = {made.key: made for made in compiles}

    def output(made: Compile) -> str | None:
        cached = _cache_read(settings, made.key)
        if cached is not None:
            return cached
        found = _run(nvcc, made.unit, dict(made.copies), list(made.flags), settings.timeout_s)
        if found is not None:
            _cache_write(settings, made.key, found)
        return found

    with ThreadPoolExecutor(max(1, settings.jobs)) as pool:
        return dict(zip(unique, pool.map(output, unique.values())))


def _answered(made: Compile, output: str | None, settings: ProbeSettings) -> dict[tuple, Measurement]:
    if output is None:
        return {k: timed_out(settings) for k in made.answers}
    return _answers(output, list(made.answers), made.first)


def _prepare(job, index: CudaIndex, settings: ProbeSettings, nvcc: str) -> Compile | dict[tuple, Measurement]:
    """The unit to compile for a job, or the job's answers where there is none to compile."""
    path, target, lines, launcher, defines = job
    probe = launcher.probe
    assert probe is not None
    probed = _launcher_path(index, probe.file) if probe.file else path
    if probed is None:
        return {key: Measurement(None, f"{probe.file} is not in the scanned trees") for key, _ in lines}
    patched = _patched((Path(settings.root) / probed).read_text(encoding="utf-8", errors="replace"), probe)
    if patched is None:
        return {key: Measurement(None, "the launcher has no statement the probe can follow") for key, _ in lines}
    placed = _include_text(index, probed)
    included, included_files = _unit_includes(index, path, probed, placed)
    head = [f'#include "{text}"' for text in included] + ([probe.prefix] if probe.prefix else [])
    unit = "\n".join([*head, *(text for _, text in lines), probe.suffix, ""])
    placed_root = [str(Path(settings.root) / probed[: -len(placed)].rstrip("/"))] if probed.endswith("/" + placed) else []
    roots = list(dict.fromkeys(placed_root + _include_roots(index, path, settings) + _include_roots(index, probed, settings)))
    copies = {file: patched if file == probed else (Path(settings.root) / file).read_text(encoding="utf-8", errors="replace")
              for file in _chain(index, included_files, probed)}
    return unit_compile(unit, copies, target, defines, roots, _closure_digests(index, [path, probed]), settings, nvcc,
                        tuple(k for k, _ in lines), len(head) + 1)


def unit_compile(unit: str, copies: dict[str, str], target: Target, defines: tuple[str, ...], roots: list[str],
                 closure: list[str], settings: ProbeSettings, nvcc: str, answers: tuple[tuple, ...] = (),
                 first: int = 1) -> Compile:
    """The nvcc run of a probe unit: the flags (the scratch copies' folders ahead of the tree's own
    include roots) and the cache key over everything the answer depends on (the unit, the copies'
    text, the flags, the digests of the scanned files it includes and nvcc's version)."""
    mirrored = [f"{_MIRROR}/{os.path.relpath(root, settings.root)}" for root in roots
                if Path(root).is_relative_to(settings.root)]
    flags = ["-std=c++17", f"-arch={target.name}", "--expt-relaxed-constexpr", *(f"-D{d}" for d in defines),
             *(arg for root in [*mirrored, *roots] for arg in ("-I", root))]
    held = tuple(sorted(copies.items()))
    key = hashlib.sha256(json.dumps([unit, held, flags, closure, nvcc_version(nvcc)]).encode()).hexdigest()
    return Compile(key, unit, held, tuple(flags), answers, first)


def timed_out(settings: ProbeSettings) -> Measurement:
    return Measurement(None, f"nvcc ran past {settings.timeout_s:.0f} s")


def _closure_digests(index: CudaIndex, starts: list[str]) -> list[str]:
    """The content digest of every scanned file the units include, so an edited header is compiled
    again: a cached answer holds for the very bytes it was measured on."""
    return [f"{path}:{index.files[path].sha256}" for path in sorted(include_closure(index, starts)) if path in index.files]


_MIRROR = "tree"  # the scratch folder's copy of the include chain, laid out as the scanned tree


def _chain(index: CudaIndex, starts: list[str], goal: str) -> list[str]:
    """The files on an include path from the unit's includes to the probed file. Copied beside each
    other (and put ahead of the tree on the include path), each includer finds the patched copy
    where it looks first: a quoted include is searched in the includer's own folder."""
    parents: dict[str, str | None] = {start: None for start in starts}
    queue = deque(starts)
    while queue and goal not in parents:
        source = queue.popleft()
        for edge in index.resolved(source):
            if edge.target is not None and edge.target not in parents:
                parents[edge.target] = source
                queue.append(edge.target)
    chain, step = [], goal if goal in parents else None
    while step is not None:
        chain.append(step)
        step = parents[step]
    return chain or [goal]


def _include_text(index: CudaIndex, path: str) -> str:
    """How the tree includes the file (`flashinfer/gemm/x.h`): its patched copy goes there, ahead of
    the original on the include path; its own name where nothing in the index includes it."""
    for source in index.files:
        for edge in index.resolved(source):
            if edge.target == path and not edge.include.system:
                return edge.include.target
    return os.path.basename(path)


def _unit_includes(index: CudaIndex, launcher: str, probed: str, placed: str) -> tuple[list[str], list[str]]:
    """What the unit includes, as written and as the files they resolve to: the launcher's own
    includes where it is a template the JIT renders (a `.jinja`), else the probed file."""
    if launcher.endswith(".jinja"):
        edges = [edge for edge in index.resolved(launcher) if not edge.include.system]
        if edges:
            return [edge.include.target for edge in edges], [edge.target for edge in edges if edge.target is not None]
    return [placed], [probed]


def _answers(output: str, keys: list[tuple], first: int) -> dict[tuple, Measurement]:
    """Each tactic's size from the `Show<N>` error at its instantiation's line (`first` is the line of
    the first); a tactic with another error at its line does not compile, whatever size it shows."""
    sizes = {int(line): int(size) for line, size in _SHOW_RE.findall(output)}
    errors: dict[int, str] = {}
    anywhere = ""  # the first error, wherever it is (a header nvcc cannot find stops the unit before any line)
    for block in re.split(r"\n(?=\S)", output):  # one diagnostic with its notes
        error = re.search(r"error: (.*)", block)
        if error is None or "Show<" in error.group(1):
            continue
        anywhere = anywhere or error.group(1).strip()
        own = re.match(r"\((\d+)\): error", block)
        lines = [int(own.group(1))] if own else [int(n) for n in re.findall(r"at line (\d+) of unit\.cu", block)]
        for line in lines:
            errors.setdefault(line, error.group(1).strip())
    answers = {}
    for i, key in enumerate(keys):
        line = first + i
        if line in errors:
            answers[key] = Measurement(None, f"does not compile: {errors[line][:240]}")
        elif line in sizes:
            answers[key] = Measurement(sizes[line])
        else:
            other = next(iter(errors.values()), anywhere)
            answers[key] = Measurement(None, f"no size in nvcc's output{': ' + other[:240] if other else ''}{_settle(other)}")
    return answers


def _settle(error: str) -> str:
    """What settles a unit stopped by a header the tree does not hold (a toolkit library's `cublasLt.h`)."""
    missing = re.search(r"([\w./-]+\.(?:h|hpp|cuh)): No such file", error) or re.search(r'cannot open source file "([^"]+)"', error)
    return f"; pass --include-dir with the folder holding `{missing.group(1)}`" if missing else ""


def _patched(text: str, probe: Probe) -> str | None:
    data = text.encode("utf-8", "surrogateescape")
    match = re.search(probe.after.encode(), mask_comments(data))  # in code, never in a comment quoting it
    if match is None:
        return None
    show = f" Show<(int){probe.size}> archlint_show_;".encode()
    patched = b"template <int...> struct Show;\n" + data[:match.end()] + show + data[match.end():]
    return patched.decode("utf-8", "surrogateescape")


def _include_roots(index: CudaIndex, path: str, settings: ProbeSettings) -> list[str]:
    """The launcher's folder, every root archlint resolved its include closure's includes under, and
    the scan's --include-dir folders."""
    roots = [str(Path(settings.root) / os.path.dirname(path))]
    seen, stack = {path}, [path]
    while stack:
        source = stack.pop()
        for edge in index.resolved(source):
            if edge.target is None:
                continue
            written = edge.include.target
            if edge.target.endswith(written):
                base = edge.target[: len(edge.target) - len(written)].rstrip("/")
                root = str(Path(settings.root) / base)
                # found beside its includer: the compiler finds it there too, and a -I of that
                # folder would put its files ahead of the toolkit's (`mma.h`)
                if base != os.path.dirname(source) and root not in roots:
                    roots.append(root)
            if edge.target not in seen:
                seen.add(edge.target)
                stack.append(edge.target)
    return roots + [d for d in settings.include_dirs if d not in roots]


def _run(nvcc: str, unit: str, copies: dict[str, str], flags: list[str], timeout: float) -> str | None:
    with tempfile.TemporaryDirectory(prefix="archlint-tactics-") as scratch:
        for path, text in copies.items():
            copy = Path(scratch) / _MIRROR / path
            copy.parent.mkdir(parents=True, exist_ok=True)
            copy.write_text(text, encoding="utf-8")
        (Path(scratch) / "unit.cu").write_text(unit, encoding="utf-8")
        command = [nvcc, *flags, "-c", "unit.cu", "-o", os.devnull]
        try:
            done = subprocess.run(command, cwd=scratch, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return None
        return (done.stdout + done.stderr).replace("unit.cu(", "(")


def _cache_path(settings: ProbeSettings, key: str) -> Path:
    return Path(settings.cache_dir or default_cache_dir()) / "tactics-v1" / f"{key}.txt"


def _cache_read(settings: ProbeSettings, key: str) -> str | None:
    try:
        return _cache_path(settings, key).read_text(encoding="utf-8")
    except OSError:
        return None


def _cache_write(settings: ProbeSettings, key: str, output: str) -> None:
    path = _cache_path(settings, key)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(output, encoding="utf-8")
    except OSError:
        pass  # an unwritable cache only costs the next run a compile
