"""The section table of an ELF file, read from its headers alone: the file header, the section
header table and the section-name table, a few kilobytes of a library of any size.

Written by hand (struct over seek-and-read) rather than with pyelftools: it is the one table
archlint needs, both ELF classes and byte orders take forty lines, and nothing else is read."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import BinaryIO

ELF_MAGIC = b"\x7fELF"
_SHN_XINDEX = 0xFFFF
_SHT_NOBITS = 8
_MAX_SECTIONS = 1 << 16  # a larger table is damage, not a library
_MAX_NAMES = 1 << 22  # the section-name table is a few hundred bytes in practice


class ElfError(ValueError):
    """The file is not an ELF file archlint can read."""


@dataclass(frozen=True)
class Section:
    name: str
    kind: int  # sh_type
    address: int  # sh_addr: where it is loaded
    offset: int  # sh_offset: where it is in the file
    size: int

    @property
    def in_file(self) -> bool:
        return self.kind != _SHT_NOBITS and self.size > 0


@dataclass(frozen=True)
class ElfFile:
    little: bool
    wide: bool  # ELFCLASS64
    sections: tuple[Section, ...]

    @property
    def endian(self) -> str:
        return "<" if self.little else ">"

    def named(self, name: str) -> Section | None:
        return next((s for s in self.sections if s.name == name and s.in_file), None)

    def holding(self, address: int) -> Section | None:
        """The section in the file that is loaded at `address`."""
        return next((s for s in self.sections if s.in_file and s.address and s.address <= address < s.address + s.size), None)


def read_sections(handle: BinaryIO) -> ElfFile:
    handle.seek(0)
    ident = handle.read(16)
    if len(ident) < 16 or ident[:4] != ELF_MAGIC:
        raise ElfError("not an ELF file")
    if ident[4] not in (1, 2) or ident[5] not in (1, 2):
        raise ElfError("ELF header names an unknown class or byte order")
    wide, little = ident[4] == 2, ident[5] == 1
    end = "<" if little else ">"
    rest = handle.read(48 if wide else 36)
    # e_type..e_shstrndx after e_ident
    layout = end + ("HHIQQQIHHHHHH" if wide else "HHIIIIIHHHHHH")
    if len(rest) < struct.calcsize(layout):
        raise ElfError("ELF header is cut short")
    fields = struct.unpack_from(layout, rest)
    shoff, shentsize, shnum, shstrndx = fields[5], fields[10], fields[11], fields[12]
    entry = struct.Struct(end + ("IIQQQQIIQQ" if wide else "IIIIIIIIII"))
    if shoff == 0 or shentsize < entry.size:
        raise ElfError("no section header table")
    first = _entry(handle, entry, shoff)
    if shnum == 0:
        shnum = first[5]  # more than 0xff00 sections: the count is in section 0's sh_size
    if shstrndx == _SHN_XINDEX:
        shstrndx = first[6]  # likewise the name table's index, in section 0's sh_link
    if not 0 < shnum <= _MAX_SECTIONS or shstrndx >= shnum:
        raise ElfError(f"section header table is damaged ({shnum} sections)")
    handle.seek(shoff)
    table = handle.read(shnum * shentsize)
    if len(table) < shnum * shentsize:
        raise ElfError("section header table is cut short")
    raw = [entry.unpack_from(table, i * shentsize) for i in range(shnum)]
    names_at, names_size = raw[shstrndx][4], min(raw[shstrndx][5], _MAX_NAMES)
    handle.seek(names_at)
    names = handle.read(names_size)
    sections = tuple(Section(_name(names, row[0]), row[1], row[3], row[4], row[5]) for row in raw)
    return ElfFile(little, wide, sections)


def _entry(handle: BinaryIO, entry: struct.Struct, offset: int) -> tuple[int, ...]:
    handle.seek(offset)
    data = handle.read(entry.size)
    if len(data) < entry.size:
        raise ElfError("section header table lies past the end of the file")
    return entry.unpack(data)


def _name(names: bytes, offset: int) -> str:
    if offset >= len(names):
        return ""
    end = names.find(b"\0", offset)
    return names[offset : end if end >= 0 else len(names)].decode("utf-8", "replace")
