"""Prebuilt extension modules a gate's calls reach, judged from the images their fatbins carry
(rules/kb/binaries.toml): a call into modules none of which carries an image that can run on the
target is GENUINE; where one does, the verdict goes no further than "image present", since an
image that loads says nothing of whether its kernels work there."""

from __future__ import annotations

from archlint.judge.hits import Hit, HitKind
from archlint.knowledge.arch import Target
from archlint.knowledge.binaries import image_rule, runs_on
from archlint.model.binary import BinaryFacts, ExtensionCall, ImageCount
from archlint.model.findings import Evidence, EvidenceKind, Location

_SHOWN = 8  # images named in a reason


def extension_hits(calls: tuple[ExtensionCall, ...], target: Target) -> tuple[tuple[Hit, ...], tuple[Hit, ...]]:
    """(no image, image present): a hit per call whose modules carry nothing that runs on the
    target, and one per call where some module does. Modules with no device code are left out."""
    missing: list[Hit] = []
    present: list[Hit] = []
    for call in calls:
        modules = [facts for facts in call.modules if facts.has_device_code or not facts.complete]
        if not modules:
            continue
        running = [(facts, [item for item in facts.images if runs_on(item.image, target.cc)]) for facts in modules]
        usable = [(facts, images) for facts, images in running if images]
        if usable:
            present.append(_present(call, target, usable))
        elif not all(facts.complete for facts in modules):
            present.append(_partial(call, target, [facts for facts in modules if not facts.complete]))
        else:
            missing.append(_missing(call, target, modules))
    return tuple(missing), tuple(present)


def carried(facts: BinaryFacts) -> str:
    """`sm_80, sm_90a, sm_100f, compute_90` (and how many more)."""
    names = [item.image.name for item in facts.images]
    more = f" and {len(names) - _SHOWN} more" if len(names) > _SHOWN else ""
    return ", ".join(names[:_SHOWN]) + more


def _missing(call: ExtensionCall, target: Target, modules: list[BinaryFacts]) -> Hit:
    listed = "; ".join(f"{_name(facts)} carries {carried(facts)}" for facts in modules)
    message = f"nothing built for {target}: {listed} (none runs on compute capability {target.major}.{target.minor}) [{_rules(modules)}]"
    first = modules[0]
    location = Location(first.path, 1)
    hop = Evidence(location, message, EvidenceKind.IMAGES, source=first.path, name=call.what)
    return Hit(HitKind.NO_IMAGE, location, message, call.chain + (hop,), True)


def _present(call: ExtensionCall, target: Target, usable: list[tuple[BinaryFacts, list[ImageCount]]]) -> Hit:
    facts, images = usable[0]
    names = ", ".join(item.image.name for item in images)
    share = max(item.fatbins for item in images)
    coverage = "in every one of its" if share == facts.fatbins else f"in {share} of its"
    message = (f"image present: {_name(facts)} carries {names} for {target} ({coverage} {facts.fatbins} fatbin(s)); "
               "an image shows the module can load there, not that its kernels work")
    location = Location(facts.path, 1)
    hop = Evidence(location, message, EvidenceKind.IMAGES, source=facts.path, name=call.what)
    settle = f"settle by running `{call.what}` on a compute capability {target.major}.{target.minor} GPU"
    return Hit(HitKind.IMAGE, location, message, call.chain + (hop,), False, settle)


def _partial(call: ExtensionCall, target: Target, damaged: list[BinaryFacts]) -> Hit:
    """No image read runs on the target, but a damaged header stopped the reading of a module."""
    facts = damaged[0]
    message = (f"{_name(facts)} carries nothing for {target} as far as its fatbins could be read "
               f"({carried(facts) or 'no image'}); a damaged header stopped the reading")
    location = Location(facts.path, 1)
    hop = Evidence(location, message, EvidenceKind.IMAGES, source=facts.path, name=call.what)
    settle = f"settle with `cuobjdump --list-elf --list-ptx {facts.path}`"
    return Hit(HitKind.IMAGE, location, message, call.chain + (hop,), False, settle)


def _name(facts: BinaryFacts) -> str:
    return facts.path


def _rules(modules: list[BinaryFacts]) -> str:
    ids = sorted({rule.id for facts in modules for item in facts.images if (rule := image_rule(item.image)) is not None})
    return ", ".join(f"binaries:{row}" for row in ids)
