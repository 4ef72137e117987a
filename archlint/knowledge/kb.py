"""The knowledge base: what each PTX instruction and intrinsic needs, and device limits.

Rows live in `rules/kb/instructions.toml` and `rules/kb/intrinsics.toml`; every row names a
snippet under `rules/kb/snippets/` that the test suite compiles with nvcc for the targets the
row says pass and fail. Order matters: the first matching row wins, so specific rows
(`kind::f8f6f4` mma) come before general ones (FP8 mma).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property, lru_cache

from archlint.knowledge.arch import Target, cc_text
from archlint.knowledge.libraries import LibraryKnowledge, load_libraries
from archlint.knowledge.resources import load_toml

__all__ = ["Requirement", "DeviceProfile", "KnowledgeBase", "load_kb"]

_PLAIN_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_LITERAL_HEAD_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class Requirement:
    id: str
    kind: str  # 'ptx' | 'intrinsic' | 'arch-tag'
    match: str
    summary: str
    min_cc: int
    requires: str  # '' | 'f' | 'a'
    ccs: tuple[int, ...]
    source: str
    snippet: str
    context: str = ""  # arch tags: a pattern the code around the tag must also spell

    def supports(self, target: Target) -> bool:
        if target.cc < self.min_cc or (self.ccs and target.cc not in self.ccs):
            return False
        if self.requires == "a":
            return target.suffix == "a"
        if self.requires == "f":
            return target.suffix in ("a", "f")
        return True

    def describe(self) -> str:
        return _describe(self)


@lru_cache(maxsize=None)
def _describe(requirement: Requirement) -> str:
    """What a requirement asks for, in words (memoised: verdicts ask for it once per construct hit)."""
    base = f"sm_{requirement.min_cc}"
    if requirement.requires == "a":
        if len(requirement.ccs) == 1:
            return f"needs {base}a (arch-specific, cc {cc_text(requirement.ccs[0])} only)"
        return f"needs an arch-specific target: {_targets(requirement.ccs or (requirement.min_cc,), 'a')}"
    if requirement.requires == "f":
        if requirement.ccs:
            return f"needs a family- or arch-specific target: {_targets(requirement.ccs, 'f')} (or their `a` targets)"
        return f"needs {base}f/{base}a or a newer family- or arch-specific target (not plain sm_XY)"
    if requirement.ccs:
        return f"needs one of {_targets(requirement.ccs, '')}"
    return f"needs {base} or newer"


def _targets(ccs: tuple[int, ...], suffix: str) -> str:
    return ", ".join(f"sm_{cc}{suffix}" for cc in ccs)


@dataclass(frozen=True)
class DeviceProfile:
    cc: int
    name: str
    smem_per_sm: int
    smem_per_block_optin: int
    smem_per_block: int
    sm_count: int | None
    max_registers_per_thread: int
    source: str


# Rows matched against identifiers: intrinsics, APIs and CuTe atoms; and CUTLASS arch tags
# (`cutlass::arch::Sm100`), which select the collectives built for one architecture.
_IDENTIFIER_KINDS = ("intrinsic", "arch-tag")


class KnowledgeBase:
    """Requirement rows in match order, plus device profiles by compute capability."""

    def __init__(self, requirements: tuple[Requirement, ...], profiles: tuple[DeviceProfile, ...],
                 libraries: LibraryKnowledge | None = None, limit_reads: frozenset[str] = frozenset()):
        self.requirements = requirements
        self.profiles = profiles
        self.limit_reads = limit_reads  # names by which code reads the device's per-block smem limit
        self.libraries = libraries or LibraryKnowledge((), ())
        self._ptx = tuple((re.compile(r.match), r) for r in requirements if r.kind == "ptx")
        self._intrinsic = tuple((re.compile(r.match), r) for r in requirements if r.kind in _IDENTIFIER_KINDS)
        self._by_id = {r.id: r for r in requirements}
        self._by_cc = {p.cc: p for p in profiles}
        matches = [r.match for r in requirements if r.kind in _IDENTIFIER_KINDS]
        self.intrinsic_names = frozenset(name for match in matches for name in _plain_names(match))
        self.arch_tag_names = frozenset(name for r in requirements if r.kind == "arch-tag" for name in _plain_names(r.match))
        # an arch tag counts only where the code around it also spells this (the operator class
        # that makes CUTLASS pick the arch's tensor-core collectives)
        self.arch_tag_context = {name: re.compile(r.context.encode()) for r in requirements if r.kind == "arch-tag"
                                 for name in _plain_names(r.match)}
        self.intrinsic_prefixes = _prefixes([match for match in matches if not _plain_names(match)])
        self._requirements: dict[tuple[str, str], Requirement | None] = {}

    def requirement(self, kind: str, name: str) -> Requirement | None:
        """The row a construct of this kind ('ptx' or an identifier's) and name needs (memoised: the
        same opcodes recur millions of times in CUTLASS)."""
        key = (kind, name)
        if kind == "library":
            return None  # a library call or form: knowledge/libraries.py says what it needs
        if key not in self._requirements:
            self._requirements[key] = self.match_ptx(name) if kind == "ptx" else self.match_identifier(name)
        return self._requirements[key]

    @cached_property
    def identifier_pattern(self) -> re.Pattern[bytes] | None:
        """One pattern for every intrinsic name and tag prefix, to find them in masked source bytes."""
        names = sorted(self.intrinsic_names | self.libraries.form_names, key=len, reverse=True)
        alternatives = [re.escape(n) for n in names] + [re.escape(p) + r"\w+" for p in self.intrinsic_prefixes]
        # a library's calls: any name it exports, followed by its argument list
        alternatives += [re.escape(p) + r"[A-Z]\w*(?=\s*\()" for p in self.libraries.prefixes]
        if not alternatives:
            return None
        return re.compile(rb"(?<![\w.])(?:" + "|".join(alternatives).encode() + rb")\b")

    @cached_property
    def _library_call(self) -> re.Pattern[bytes] | None:
        prefixes = self.libraries.prefixes
        return re.compile(rb"\b(?:" + "|".join(map(re.escape, prefixes)).encode() + rb")[A-Z]\w*\s*\(") if prefixes else None

    def calls_library(self, masked: bytes) -> bool:
        """Source text (comments and strings masked) that calls a vendor library."""
        return self._library_call is not None and self._library_call.search(masked) is not None

    def library_name(self, name: str) -> bool:
        """A library call that does device work, or a name that tells a library call's form."""
        return name in self.libraries.form_names or self.libraries.does_work(name)

    def match_ptx(self, opcode: str) -> Requirement | None:
        return next((req for regex, req in self._ptx if regex.search(opcode)), None)

    def match_identifier(self, name: str) -> Requirement | None:
        """`name` as written; a qualified name (`cg::this_cluster`) also tries its last part."""
        for candidate in dict.fromkeys((name, name.rsplit("::", 1)[-1])):
            found = next((req for regex, req in self._intrinsic if regex.fullmatch(candidate)), None)
            if found:
                return found
        return None

    def by_id(self, row_id: str) -> Requirement:
        try:
            return self._by_id[row_id]
        except KeyError:
            raise KeyError(f"no knowledge-base row with id {row_id!r}") from None

    def profiled_ccs(self) -> tuple[int, ...]:
        """The capabilities rules/kb/devices.toml has a profile of."""
        return tuple(sorted(self._by_cc))

    def profile(self, cc: int) -> DeviceProfile:
        try:
            return self._by_cc[cc]
        except KeyError:
            known = ", ".join(str(c) for c in sorted(self._by_cc))
            raise KeyError(f"no device profile for cc {cc}; known: {known}") from None


def _plain_names(pattern: str) -> tuple[str, ...]:
    """The names of a row that lists plain names (`a|b`); () for a pattern such as a tag's."""
    names = tuple(pattern.split("|"))
    return names if all(_PLAIN_NAME_RE.fullmatch(name) for name in names) else ()


def _prefixes(patterns: list[str]) -> tuple[str, ...]:
    """Literal heads of tag rows ('SM90_TMA_\\w+' -> 'SM90_'), minimal: no head extends another."""
    heads = set()
    for pattern in patterns:
        head = _LITERAL_HEAD_RE.match(pattern)
        if head and not _PLAIN_NAME_RE.fullmatch(pattern):
            text = head.group(0)
            heads.add(text[: text.index("_", 1) + 1] if "_" in text[1:] else text)
    return tuple(sorted(h for h in heads if not any(o != h and h.startswith(o) for o in heads)))


def _requirement(row: dict, kind: str) -> Requirement:
    return Requirement(
        id=row["id"], kind=kind, match=row["match"], summary=row["summary"], min_cc=int(row["min_cc"]),
        requires=row.get("requires", ""), ccs=tuple(row.get("ccs", ())), source=row["source"],
        snippet=row["snippet"], context=row.get("context", ""),
    )


def _profile(row: dict) -> DeviceProfile:
    return DeviceProfile(
        cc=int(row["cc"]), name=row["name"], smem_per_sm=int(row["smem_per_sm"]),
        smem_per_block_optin=int(row["smem_per_block_optin"]), smem_per_block=int(row["smem_per_block"]),
        sm_count=row.get("sm_count"), max_registers_per_thread=int(row["max_registers_per_thread"]),
        source=row["source"],
    )


@lru_cache(maxsize=1)
def load_kb() -> KnowledgeBase:
    rows = [_requirement(r, "ptx") for r in load_toml("kb/instructions.toml").get("instruction", [])]
    intrinsics = load_toml("kb/intrinsics.toml")
    rows += [_requirement(r, "intrinsic") for r in intrinsics.get("intrinsic", [])]
    rows += [_requirement(r, "arch-tag") for r in intrinsics.get("arch_tag", [])]
    devices = load_toml("kb/devices.toml")
    profiles = sorted((_profile(d) for d in devices["device"]), key=lambda p: p.cc)
    reads = frozenset(name for row in devices.get("limit_read", []) for name in row["names"])
    return KnowledgeBase(tuple(rows), tuple(profiles), load_libraries(), reads)
