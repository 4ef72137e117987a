"""The loose intersection of two CUDA architecture lists, as vLLM's `cmake/utils.cmake` computes it
(`cuda_archs_loose_intersection(OUT SRC TGT)`), step for step:

1. `X.Y+PTX` in SRC: matched as `X.Y`, and it may serve a target of any later major; `+PTX` is put
   back on the result.
2. `X.Ya` / `X.Yf` in SRC: taken out of SRC; kept (as written) when TGT lists `X.Y`, else as TGT's
   `X.Ya` or `X.Yf` when it lists one; an `f` entry else takes the first TGT entry of its major
   (the target's own spelling). The TGT entry matched is used up.
3. `X.Ya` / `X.Yf` left in TGT whose `X.Y` is in SRC: kept with TGT's suffix, both used up.
4. Every TGT entry left takes the highest SRC entry not above it of the same major (or a `+PTX`
   one of any major).
"""

from __future__ import annotations

import re

from archlint.lang.cmake.values import version_compare

_SUFFIX_RE = re.compile(r"[af]$")


def loose_intersection(src: list[str], tgt: list[str]) -> list[str]:
    src = list(dict.fromkeys(src))
    ptx: list[str] = []
    for arch in list(src):
        if arch.endswith("+PTX"):
            base = arch.replace("+PTX", "")
            ptx.append(base)
            src = [a for a in src if a != arch] + [base]
    ptx = list(dict.fromkeys(ptx))
    src = list(dict.fromkeys(src))
    remaining = list(tgt)
    out: list[str] = []
    for arch in list(src):
        if not _SUFFIX_RE.search(arch):
            continue
        src = [a for a in src if a != arch]
        base = arch[:-1]
        if base in tgt:  # vLLM tests the original target list here
            remaining = [a for a in remaining if a != base]
            out.append(arch)
        elif base + "a" in remaining:
            remaining = [a for a in remaining if a != base + "a"]
            out.append(base + "a")
        elif base + "f" in remaining:
            remaining = [a for a in remaining if a != base + "f"]
            out.append(base + "f")
        elif arch.endswith("f"):
            major = _major(base)
            for target in remaining:
                if _major(_SUFFIX_RE.sub("", target)) == major:
                    remaining = [a for a in remaining if a != target]
                    out.append(target)
                    break
    for arch in list(remaining):
        if _SUFFIX_RE.search(arch) and arch[:-1] in src:
            remaining = [a for a in remaining if a != arch]
            src = [a for a in src if a != arch[:-1]]
            out.append(arch)
    src = _natural_sorted(src)
    for target in remaining:
        chosen = ""
        for arch in src:
            if version_compare(arch, target) <= 0:
                if arch in ptx or _major(arch) == _major(target):
                    chosen = arch
            else:
                break
        if chosen:
            out.append(chosen)
    out = list(dict.fromkeys(out))
    return [f"{arch}+PTX" if arch in ptx else arch for arch in out]


def _major(arch: str) -> str:
    match = re.match(r"^([0-9]+)\..*$", arch)
    return match.group(1) if match else arch


def _natural_sorted(items: list[str]) -> list[str]:
    """`list(SORT ... COMPARE NATURAL)`: runs of digits compared as numbers."""
    def key(item: str) -> list[tuple[int, int | str]]:
        return [(0, int(part)) if part.isdigit() else (1, part) for part in re.findall(r"\d+|\D+", item)]
    return sorted(items, key=key)


def arch_of(name: str) -> str:
    """An nvcc target name as a CMake arch list entry: `sm_120a` -> `12.0a`, `sm_90` -> `9.0`."""
    match = re.fullmatch(r"(?:sm|compute)_(\d+)(\d)([af]?)", name)
    if match is None:
        raise ValueError(f"not a target name: {name!r}")
    return f"{int(match.group(1))}.{match.group(2)}{match.group(3)}"


def cc_of(arch: str) -> int | None:
    """The compute capability a CMake arch entry builds: `12.0a+PTX` -> 120; None if unreadable."""
    match = re.fullmatch(r"(\d+)\.(\d)[af]?(?:\+PTX)?", arch)
    return int(match.group(1)) * 10 + int(match.group(2)) if match else None
