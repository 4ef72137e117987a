"""What each prebuilt extension module of a scan carries, for the text and JSON reports: its images,
and for each target the ones that can run there (rules/kb/binaries.toml)."""

from __future__ import annotations

from archlint.knowledge.arch import parse_target
from archlint.knowledge.binaries import runs_on
from archlint.model.binary import BinaryFacts


def running(facts: BinaryFacts, target: str) -> list[str]:
    """The module's images that can run on the target, by name."""
    cc = parse_target(target).cc
    return [item.image.name for item in facts.images if runs_on(item.image, cc)]


def extension_dict(facts: BinaryFacts, targets: tuple[str, ...]) -> dict:
    return {
        "path": facts.path,
        "fatbins": facts.fatbins,
        "compressed_entries": facts.compressed,
        "sections": list(facts.sections),
        "images": [{"name": item.image.name, "kind": item.image.kind, "arch": item.image.arch,
                    "suffix": item.image.suffix, "fatbins": item.fatbins} for item in facts.images],
        "runs_on": {target: running(facts, target) for target in targets},
        "operators": list(facts.ops),
    }


def extension_line(facts: BinaryFacts, targets: tuple[str, ...]) -> str:
    """`sm100/common_ops.abi3.so: sm_80, sm_90a, sm_120a (35 fatbins); sm_120a: sm_120a; sm_121a: none`."""
    if not facts.images:
        return f"{facts.path}: no device code"
    images = ", ".join(item.image.name for item in facts.images)
    partial = [item.image.name for item in facts.images if item.fatbins < facts.fatbins]
    some = f", {', '.join(partial)} in some only" if partial else ""
    fits = "; ".join(f"{target}: {', '.join(running(facts, target)) or 'none'}" for target in targets)
    return f"{facts.path}: {images} ({facts.fatbins} fatbin{'s' if facts.fatbins != 1 else ''}{some})" + (f"; runs on {fits}" if fits else "")
