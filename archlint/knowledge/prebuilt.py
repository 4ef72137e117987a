"""Prebuilt kernels: the CUDA calls that load device code at run time, the host-only headers fetched
with prebuilt cubins, and the macros host code checks a GPU with (rules/kb/prebuilt.toml)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from archlint.knowledge.resources import load_toml

__all__ = ["HostHeader", "PrebuiltKnowledge", "load_prebuilt"]


@dataclass(frozen=True)
class HostHeader:
    """A header holding only host code: left unresolved it loses nothing arch-specific; with
    `runs_prebuilt` a unit that includes it runs prebuilt kernels."""

    id: str
    match: str
    summary: str
    runs_prebuilt: bool
    source: str


@dataclass(frozen=True)
class PrebuiltKnowledge:
    headers: tuple[HostHeader, ...]
    loaders: frozenset[str]  # CUDA calls that load device code at run time
    check_macros: frozenset[str]  # throw unless their first argument holds
    error_macros: frozenset[str]  # throw

    def host_header(self, include: str) -> HostHeader | None:
        """The first row whose pattern the include (as written) matches."""
        return _host_header(self, include)

    @property
    def loader_call(self) -> re.Pattern[bytes]:
        """A call of a loader; group 1 its name."""
        return _call_of(self.loaders)

    @property
    def check_call(self) -> re.Pattern[bytes]:
        """A call of a check macro; group 1 its name."""
        return _call_of(self.check_macros)

    @property
    def error_report(self) -> re.Pattern[bytes]:
        """A run-time error report: `throw`, or a call of an error macro."""
        return _error_report(self.error_macros)


@lru_cache(maxsize=8)
def _call_of(names: frozenset[str]) -> re.Pattern[bytes]:
    ordered = sorted(names, key=len, reverse=True)
    return re.compile(rb"(?<![\w])(" + b"|".join(re.escape(n.encode()) for n in ordered) + rb")\s*\(")


@lru_cache(maxsize=4)
def _error_report(errors: frozenset[str]) -> re.Pattern[bytes]:
    return re.compile(rb"\bthrow\b|" + _call_of(errors).pattern)


@lru_cache(maxsize=4096)
def _host_header(knowledge: PrebuiltKnowledge, include: str) -> HostHeader | None:
    return next((row for row in knowledge.headers if re.search(row.match, include)), None)


def _names(rows: list[dict]) -> frozenset[str]:
    return frozenset(name for row in rows for name in row["names"])


@lru_cache(maxsize=1)
def load_prebuilt() -> PrebuiltKnowledge:
    data = load_toml("kb/prebuilt.toml")
    headers = tuple(HostHeader(row["id"], row["match"], row["summary"], bool(row["runs_prebuilt"]), row["source"])
                    for row in data.get("host_header", []))
    return PrebuiltKnowledge(headers, _names(data.get("loader", [])), _names(data.get("check_macro", [])),
                             _names(data.get("error_macro", [])))
