"""The byte prefilter: which Python files can hold a gate, a flag list, a capability call or a
source name, tested on the file's bytes with `in` before anything is parsed.

A file passes when it spells a name of the gate vocabulary (`rules/idioms/`: arch-flags calls, gate
decorators, capability and properties calls, suffix functions, flag keywords, writer calls, arch
list names), a string ending in a CUDA or template suffix (`"x.cu"`, `f"{name}.jinja"`), a `-D`
string, or a target name (`sm_90`, `compute_100`, `"90a"` beside a flag-list name). A file that
passes none of them holds none of what those readers look for; it is read only when linking needs it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from archlint.knowledge.idioms import Idioms
from archlint.knowledge.languages import CUDA_EXTENSIONS, TEMPLATE_SUFFIXES

_TARGETS = (re.compile(rb"sm_\d\d"), re.compile(rb"compute_\d\d"))
_BARE_TARGET = re.compile(rb"[\"']\d{2,3}[af][\"']")


@dataclass(frozen=True)
class Markers:
    words: tuple[bytes, ...]  # any of them anywhere
    list_words: tuple[bytes, ...]  # names that make a bare "90a" string a target list entry

    def hold(self, data: bytes) -> bool:
        """The bytes may hold something a gate, a flag list or a source reference is read from."""
        if any(word in data for word in self.words):
            return True
        if any(pattern.search(data) for pattern in _TARGETS):
            return True
        return any(word in data for word in self.list_words) and _BARE_TARGET.search(data) is not None


@lru_cache(maxsize=4)
def markers(idioms: Idioms) -> Markers:
    names = {call.name for call in idioms.arch_flags_calls}
    names |= idioms.gate_decorators | idioms.suffix_functions | idioms.properties_calls | idioms.flag_keywords
    names |= idioms.writer_calls | set(idioms.capability_calls) | set(idioms.arch_list_names)
    strings = {suffix + quote for suffix in (*CUDA_EXTENSIONS, *TEMPLATE_SUFFIXES) for quote in ('"', "'")}
    strings |= {'"-D', "'-D"}
    words = tuple(sorted(word.encode("utf-8") for word in names | strings))
    return Markers(words, tuple(sorted(word.encode("utf-8") for word in idioms.flag_list_names)))
