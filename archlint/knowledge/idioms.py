"""The gate vocabulary: the names projects spell architecture gates and JIT builds with.

Rows live in `rules/idioms/*.toml`, one file per project or library (`flashinfer.toml`,
`pytorch.toml`, ...). Each row lists `names` and the `source` they mirror: which project, file
or API. The files are merged into one `Idioms`; a project whose gates use names archlint does
not know adds rows or a file, not code. Names of the Python syntax itself and patterns of target
strings (`sm_90a`) stay in code.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path
from typing import TypeGuard

from archlint.knowledge.resources import rules_dir

__all__ = ["ArchFlagsCall", "Idioms", "IdiomsError", "TABLES", "load_idioms", "read_idioms"]


class IdiomsError(Exception):
    """A malformed idioms file; the message names the file, the table and the row. Not a ValueError:
    it is no fault of the file being scanned (which extraction reports and moves past), and stops the scan."""


@dataclass(frozen=True)
class ArchFlagsCall:
    """A call returning the build's -gencode flags for the majors its keyword (or first argument) lists."""

    name: str
    majors_keyword: str


@dataclass(frozen=True)
class Idioms:
    """Every table of `rules/idioms/`, merged. How each is matched is said beside it."""

    arch_flags_calls: tuple[ArchFlagsCall, ...]  # the callee's last dotted part
    suffix_functions: frozenset[str]  # a scanned function's name: the normaliser that picks a target's suffix
    gate_decorators: frozenset[str]  # the decorator's last dotted part
    capability_calls: tuple[str, ...]  # the callee's last dotted part: (major, minor) of the device
    properties_calls: frozenset[str]  # the callee's last dotted part: an object with .major and .minor
    wrapper_calls: frozenset[str]  # `w(...)(f)` with w's last dotted part here evaluates as f
    flag_keywords: frozenset[str]  # keywords a build call takes compiler flags through
    device_flag_keywords: frozenset[str]  # those whose list goes to the device compiler
    nvcc_options: tuple[str, ...]  # substrings that make a string a target flag
    flag_list_names: tuple[str, ...]  # substrings of the names near a string that mark a flag list
    arch_list_names: tuple[str, ...]  # substrings of a string, or the names near it, that mark a dotted arch list
    writer_calls: frozenset[str]  # the callee's last dotted part: `w(path, text)` writes a file
    identity_calls: frozenset[str]  # the callee's last dotted part: `c(p)` names the path p
    identity_methods: frozenset[str]  # `p.m()` names the path p
    join_calls: tuple[str, ...]  # ends of a dotted callee: `c(root, "x.cu")` joins path parts
    path_calls: tuple[str, ...]  # ends of a dotted callee: a value they build is a file path
    toolkit_version_calls: frozenset[str]  # the callee's last dotted part: `c("12.8")` tests the CUDA toolkit is at least 12.8
    toolkit_version_value_calls: frozenset[str]  # the callee's last dotted part: `c()` is the CUDA toolkit's version
    # (the callee's last dotted part, how `p(90)` / `p((9, 0))` relates the device's capability to
    # its argument: "at_least", "exactly" or "same_major")
    capability_predicates: tuple[tuple[str, str], ...]
    capability_value_calls: frozenset[str]  # the callee's last dotted part: `C(9, 0)` is the capability 9.0
    capability_int_methods: frozenset[str]  # `cap.m()` is major * 10 + minor
    # (a method's name, the form its first parameter takes the device's capability in: "pair"
    # ((major, minor), with .major and .minor) or "int" (major * 10 + minor))
    capability_methods: tuple[tuple[str, str], ...]
    # (the callee's last dotted part, the module-level dict literals that map an attribute of the
    # object it returns to the name of the function whose call gives the attribute's value)
    attribute_tables: tuple[tuple[str, tuple[str, ...]], ...]
    env_default_calls: tuple[str, ...]  # ends of a dotted callee: `c("NAME", default)` reads an environment variable
    inert_calls: frozenset[str]  # a callee's first dotted part, or the whole callee: a call that picks no path (logging)

    @cached_property
    def predicate_relation(self) -> Mapping[str, str]:
        return dict(self.capability_predicates)

    @cached_property
    def method_form(self) -> Mapping[str, str]:
        return dict(self.capability_methods)

    @cached_property
    def table_names(self) -> Mapping[str, tuple[str, ...]]:
        return dict(self.attribute_tables)
    # CMake build lists (command names compared lowercased, as CMake does)
    cmake_arch_list_calls: frozenset[str] = frozenset()  # `c(OUT "SRC" "${TGT}")`: vLLM's loose intersection
    cmake_gencode_calls: tuple[tuple[str, str, str], ...] = ()  # (name, sources keyword, archs keyword)
    cmake_extension_calls: tuple[tuple[str, str, str], ...] = ()  # (name, sources keyword, flags keyword)
    cmake_build_variables: tuple[tuple[str, str], ...] = ()  # (variable, value) a CUDA build of the project has
    cmake_toolkit_variables: frozenset[str] = frozenset()  # variables holding the CUDA toolkit's version

    def arch_flags_call(self, callee: str) -> ArchFlagsCall | None:
        """The arch-flags call a dotted callee names, if any (asked of every call in a scan)."""
        return self._arch_flags_by_name.get(callee.rpartition(".")[2])

    @cached_property
    def _arch_flags_by_name(self) -> Mapping[str, ArchFlagsCall]:
        return {call.name: call for call in reversed(self.arch_flags_calls)}  # the first listed wins


# Table name -> the keys its rows hold besides `names` and `source`, with their types.
_EXTRA_KEYS: Mapping[str, Mapping[str, type]] = {
    "arch_flags_call": {"majors_keyword": str},
    "suffix_function": {},
    "gate_decorator": {},
    "capability_call": {},
    "properties_call": {},
    "wrapper_call": {},
    "flag_keyword": {"device": bool},
    "nvcc_option": {},
    "flag_list_name": {},
    "arch_list_name": {},
    "writer_call": {},
    "identity_call": {},
    "identity_method": {},
    "join_call": {},
    "path_call": {},
    "toolkit_version_call": {},
    "toolkit_version_value_call": {},
    "cmake_arch_list_call": {},
    "cmake_gencode_call": {"sources_keyword": str, "archs_keyword": str},
    "cmake_extension_call": {"sources_keyword": str, "flags_keyword": str},
    "cmake_build_variable": {"value": str},
    "cmake_toolkit_variable": {},
    "capability_predicate": {"relation": str},
    "capability_value_call": {},
    "capability_int_method": {},
    "capability_method": {"form": str},
    "attribute_table": {"tables": list},
    "inert_call": {},
    "env_default_call": {},
}
# Keys whose value is one of a few words.
_CHOICES: Mapping[str, tuple[str, ...]] = {
    "relation": ("at_least", "exactly", "same_major"),
    "form": ("pair", "int"),
}
TABLES = tuple(_EXTRA_KEYS)


@dataclass(frozen=True)
class _Row:
    path: Path
    table: str
    number: int  # 1-based, among the rows of its table in its file
    names: tuple[str, ...]
    extra: Mapping[str, object]

    def where(self) -> str:
        return _where(self.path, self.table, self.number)


def _where(path: Path, table: str, number: int) -> str:
    return f"{path}: [[{table}]] row {number}"


@lru_cache(maxsize=1)
def load_idioms() -> Idioms:
    """The vocabulary shipped in rules/idioms/."""
    return read_idioms(rules_dir() / "idioms")


def read_idioms(folder: Path) -> Idioms:
    """Every `*.toml` in `folder`, in name order, merged and checked; IdiomsError when malformed."""
    paths = sorted(folder.glob("*.toml"))
    if not paths:
        raise IdiomsError(f"{folder}: no idioms files (*.toml)")
    rows = [row for path in paths for row in _rows(path, _parse(path))]
    _check_unique(rows)
    return _merge(folder, rows)


def _parse(path: Path) -> dict:
    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except tomllib.TOMLDecodeError as error:
        raise IdiomsError(f"{path}: not valid TOML: {error}") from None


def _rows(path: Path, data: Mapping[str, object]) -> list[_Row]:
    rows = []
    for table, entries in data.items():
        if table not in _EXTRA_KEYS:
            raise IdiomsError(f"{path}: unknown table `{table}`; known: {', '.join(TABLES)}")
        if not isinstance(entries, list) or not all(isinstance(entry, dict) for entry in entries):
            raise IdiomsError(f"{path}: `{table}` must be written as [[{table}]] tables")
        rows += [_row(path, table, number, entry) for number, entry in enumerate(entries, 1)]
    return rows


def _row(path: Path, table: str, number: int, entry: Mapping[str, object]) -> _Row:
    where = _where(path, table, number)
    extras = _EXTRA_KEYS[table]
    expected = ("names", "source", *extras)
    unknown = sorted(set(entry) - set(expected))
    if unknown:
        raise IdiomsError(f"{where}: unknown key `{unknown[0]}`; a row holds {', '.join(expected)}")
    names = entry.get("names")
    if not _is_name_list(names):
        raise IdiomsError(f"{where}: `names` must be a non-empty list of names without spaces")
    source = entry.get("source")
    if not isinstance(source, str) or not source.strip():
        raise IdiomsError(f"{where}: `source` must say which project, file or API the names mirror")
    for key, kind in extras.items():
        value = entry.get(key)
        if not isinstance(value, kind) or (kind is list and not _is_name_list(value)):
            raise IdiomsError(f"{where}: `{key}` must be a {_KIND_WORDS[kind]}")
        if key in _CHOICES and value not in _CHOICES[key]:
            raise IdiomsError(f"{where}: `{key}` must be one of {', '.join(_CHOICES[key])}")
    return _Row(path, table, number, tuple(names), {key: entry[key] for key in extras})


_KIND_WORDS = {str: "string", bool: "boolean (true or false)", list: "non-empty list of names"}


def _is_name_list(value: object) -> TypeGuard[list[str]]:
    return (isinstance(value, list) and bool(value)
            and all(isinstance(name, str) and name and not any(c.isspace() for c in name) for name in value))


def _check_unique(rows: Sequence[_Row]) -> None:
    """A name listed twice in one table is a mistake (two sources, maybe two meanings): refused."""
    seen: dict[tuple[str, str], _Row] = {}
    for row in rows:
        for name in row.names:
            first = seen.setdefault((row.table, name), row)
            if first is not row:
                raise IdiomsError(f"{row.where()}: `{name}` is already listed at {first.where()}")


def _merge(folder: Path, rows: Sequence[_Row]) -> Idioms:
    by_table: dict[str, list[_Row]] = {table: [] for table in TABLES}
    for row in rows:
        by_table[row.table].append(row)
    missing = [table for table, found in by_table.items() if not found]
    if missing:
        raise IdiomsError(f"{folder}: no [[{missing[0]}]] rows in any file; every table needs at least one")

    def names(table: str) -> tuple[str, ...]:
        return tuple(name for row in by_table[table] for name in row.names)

    return Idioms(
        arch_flags_calls=tuple(ArchFlagsCall(name, str(row.extra["majors_keyword"]))
                               for row in by_table["arch_flags_call"] for name in row.names),
        suffix_functions=frozenset(names("suffix_function")),
        gate_decorators=frozenset(names("gate_decorator")),
        capability_calls=names("capability_call"),
        properties_calls=frozenset(names("properties_call")),
        wrapper_calls=frozenset(names("wrapper_call")),
        flag_keywords=frozenset(names("flag_keyword")),
        device_flag_keywords=frozenset(name for row in by_table["flag_keyword"] if row.extra["device"]
                                       for name in row.names),
        nvcc_options=names("nvcc_option"),
        flag_list_names=names("flag_list_name"),
        arch_list_names=names("arch_list_name"),
        writer_calls=frozenset(names("writer_call")),
        identity_calls=frozenset(names("identity_call")),
        identity_methods=frozenset(names("identity_method")),
        join_calls=names("join_call"),
        path_calls=names("path_call"),
        toolkit_version_calls=frozenset(names("toolkit_version_call")),
        toolkit_version_value_calls=frozenset(names("toolkit_version_value_call")),
        capability_predicates=_by_name(by_table["capability_predicate"], "relation"),
        capability_value_calls=frozenset(names("capability_value_call")),
        capability_int_methods=frozenset(names("capability_int_method")),
        capability_methods=_by_name(by_table["capability_method"], "form"),
        attribute_tables=tuple((name, tuple(str(t) for t in row.extra["tables"]))  # type: ignore[attr-defined]
                               for row in by_table["attribute_table"] for name in row.names),
        inert_calls=frozenset(names("inert_call")),
        env_default_calls=names("env_default_call"),
        cmake_arch_list_calls=frozenset(name.lower() for name in names("cmake_arch_list_call")),
        cmake_gencode_calls=tuple((name.lower(), str(row.extra["sources_keyword"]), str(row.extra["archs_keyword"]))
                                  for row in by_table["cmake_gencode_call"] for name in row.names),
        cmake_extension_calls=tuple((name.lower(), str(row.extra["sources_keyword"]), str(row.extra["flags_keyword"]))
                                    for row in by_table["cmake_extension_call"] for name in row.names),
        cmake_build_variables=tuple((name, str(row.extra["value"])) for row in by_table["cmake_build_variable"]
                                    for name in row.names),
        cmake_toolkit_variables=frozenset(names("cmake_toolkit_variable")),
    )


def _by_name(rows: Sequence[_Row], key: str) -> tuple[tuple[str, str], ...]:
    return tuple((name, str(row.extra[key])) for row in rows for name in row.names)
