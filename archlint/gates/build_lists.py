"""A CMake build list is a gate: `cuda_archs_loose_intersection(X_ARCHS "10.0a;10.3a" "${CUDA_ARCHS}")`
admits the targets its result keeps, and the sources compiled under `if(X_ARCHS)` are what it guards.
They are judged as a JIT spec's sources are (judge/), with the -D flags the block adds."""

from __future__ import annotations

from collections.abc import Mapping

from archlint.knowledge.arch import Target, known_ccs, newest_toolkit
from archlint.knowledge.idioms import load_idioms
from archlint.lang.cmake.archs import cc_of
from archlint.link.build import build_blocks
from archlint.link.generators import fetched_content, writer_of
from archlint.model.build import BuildBlock, CMakeFacts
from archlint.model.findings import Evidence, EvidenceKind, Location
from archlint.model.gates import BUILD_LIST_KIND, WHOLE_BUILD_KIND, Gate, GuardedUnits, gate_location
from archlint.model.host import Layers


def requested_archs(targets: tuple[Target, ...]) -> tuple[str, ...]:
    """One CMake arch entry per known compute capability: the scan's own target where it asks for
    one (`12.0a` for sm_120a), else the plain capability (`9.0`), as TORCH_CUDA_ARCH_LIST gives it."""
    asked = {target.cc: target for target in targets}
    out = []
    for cc in sorted(set(known_ccs()) | set(asked)):
        suffix = asked[cc].suffix if cc in asked else ""
        out.append(f"{cc // 10}.{cc % 10}{suffix}")
    return tuple(out)


def cmake_gates(files: Mapping[str, CMakeFacts], scanned: tuple[str, ...], toolkit: tuple[int, ...] | None,
                targets: tuple[Target, ...],
                scripts: tuple[str, ...] = ()) -> tuple[list[tuple[Gate, GuardedUnits]], list[tuple[Gate, GuardedUnits]]]:
    """Every build list of the project's CMake build as a gate with the units it guards, read for
    the CUDA toolkit `toolkit` (default: the newest known); and the build's own lists (what the
    extension's other sources are compiled for), in the same shape but never judged. `scripts`: the
    generator scripts the CMake names (link/generators.py): a glob no scanned file matches is the
    unit its script writes."""
    if not files:
        return [], []
    version = ".".join(str(part) for part in (toolkit or newest_toolkit())[:2])
    blocks, uncertain = build_blocks(files, scanned, load_idioms(), version, requested_archs(targets))
    fetched = {path: fetched_content(facts) for path, facts in files.items()}
    pairs = build_list_gates(blocks, uncertain, scripts, fetched)
    return [p for p in pairs if p[0].kind == BUILD_LIST_KIND], [p for p in pairs if p[0].kind == WHOLE_BUILD_KIND]


def build_list_gates(blocks: tuple[BuildBlock, ...], uncertain: frozenset[str], scripts: tuple[str, ...] = (),
                     fetched: Mapping[str, tuple[tuple[str, str], ...]] | None = None) -> list[tuple[Gate, GuardedUnits]]:
    return [(gate, _units(gate, block, scripts, (fetched or {}).get(block.path, ()))) for block in blocks
            for gate in [_gate(block, f"{block.path}:{block.line}" not in uncertain)]]


def generated_units(gated: list[tuple[Gate, GuardedUnits]], scripts: tuple[str, ...]) -> dict[str, str]:
    """The units build lists compile that a generator script writes: glob pattern -> the script."""
    out: dict[str, str] = {}
    for gate, units in gated:
        if gate.kind != BUILD_LIST_KIND:
            continue
        for source in units.sources:
            writer = writer_of(source, scripts) if "*" in source else None
            if writer is not None:
                out[source] = writer
    return out


def _gate(block: BuildBlock, exact: bool) -> Gate:
    admitted = [(cc_of(arch), result) for arch, result in block.admitted if result]
    admits = sorted({cc for cc, _ in admitted if cc is not None})
    by_cc = tuple((cc, _suffix(result)) for cc, result in admitted if cc is not None)
    kinds = {suffix for _, suffix in by_cc}
    return Gate(
        f"{block.path}:{block.line}:{block.col}", WHOLE_BUILD_KIND if block.whole_build else BUILD_LIST_KIND, block.text, block.path, block.line, block.col,
        block.end_line, block.end_col, "", tuple(admits), exact,
        suffix=kinds.pop() if len(kinds) == 1 else "?", guards=(), sources=(), defines=block.defines,
        list_span=None, majors_literal=None, unit="cc", suffix_by_cc=by_cc,
    )


def _suffix(result: tuple[str, ...]) -> str:
    """The suffix the block builds a capability with: that of its (first) result entry."""
    entry = result[0].replace("+PTX", "")
    return entry[-1] if entry[-1] in "af" else ""


def _units(gate: Gate, block: BuildBlock, scripts: tuple[str, ...], fetched: tuple[tuple[str, str], ...]) -> GuardedUnits:
    head = (Evidence(gate_location(gate), f"build list `{block.variable}` ({';'.join(block.source_archs)})",
                     EvidenceKind.GATE),)
    into = f" into `{block.target}`" if block.target else ""
    flags = f" with {' '.join(block.defines)}" if block.defines else ""
    evidence: dict[str, tuple[Evidence, ...]] = {}
    unresolved: list[str] = []
    outside: list[str] = []  # under the folder of a tree the build fetches
    for source in block.sources:
        writer = writer_of(source.glob, scripts) if source.glob and not source.path else None
        if writer is not None:
            hop = Evidence(Location(block.path, source.line),
                           f"compiles {source.glob} for `{block.variable}`{into}{flags}: the files {writer} writes "
                           "at build time, read from the script's templates", EvidenceKind.BUILDS, source=source.glob)
            evidence.setdefault(source.glob, head + (hop,))
            continue
        if not source.path and fetched and source.written.startswith("${…}"):
            outside.append(source.written)
            continue
        if not source.path:
            why = ("a file(GLOB) that matches no scanned file (generated at build time)" if source.glob
                   else "not in the scanned trees (fetched or generated at build time)")
            unresolved.append(f"{source.written} ({why})")
            continue
        hop = Evidence(Location(block.path, source.line),
                       f"compiles {source.path} for `{block.variable}`{into}{flags}", EvidenceKind.BUILDS,
                       source=source.path)
        evidence.setdefault(source.path, head + (hop,))
    if outside:
        what = outside[0] if len(outside) == 1 else f"{len(outside)} sources under the tree"
        unresolved.insert(0, f"{what} {_fetched_note(fetched)}")
    if not block.sources:
        note = f"; the block builds the tree {_fetched_note(fetched)}" if fetched else ""
        unresolved.append(f"`if({block.variable})` at line {block.condition_line} names no source file{note}")
    return GuardedUnits(tuple(sorted(evidence)), tuple(unresolved), evidence, block.defines,
                        layers=Layers(native=_native(block)))


def _native(block: BuildBlock) -> tuple[int, ...]:
    """The capabilities the list builds an entry of their own major for (`12.0` for 12.1 counts;
    `8.0+PTX` for 12.1 does not)."""
    found = set()
    for arch, result in block.admitted:
        cc = cc_of(arch)
        if cc is not None and any(entry.split(".")[0] == str(cc // 10) for entry in result):
            found.add(cc)
    return tuple(sorted(found))


def _fetched_note(fetched: tuple[tuple[str, str], ...]) -> str:
    """What the build downloads, and what would settle its verdict."""
    trees = ", ".join(f"FetchContent_Declare({name})" + (f" from {repository}" if repository else "")
                      for name, repository in fetched)
    names = " or ".join(f"`${{{name}_SOURCE_DIR}}`" for name, _ in fetched)
    return f"fetched at build time by {trees}: scan that tree ({names}) to judge it"
