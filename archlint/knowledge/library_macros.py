"""Configuration macros a header library defines (rules/kb/library_macros.toml), for builds whose
library headers are not in the scanned trees: CUTLASS's `CUTLASS_ARCH_MMA_SM100_SUPPORTED` says the
toolkit knows SM100, whatever the build targets, and a unit testing it is decided without the header."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from archlint.knowledge.resources import load_toml


@dataclass(frozen=True)
class LibraryMacro:
    name: str
    prefix: str  # the include folder of the library that defines it (`cutlass/`)
    condition: str  # the library's own `#if` around the definition
    source: str


@lru_cache(maxsize=1)
def load_library_macros() -> tuple[LibraryMacro, ...]:
    rows = load_toml("kb/library_macros.toml").get("macro", [])
    return tuple(LibraryMacro(row["name"], row["prefix"], row["condition"], row["source"]) for row in rows)
