"""The targets a JIT spec's build is pinned to, read from its flag list: each `-gencode` option says
what the compiled code holds (SASS for one target, or PTX), so which GPUs can run it follows from
the rules of rules/kb/targets.toml (`judge/pinned.py`). FlashInfer pins its specs through module
constants (`sm100a_nvcc_flags`) and dicts of them keyed at run time (`NVCC_FLAGS[module.target]`):
a key not read here may be any of the dict's keys, so every entry counts."""

from __future__ import annotations

import re

from archlint.gates.flagset import flag_set, parse_arch_string
from archlint.gates.capability import Scope

_GENCODE_RE = re.compile(r"""^(?:(?:-gencode|--generate-code)[= ])?arch=["']?compute_\w+,code=["']?\[?([\w,]+)\]?["']?$""")
_ARCH_RE = re.compile(r"^(?:-arch|--gpu-architecture)[= ](sm_|compute_)(\w+)$")
_PREPROCESSOR = ("-D", "-U", "-I")


def spec_pins(index, qualname: str) -> tuple[tuple[str, ...], str, int, str] | None:
    """(codes, path, line, keyword) for the flag lists the JIT spec calls in function `qualname`
    pass: every target code any of its builds can hold, and where the first list is written; None
    where the function makes no such call, or a list holds a part not read (it may pass others)."""
    function = index.functions.get(qualname)
    module = index.module_of_path.get(function.path, "") if function is not None else ""
    facts = index.modules.get(module) if module else None
    if facts is None:
        return None
    local = qualname[len(module) + 1:]
    codes: list[str] = []
    where: tuple[int, str] | None = None
    for call in facts.calls:
        if call.function != local:
            continue
        for keyword, value in call.kwargs().items():
            if keyword not in index.idioms.device_flag_keywords:
                continue
            flags = flag_set(index, None, value, Scope(module, local, call.span.line), tables=True)
            read = None if flags.opaque or flags.nvcc_call else build_codes(flags.strings, index.idioms)
            if read is None:
                return None
            codes += read
            where = where or (call.span.line, keyword)
    if where is None or not codes:
        return None
    return tuple(dict.fromkeys(codes)), function.path, where[0], where[1]


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
