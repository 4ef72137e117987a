"""Vendor libraries a unit hands its device work to (rules/kb/libraries.toml): which calls belong to
which library, which of them launch nothing, and what each form of a call needs per compute capability.

A library runs its own kernels, picked for the GPU it finds at run time, so a call needs what the
library documents for it, not what the unit compiles. A form of a call (an FP8 matmul, a
block-scaled one) is told by the identifiers the unit spells (data types, scale modes).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from functools import cached_property, lru_cache

from archlint.knowledge.arch import Target, cc_text
from archlint.knowledge.resources import load_toml

__all__ = ["Library", "LibraryCall", "LibraryKnowledge", "Support", "load_libraries"]

_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class Support(Enum):
    """What a row says of one target."""

    HAS = "has"
    LACKS = "lacks"
    UNDOCUMENTED = "undocumented"


@dataclass(frozen=True)
class Library:
    name: str  # 'cuBLASLt'
    prefix: str  # the start of every name it exports ('cublasLt')
    helpers: tuple[str, ...]  # each re.fullmatch: calls that launch nothing
    source: str

    @cached_property
    def helper_re(self) -> re.Pattern[str]:
        return re.compile("|".join(f"(?:{helper})" for helper in self.helpers))


@dataclass(frozen=True)
class LibraryCall:
    """What one form of a library call needs."""

    id: str
    library: str
    calls: tuple[str, ...]
    form: str  # re.fullmatch on an identifier the unit spells; '' for every form
    summary: str
    min_cc: int
    ccs: tuple[int, ...]  # the documented compute capabilities; () for every one from min_cc
    documented: bool  # False: no GPU generation is enough by itself
    below_lacks: bool  # below min_cc the documentation says the target lacks it
    source: str

    @cached_property
    def form_re(self) -> re.Pattern[str] | None:
        return re.compile(self.form) if self.form else None

    def support(self, target: Target) -> Support:
        if target.cc < self.min_cc:
            return Support.LACKS if self.below_lacks else Support.UNDOCUMENTED
        if self.documented and (not self.ccs or target.cc in self.ccs):
            return Support.HAS
        return Support.UNDOCUMENTED

    def describe(self) -> str:
        """What the documentation says, in words."""
        return f"{self.library} documents for {self.coverage()}"

    def coverage(self) -> str:
        """The compute capabilities the documentation names."""
        if not self.documented:
            return f"no GPU generation by itself (compute capability {cc_text(self.min_cc)} at least)"
        if self.ccs:
            return f"compute capability {', '.join(cc_text(cc) for cc in self.ccs)}"
        return f"compute capability {cc_text(self.min_cc)} and newer"


@dataclass(frozen=True)
class LibraryKnowledge:
    libraries: tuple[Library, ...]  # longest prefix first
    calls: tuple[LibraryCall, ...]

    @cached_property
    def _rows(self) -> dict[str, tuple[LibraryCall, ...]]:
        rows: dict[str, list[LibraryCall]] = {}
        for row in self.calls:
            for name in row.calls:
                rows.setdefault(name, []).append(row)
        return {name: tuple(found) for name, found in rows.items()}

    @cached_property
    def form_names(self) -> frozenset[str]:
        """The plain identifiers the forms are told by (each form lists names separated by `|`)."""
        return frozenset(name for row in self.calls if row.form for name in row.form.split("|") if _NAME_RE.fullmatch(name))

    @cached_property
    def prefixes(self) -> tuple[str, ...]:
        return tuple(library.prefix for library in self.libraries)

    def library_of(self, name: str) -> Library | None:
        """The library exporting a name: its prefix, then a capital (`cublasLtMatmul`, not `cudnn_gemm_run`)."""
        return next((library for library in self.libraries
                     if name.startswith(library.prefix) and name[len(library.prefix):][:1].isupper()), None)

    def does_work(self, name: str) -> bool:
        """A call of a library that launches device work (not one of its helpers, not a type)."""
        library = self.library_of(name)
        return library is not None and (name in self._rows or not (name.endswith("_t") or library.helper_re.fullmatch(name)))

    def rows(self, name: str) -> tuple[LibraryCall, ...]:
        return self._rows.get(name, ())


@lru_cache(maxsize=1)
def load_libraries() -> LibraryKnowledge:
    data = load_toml("kb/libraries.toml")
    libraries = tuple(sorted((Library(row["name"], row["prefix"], tuple(row["helpers"]), row["source"]) for row in data.get("library", [])),
                             key=lambda library: -len(library.prefix)))
    calls = tuple(_call(row) for row in data.get("call", []))
    return LibraryKnowledge(libraries, calls)


def _call(row: dict) -> LibraryCall:
    if row.get("below", "lacks") not in ("lacks", "undocumented"):
        raise ValueError(f"rules/kb/libraries.toml: [[call]] {row['id']}: `below` is 'lacks' or 'undocumented'")
    return LibraryCall(row["id"], row["library"], tuple(row["calls"]), row.get("form", ""), row["summary"],
                       int(row["min_cc"]), tuple(row.get("ccs", ())), bool(row.get("documented", True)),
                       row.get("below", "lacks") == "lacks", row["source"])
