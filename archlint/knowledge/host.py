"""Host-code vocabulary (rules/kb/host.toml): the macros that check or refuse a GPU, where the
compute capability is read from, the macros that register ops, and helpers that remap capabilities."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from archlint.knowledge.prebuilt import load_prebuilt
from archlint.knowledge.resources import load_toml


@dataclass(frozen=True)
class HostKnowledge:
    check_macros: frozenset[str]  # throw unless their first argument holds (kb/prebuilt.toml's too)
    refusal_macros: frozenset[str]  # the same, written `MACRO(false, ...)` to end a dispatch ladder
    attributes: tuple[tuple[str, str], ...]  # (device attribute, 'major' | 'minor')
    fields: tuple[tuple[str, str], ...]  # (device-properties field, 'major' | 'minor')
    registrations: tuple[tuple[str, str], ...]  # (macro, 'library' | 'impl' | 'pybind')
    namespace_macros: frozenset[str]
    remaps: tuple[tuple[str, int, int], ...]  # (helper name, capability, what it reports instead)
    op_roots: tuple[str, ...] = ()  # the Python objects custom ops are called through ('torch.ops')
    python_libraries: frozenset[str] = frozenset()  # calls defining an op namespace in Python ('Library')

    @property
    def all_checks(self) -> frozenset[str]:
        return self.check_macros | self.refusal_macros

    def registration(self, macro: str) -> str:
        return dict(self.registrations).get(macro, "")

    def remap(self, helper: str) -> dict[int, int]:
        return {source: to for name, source, to in self.remaps if name == helper}


def _names(rows: list[dict]) -> frozenset[str]:
    return frozenset(name for row in rows for name in row["names"])


def _pairs(rows: list[dict], key: str) -> tuple[tuple[str, str], ...]:
    return tuple((name, row[key]) for row in rows for name in row["names"])


@lru_cache(maxsize=1)
def load_host() -> HostKnowledge:
    data = load_toml("kb/host.toml")
    return HostKnowledge(
        check_macros=_names(data.get("check_macro", [])) | load_prebuilt().check_macros,
        refusal_macros=_names(data.get("refusal_macro", [])),
        attributes=_pairs(data.get("capability_attribute", []), "field"),
        fields=_pairs(data.get("capability_field", []), "field"),
        registrations=_pairs(data.get("registration", []), "kind"),
        namespace_macros=_names(data.get("namespace_macro", [])),
        remaps=tuple((row["helper"], int(row["from"]), int(row["to"])) for row in data.get("remap", [])),
        op_roots=tuple(sorted(_names(data.get("op_root", [])))),
        python_libraries=_names(data.get("python_library", [])),
    )
