"""Which GPUs a prebuilt image runs on (rules/kb/binaries.toml): SASS within its major, `a` images on
their own compute capability, `f` images within their family, PTX on anything newer."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from archlint.knowledge.arch import Target
from archlint.knowledge.resources import load_toml
from archlint.model.binary import Image

__all__ = ["ImageRule", "image_rule", "runs_on"]

_RULES = ("same-major", "exact", "family", "newer")


@dataclass(frozen=True)
class ImageRule:
    id: str
    kind: str  # 'sass' | 'ptx'
    suffix: str
    runs_on: str  # one of _RULES
    summary: str
    source: str


@lru_cache(maxsize=1)
def _rules() -> dict[tuple[str, str], ImageRule]:
    rows = load_toml("kb/binaries.toml")["image"]
    rules = {}
    for row in rows:
        if row["runs_on"] not in _RULES:
            raise ValueError(f"rules/kb/binaries.toml: row {row['id']!r} names an unknown rule {row['runs_on']!r}")
        rule = ImageRule(row["id"], row["kind"], row["suffix"], row["runs_on"], row["summary"], row["source"])
        rules[(rule.kind, rule.suffix)] = rule
    return rules


def image_rule(image: Image) -> ImageRule | None:
    return _rules().get((image.kind, image.suffix))


def runs_on(image: Image, cc: int) -> bool:
    """Whether the image can run on a GPU of compute capability `cc` (major*10 + minor)."""
    rule = image_rule(image)
    if rule is None:
        return False
    if rule.runs_on == "exact":
        return cc == image.arch
    if rule.runs_on == "newer":
        return cc >= image.arch
    if rule.runs_on == "same-major":
        return cc // 10 == image.arch // 10 and cc >= image.arch
    return cc >= image.arch and cc in Target(image.arch, "f").family()
