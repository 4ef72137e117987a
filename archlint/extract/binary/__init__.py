"""Prebuilt extension modules (`*.so`), read as bytes and never loaded: the SASS and PTX images their
fatbins carry, and the operator schemas their read-only data holds.

Only headers are read: the ELF section table, each fatbin container's and entry's header, and the
`.rodata` section (operator schemas), so a library of hundreds of megabytes costs milliseconds."""

from __future__ import annotations

import re
from collections import Counter
from typing import BinaryIO

from archlint.extract.binary.elf import ElfError, ElfFile, read_sections
from archlint.extract.binary.fatbin import Walk, walk_region, wrapper_targets
from archlint.model.binary import BinaryFacts, Image, ImageCount
from archlint.model.files import FileFacts, SourceFile
from archlint.model.findings import Diagnostic

__all__ = ["extract_binary"]

# Sections nvcc and the device linker put fatbins in: the module's own, and those of relocatable
# device code kept for a later device link. A library built with -rdc has both, and loads only the
# first: its device-linked images (the relocatable PTX beside them never runs; cuobjdump lists only
# the first too), so the second is read only where the first is missing.
FATBIN_SECTIONS = (".nv_fatbin", "__nv_relfatbin")
WRAPPER_SECTION = ".nvFatBinSegment"
_RODATA_LIMIT = 64 << 20  # larger read-only data is not searched for schemas
# `m.def("fp8_scaled_mm(Tensor mat_a, ...) -> Tensor")`: a NUL-terminated string holding `) ->`,
# which starts with the operator's name (and overload) and its parenthesised arguments
_ARROW = re.compile(rb"\)\s*->")
_SCHEMA = re.compile(rb"([A-Za-z_][A-Za-z0-9_]*)(?:\.[A-Za-z0-9_]+)?\((?:[^\x00()]|\([^\x00()]*\))*\)\s*->\s*[^\x00]+")


def extract_binary(file: SourceFile) -> FileFacts:
    """A library's images and schemas; a file that is no ELF library gets a diagnostic, not facts."""
    try:
        with open(file.absolute, "rb") as handle:
            return _read(file, handle)
    except ElfError as error:
        return FileFacts(file, diagnostics=(Diagnostic(file.path, f"not read as an extension module: {error}"),))
    except OSError as error:
        return FileFacts(file, diagnostics=(Diagnostic(file.path, f"cannot be read: {error.strerror or error}"),))


def _read(file: SourceFile, handle: BinaryIO) -> FileFacts:
    elf = read_sections(handle)
    walk = Walk()
    read: list[str] = []  # the sections the fatbins were read from
    covered: list[tuple[int, int]] = []
    for name in FATBIN_SECTIONS:
        section = elf.named(name)
        if section is not None and not read:
            walk_region(handle, section.offset, section.size, walk, name)
            read.append(name)
            covered.append((section.address, section.address + section.size))
    _follow_wrappers(handle, elf, walk, covered, read)
    counts: Counter[Image] = Counter()
    for container in walk.containers:
        counts.update(dict.fromkeys(container, 1))
    carried = tuple(ImageCount(image, counts[image]) for image in sorted(counts, key=_arch_order))
    facts = BinaryFacts(file.path, len(walk.containers), carried, walk.compressed,
                        _schemas(handle, elf), tuple(read), not walk.problems)
    notes = tuple(Diagnostic(file.path, f"fatbin read in part: {problem}") for problem in walk.problems)
    return FileFacts(file, binary=facts, diagnostics=notes)


def _arch_order(image: Image) -> tuple[int, str, bool]:
    """By compute capability, plain before `a` before `f`, SASS before PTX."""
    return image.arch, image.suffix, image.kind == "ptx"


def _follow_wrappers(handle: BinaryIO, elf: ElfFile, walk: Walk, covered: list[tuple[int, int]], read: list[str]) -> None:
    """Fatbins the wrappers point at outside the sections already read (a toolchain that places
    them in another section)."""
    segment = elf.named(WRAPPER_SECTION)
    if segment is None:
        return
    for address in wrapper_targets(handle, segment.offset, segment.size, elf.endian, elf.wide):
        if any(low <= address < high for low, high in covered):
            continue
        section = elf.holding(address)
        if section is None or section.name in FATBIN_SECTIONS:  # read, or relocatable code left out on purpose
            continue
        walk_region(handle, section.offset + address - section.address, section.size - (address - section.address),
                    walk, section.name)
        covered.append((section.address, section.address + section.size))
        read.append(section.name)


def _schemas(handle: BinaryIO, elf: ElfFile) -> tuple[str, ...]:
    """The operator names of the schema strings in `.rodata`: each `) ->` found, then the string
    around it read whole (a regex over the whole section is ten times slower)."""
    section = elf.named(".rodata")
    if section is None or section.size > _RODATA_LIMIT:
        return ()
    handle.seek(section.offset)
    data = handle.read(section.size)
    names, after = set(), -1
    for arrow in _ARROW.finditer(data):
        if arrow.start() < after:
            continue  # within the string already read
        start, end = data.rfind(b"\0", 0, arrow.start()) + 1, data.find(b"\0", arrow.end())
        after = end if end >= 0 else len(data)
        found = _SCHEMA.fullmatch(data, start, after)
        if found:
            names.add(found.group(1).decode("ascii"))
    return tuple(sorted(names))
