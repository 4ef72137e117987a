"""The arch model: compilation targets (sm_XY, sm_XYa, sm_XYf) and the macros nvcc defines for them."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from archlint.knowledge.resources import load_toml

_TARGET_RE = re.compile(r"^(?:sm_|compute_)?(\d{2,3})([af]?)$")


class TargetError(ValueError):
    """A target spelling archlint does not accept."""


@dataclass(frozen=True, order=True)
class Target:
    cc: int  # 90, 100, 120 ...
    suffix: str  # '' | 'a' | 'f'

    @property
    def name(self) -> str:
        return f"sm_{self.cc}{self.suffix}"

    @property
    def major(self) -> int:
        return self.cc // 10

    @property
    def minor(self) -> int:
        return self.cc % 10

    @property
    def cuda_arch(self) -> int:
        return self.major * 100 + self.minor * 10

    def __str__(self) -> str:
        return self.name

    def device_macros(self) -> dict[str, int]:
        """Macros nvcc 13.0 defines on this target's device pass (rules/kb/targets.toml)."""
        macros = {"__CUDA_ARCH__": self.cuda_arch, "__CUDACC__": 1, "__NVCC__": 1}
        if self.suffix == "a":
            macros["__CUDA_ARCH_SPECIFIC__"] = self.cuda_arch
            macros["__CUDA_ARCH_FAMILY_SPECIFIC__"] = self.cuda_arch
            macros[f"__CUDA_ARCH_FEAT_SM{self.cc}_ALL"] = 1
        elif self.suffix == "f":
            macros["__CUDA_ARCH_FAMILY_SPECIFIC__"] = self.cuda_arch
        return macros

    def first_cuda(self) -> tuple[int, ...] | None:
        """The first CUDA toolkit release whose nvcc builds for this target (rules/kb/targets.toml):
        any build for it uses that toolkit or a newer one. None when the knowledge base does not say."""
        found = load_toml("kb/targets.toml")["first_cuda"].get(self.name)
        return tuple(int(part) for part in found.split(".")) if isinstance(found, str) else None

    def family(self) -> tuple[int, ...]:
        families = load_toml("kb/targets.toml")["families"]
        return tuple(families.get(str(self.cc), [self.cc]))


# Macros whose presence or value depends on the target: anything named here that a target does
# not define is *known* undefined for it (not unknown).
ARCH_MACRO_RE = re.compile(r"^__CUDA_ARCH(__|_SPECIFIC__|_FAMILY_SPECIFIC__|_FEAT_SM\d+_ALL)$")


def cc_text(cc: int) -> str:
    """A compute capability as people write it: 120 -> `12.0`."""
    return f"{cc // 10}.{cc % 10}"


def parse_target(text: str) -> Target:
    match = _TARGET_RE.match(text.strip().lower())
    if not match:
        raise TargetError(f"not a target: {text!r} (expected e.g. sm_90a, sm_100f, sm_120)")
    cc, suffix = int(match.group(1)), match.group(2)
    if cc not in known_ccs():
        raise TargetError(f"unknown compute capability in {text!r}; known: {', '.join(map(str, known_ccs()))}")
    if suffix == "a" and cc < 90:
        raise TargetError(f"{text!r}: arch-specific 'a' targets exist from sm_90a on")
    if suffix == "f" and cc < 100:
        raise TargetError(f"{text!r}: family-specific 'f' targets exist from sm_100f on")
    return Target(cc, suffix)


@lru_cache(maxsize=1)
def known_ccs() -> tuple[int, ...]:
    return tuple(load_toml("kb/targets.toml")["ccs"])


def default_targets() -> tuple[Target, ...]:
    return tuple(parse_target(name) for name in load_toml("kb/targets.toml")["default_targets"])


def targets_for_major(major: int) -> tuple[Target, ...]:
    """Every plain target of a major version (a gate on majors admits all of them)."""
    return tuple(Target(cc, "") for cc in known_ccs() if cc // 10 == major)


def arch_order(name: str) -> tuple[int, str, str]:
    """Sort key for target names, oldest first: sm_80 < sm_90a < sm_110a < sm_120a (not as strings,
    which put sm_110a before sm_80). A name that is not a target sorts last, by its text."""
    match = _TARGET_RE.match(name.strip().lower())
    if not match:
        return (1 << 30, "", name)
    return (int(match.group(1)), match.group(2), name)


def sorted_targets(names: Iterable[str]) -> tuple[str, ...]:
    """Target names in arch order, each once."""
    return tuple(sorted(set(names), key=arch_order))


def toolkit_text(version: tuple[int, ...]) -> str:
    return ".".join(map(str, version))


def parse_toolkit(text: str) -> tuple[int, ...]:
    """A CUDA toolkit version as written (`12.8`, `13.0`): a tuple of ints. Raises TargetError for
    anything else, or for a version older than every one the knowledge base knows a target of."""
    parts = text.strip().split(".")
    if not 1 <= len(parts) <= 3 or not all(part.isdigit() for part in parts):
        raise TargetError(f"not a CUDA toolkit version: {text!r} (expected e.g. 12.8 or 13.0)")
    version = tuple(int(part) for part in parts)
    if version < min(known_toolkits()):
        raise TargetError(f"CUDA {text} is older than every toolkit archlint knows (first: {toolkit_text(min(known_toolkits()))})")
    return version


@lru_cache(maxsize=1)
def known_toolkits() -> tuple[tuple[int, ...], ...]:
    """The CUDA toolkit releases that first built some target (rules/kb/targets.toml `first_cuda`), oldest first."""
    found = load_toml("kb/targets.toml")["first_cuda"].values()
    return tuple(sorted({tuple(int(part) for part in text.split(".")) for text in found}))


def newest_toolkit() -> tuple[int, ...]:
    """The toolkit a scan assumes unless told otherwise: the newest the knowledge base knows."""
    return known_toolkits()[-1]
