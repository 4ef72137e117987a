"""The images a fatbin region carries, from its container and entry headers alone (payloads are
skipped with a seek, so a library of any size costs a few reads per translation unit).

The layout (little-endian), as nvcc 13.0 writes it and cuobjdump reads it; checked against
`cuobjdump --list-elf --list-ptx` on libraries built here with -gencode for each kind of target:

  container header, 16 bytes:  u32 magic 0xBA55ED50, u16 version, u16 header size, u64 payload size
  entry header (header size bytes, 64 or more), then the entry's payload:
    0  u16 kind: 1 PTX, 2 ELF (a cubin: SASS)     4  u32 header size     8  u64 payload size
   16  u32 compressed size   28  u32 arch (major*10 + minor)    40  u64 flags
  flags: 0x100000 arch-specific (`sm_90a`, `compute_100a`), 0x200000 family-specific (`sm_100f`,
  `compute_120f`); 0x2000 and 0x8000 compressed (older toolkits, and nvcc 12.8 and later).
  cuobjdump prints a family-specific cubin as plain `sm_100`; the flag is what tells them apart.
"""

from __future__ import annotations

import struct
from collections import Counter
from dataclasses import dataclass, field
from typing import BinaryIO

from archlint.model.binary import Image

FATBIN_MAGIC = 0xBA55ED50
WRAPPER_MAGIC = 0x466243B1  # __fatBinC_Wrapper_t in .nvFatBinSegment: points at a fatbin
_CONTAINER = struct.Struct("<IHHQ")
_ENTRY = struct.Struct("<HHIQIIIIIIQ")  # kind, version, header size, payload size, compressed size, _, _, arch, _, _, flags
_KINDS = {1: "ptx", 2: "sass"}
FLAG_ARCH_SPECIFIC = 0x100000
FLAG_FAMILY_SPECIFIC = 0x200000
FLAG_COMPRESSED = 0x2000 | 0x8000
_MAX_ENTRIES = 1 << 20  # per region: a walk past this is reading damage


@dataclass
class Walk:
    """What the walk of one library's fatbin regions found."""

    containers: list[Counter[Image]] = field(default_factory=list)  # each container's images
    compressed: int = 0
    problems: list[str] = field(default_factory=list)


def walk_region(handle: BinaryIO, start: int, size: int, walk: Walk, where: str) -> None:
    """Every container laid end to end in [start, start + size)."""
    position, end = start, start + size
    entries = 0
    while position + _CONTAINER.size <= end:
        handle.seek(position)
        head = handle.read(_CONTAINER.size)
        if len(head) < _CONTAINER.size:
            walk.problems.append(f"{where} is cut short at offset {position - start:#x}")
            return
        magic, _version, header_size, payload = _CONTAINER.unpack(head)
        if magic != FATBIN_MAGIC:
            if head.strip(b"\0"):  # zero padding between containers is normal
                walk.problems.append(f"{where}: no fatbin header at offset {position - start:#x}")
                return
            position += 8
            continue
        images: Counter[Image] = Counter()
        entry, stop = position + header_size, min(position + header_size + payload, end)
        while entry + _ENTRY.size <= stop and entries < _MAX_ENTRIES:
            handle.seek(entry)
            raw = handle.read(_ENTRY.size)
            if len(raw) < _ENTRY.size:
                break
            kind, _, entry_header, entry_payload, _, _, _, arch, _, _, flags = _ENTRY.unpack(raw)
            if entry_header < _ENTRY.size:
                walk.problems.append(f"{where}: damaged entry header at offset {entry - start:#x}")
                break
            entries += 1
            if kind in _KINDS:
                images[Image(arch, _suffix(flags), _KINDS[kind])] += 1
                walk.compressed += bool(flags & FLAG_COMPRESSED)
            entry += entry_header + entry_payload
        walk.containers.append(images)
        position += header_size + payload


def _suffix(flags: int) -> str:
    if flags & FLAG_ARCH_SPECIFIC:
        return "a"
    if flags & FLAG_FAMILY_SPECIFIC:
        return "f"
    return ""


def wrapper_targets(handle: BinaryIO, start: int, size: int, endian: str, wide: bool) -> list[int]:
    """The addresses the fatbin wrappers of a `.nvFatBinSegment` point at (their `data` field; the
    linker writes the value into the file beside its relocation)."""
    wrapper = struct.Struct(endian + ("IIQQ" if wide else "IIII"))
    handle.seek(start)
    data = handle.read(min(size, 1 << 20))
    found = []
    for offset in range(0, len(data) - wrapper.size + 1, wrapper.size):
        magic, _version, address, _ = wrapper.unpack_from(data, offset)
        if magic == WRAPPER_MAGIC and address:
            found.append(address)
    return found
