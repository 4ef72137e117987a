"""The targets a JIT spec's build is pinned to, read from its flag list: each `-gencode` option says
what the compiled code holds (SASS for one target, or PTX), so which GPUs can run it follows from
the rules of rules/kb/targets.toml (`judge/pinned.py`). FlashInfer pins its specs through module
constants (`sm100a_nvcc_flags`) and dicts of them keyed at run time (`NVCC_FLAGS[module.target]`):
a key not read here may be any of the dict's keys, so every entry counts."""

from __future__ import annotations

import re
from dataclasses import dataclass

from archlint.gates.capability_values import Scope
from archlint.gates.detect import flag_lists_of
from archlint.gates.flagset import flag_set, parse_arch_string

_GENCODE_RE = re.compile(r"""^(?:(?:-gencode|--generate-code)[= ])?arch=["']?compute_\w+,code=["']?\[?([\w,]+)\]?["']?$""")
_ARCH_RE = re.compile(r"^(?:-arch|--gpu-architecture)[= ](sm_|compute_)(\w+)$")
_PREPROCESSOR = ("-D", "-U", "-I")


@dataclass(frozen=True)
class SpecPins:
    codes: tuple[str, ...]  # every target code any build can hold, as `code=` spells it
    path: str  # where the spec call is written
    line: int
    keyword: str  # the flag keyword, 'extra_cuda_cflags'
    flag_gate: bool  # gate detection reads this list too, so it is a gate of its own there


def spec_pins(index, qualname: str) -> SpecPins | None:
    """What the flag lists the JIT spec calls in function `qualname` pass pin every build to; None
    where the function makes no such call, or a list holds a part not read (it may pass others)."""
    function = index.functions.get(qualname)
    module = index.module_of_path.get(function.path, "") if function is not None else ""
    facts = index.modules.get(module) if module else None
    if facts is None:
        return None
    local = qualname[len(module) + 1:]
    codes: list[str] = []
    found: SpecPins | None = None
    for call in facts.calls.having(lambda _callee, function: function == local):
        for keyword, value in call.kwargs().items():
            if keyword not in index.idioms.device_flag_keywords:
                continue
            scope = Scope(module, local, call.span.line)
            flags = flag_set(index, None, value, scope, tables=True)
            read = None if flags.opaque or flags.nvcc_call else build_codes(flags.strings, index.idioms)
            if read is None or _added_elsewhere(index, module, qualname, call.span.line, keyword, flags.strings):
                return None
            codes += read
            if found is None:
                plain = flag_set(index, None, value, scope)  # as gate detection reads it
                found = SpecPins((), function.path, call.span.line, keyword, bool(plain.sure | plain.maybe))
    if found is None or not codes:
        return None
    return SpecPins(tuple(dict.fromkeys(codes)), found.path, found.line, found.keyword, found.flag_gate)


def _added_elsewhere(index, module: str, qualname: str, line: int, keyword: str, strings: frozenset) -> bool:
    """Whether the function adds target flags to the list that the expression alone does not hold
    (`flags += [...]` under a condition, `flags.append(...)`): the list as extraction read it, through
    every addition, names a target string the expression's reading lacks."""
    for flags in flag_lists_of(index, module, qualname):
        if flags.line == line and flags.keyword == keyword:
            added = {value for value in flags.values + flags.maybe
                     if parse_arch_string(value, "", index.idioms, in_flag_list=True)}
            if not added <= strings:
                return True
    return False


def build_codes(strings, idioms) -> tuple[str, ...] | None:
    """The target codes the flag strings compile for (`-gencode=arch=compute_100a,code=sm_100a`:
    `sm_100a`; `-arch=sm_90`: `sm_90` and its PTX `compute_90`); None where a string names a target
    in a form not read here."""
    codes: list[str] = []
    for text in sorted(strings):
        if text.startswith(_PREPROCESSOR) or not parse_arch_string(text, "", idioms, in_flag_list=True):
            continue
        gencode, arch = _GENCODE_RE.match(text), _ARCH_RE.match(text)
        if gencode is not None:
            codes += [code for code in gencode.group(1).split(",") if code]
        elif arch is not None:
            kind, name = arch.groups()
            codes += [f"compute_{name}"] if kind == "compute_" else [f"sm_{name}", f"compute_{name}"]
        else:
            return None
    return tuple(codes)
