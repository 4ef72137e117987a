"""The byte prefilter: which Python files can hold a gate, a flag list, a capability call or a
source name, tested on the file's bytes with `in` before anything is parsed.

A file passes when it spells a name of the gate vocabulary (`rules/idioms/`: arch-flags calls, gate
decorators, capability and properties calls, suffix functions, flag keywords, writer calls, arch
list names), a string ending in a CUDA or template suffix (`"x.cu"`, `f"{name}.jinja"`), a `-D`
string, or a target name where it can be a build flag: beside an nvcc option (`-gencode`), or
a string that is only a target (`"sm_90a"`, `"90a"`) beside a flag-list name (`cflags`). A file that
passes none of them holds none of what those readers look for; it is read only when linking needs it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from archlint.knowledge.cutlass import load_cutlass
from archlint.knowledge.idioms import Idioms
from archlint.knowledge.languages import CUDA_EXTENSIONS, TEMPLATE_SUFFIXES

_TARGETS = (re.compile(rb"sm_\d\d"), re.compile(rb"compute_\d\d"))
_WHOLE_TARGETS = (re.compile(rb"[\"'](?:sm|compute)_\d{2,3}[af]?[\"']"), re.compile(rb"[\"']\d{2,3}[af][\"']"))


@dataclass(frozen=True)
class Markers:
    words: tuple[bytes, ...]  # any of them anywhere
    options: tuple[bytes, ...]  # nvcc options: a string holding one and a target name is a build flag
    list_words: tuple[bytes, ...]  # names that make a string that is only a target ("sm_90a", "90a") a list entry

    def hold(self, data: bytes) -> bool:
        """The bytes may hold something a gate, a flag list or a source reference is read from."""
        if any(word in data for word in self.words):
            return True
        if any(option in data for option in self.options) and any(p.search(data) for p in _TARGETS):
            return True
        return any(word in data for word in self.list_words) and any(p.search(data) for p in _WHOLE_TARGETS)


@lru_cache(maxsize=4)
def markers(idioms: Idioms) -> Markers:
    names = {call.name for call in idioms.arch_flags_calls}
    names |= idioms.gate_decorators | idioms.suffix_functions | idioms.properties_calls | idioms.flag_keywords
    names |= idioms.writer_calls | set(idioms.capability_calls) | set(idioms.arch_list_names)
    strings = {suffix + quote for suffix in (*CUDA_EXTENSIONS, *TEMPLATE_SUFFIXES) for quote in ('"', "'")}
    strings |= {'"-D', "'-D"}
    names |= load_cutlass().tile_lists  # a CUTLASS generator's tile list (rules/kb/cutlass.toml)
    words = tuple(sorted(word.encode("utf-8") for word in names | strings))
    return Markers(words, tuple(option.encode("utf-8") for option in idioms.nvcc_options),
                   tuple(sorted(word.encode("utf-8") for word in idioms.flag_list_names)))
