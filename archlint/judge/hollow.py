"""Kernels that compile to nothing for a target: an empty body, only a trap, or a call into a
device function whose arch `#else` traps while an admitted build compiles its real branch."""

from __future__ import annotations

import re

from archlint.judge.hits import Hit, HitKind, settle_by_define
from archlint.judge.view import TargetView
from archlint.lang.cpp.evaluate import Evaluator
from archlint.lang.cpp.expr import render
from archlint.model.cexpr import Binary, Expr
from archlint.model.cuda import CudaFacts, Function, Region
from archlint.model.findings import Evidence, EvidenceKind, Location


def empty_kernel(view: TargetView, facts: CudaFacts, function: Function, references: tuple[TargetView, ...] = (),
                 chain: tuple[Evidence, ...] = ()) -> Hit | None:
    """A kernel that compiles for the target with no code left in its body (or only a trap)."""
    if not function.body or view.truth(facts.path, function.region) == 0:
        return None
    traps = view.index.traps
    live = [line for line in function.body if view.truth(facts.path, line.region) != 0]
    fallback_trap = any(traps(line) and _in_arch_fallback(view, facts, line.region, function.region) for line in live)
    if any(not traps(line) for line in live) and not fallback_trap:
        return None
    code = [line for line in function.body if not traps(line)]
    twin = None
    if references and not any(ref.truth(facts.path, line.region) != 0 for ref in references for line in code):
        twin = _arch_twin(view, facts, function, references) if live else None
        if twin is None:
            return None  # empty on every admitted build too: not what the gate decides
    dropped = [line.region for line in code if line.region >= 0 and view.truth(facts.path, line.region) == 0]
    region = facts.regions[dropped[0]] if dropped else facts.regions[twin.region] if twin else None
    kind = HitKind.TRAP_KERNEL if live else HitKind.EMPTY_KERNEL
    where = Location(facts.path, region.line if region else function.line)
    reason = why_false(view, facts.path, region.index) if region else "no code left"
    what = "only traps" if live else "compiles to an empty body"
    message = f"kernel `{function.name}` (line {function.line}) {what} for {view.target}: {reason}"
    said = EvidenceKind.TRAP_KERNEL if live else EvidenceKind.EMPTY_KERNEL
    kernel = Location(facts.path, function.line, function.col)
    hops = (Evidence(kernel, f"kernel `{function.name}`", EvidenceKind.KERNEL, name=function.name),
            Evidence(where, message, said, name=function.name))
    return Hit(kind, where, message, chain + hops, True)


def _arch_twin(view: TargetView, facts: CudaFacts, function: Function, references: tuple[TargetView, ...]) -> Function | None:
    """The real definition of a kernel defined twice under an arch conditional (`#if __CUDA_ARCH__ >=
    900` the kernel, `#else` one that only asserts): compiled with code on an admitted build, not on
    this target, while this trap-only definition is."""
    if function.region < 0 or not _in_arch_fallback(view, facts, function.region, -1):
        return None
    for other in facts.functions:
        if other is function or other.qualname != function.qualname or other.kind != "global" or other.region < 0:
            continue
        if view.truth(facts.path, other.region) == 0 and any(
                ref.truth(facts.path, other.region) != 0 and ref.truth(facts.path, line.region) != 0
                and not view.index.traps(line) for ref in references for line in other.body):
            return other
    return None


def fallback_trap(view: TargetView, facts: CudaFacts, function: Function, references: tuple[TargetView, ...],
                  chain: tuple[Evidence, ...], surely_reached: bool) -> Hit | None:
    """A device function whose arch `#else` traps for the target while an admitted build compiles its
    real branch (FlashInfer's `fp32_vec_to_e2m1`: `cvt ... e2m1x2` from 10.0 on, `__trap()` below):
    every kernel that calls it builds with a body and traps when it gets there."""
    if view.truth(facts.path, function.region) == 0:
        return None
    traps = [line for line in function.body if view.index.traps(line)
             and _in_arch_fallback(view, facts, line.region, function.region) and view.truth(facts.path, line.region) != 0]
    if references:
        traps = [line for line in traps if any(ref.truth(facts.path, line.region) == 0 for ref in references)]
    if not traps:
        return None
    region = facts.regions[traps[0].region]
    where = Location(facts.path, region.line)
    message = (f"`{function.name}` (line {function.line}) traps for {view.target}: its "
               f"{directive_text(region)} branch is compiled here, where an admitted build compiles the real one; "
               "kernels that call it trap when they get there")
    state = view.truth(facts.path, traps[0].region)
    certain = surely_reached and state == 1
    settle = "" if certain else settle_by_define(tuple(dict.fromkeys(
        view.undecided_macros(facts.path, traps[0].region) + view.undecided_macros(facts.path, function.region))))
    called = Evidence(Location(facts.path, function.line, function.col), f"`{function.name}` is called from a kernel",
                      EvidenceKind.DEVICE_FUNCTION, name=function.name)
    hops = (called, Evidence(where, message, EvidenceKind.TRAP_CALL, name=function.name))
    return Hit(HitKind.TRAP_CALL, where, message, chain + hops, certain, settle)


def _in_arch_fallback(view: TargetView, facts: CudaFacts, region: int, stop: int) -> bool:
    """Inside the `#else`/`#elif` of an arch conditional within the kernel: the kernel's
    fallback for targets the real body is not compiled for (xqa's `#else asm("trap;")`). The
    conditional may test the arch through a feature macro defined under an arch test
    (`#ifdef ENABLE_FP8` where `#if __CUDA_ARCH__ >= 890` defines it)."""
    while region >= 0 and region != stop:
        current = facts.regions[region]
        if current.directive in ("else", "elif") and _arch_dependent(view, render(current.cond)):
            return True
        region = current.parent
    return False


_IDENT_RE = re.compile(r"[A-Za-z_]\w*")


def _arch_dependent(view: TargetView, text: str, depth: int = 0) -> bool:
    """A condition's text tests the arch: directly, or through macros whose definitions sit under an
    arch test or whose values test it."""
    if "__CUDA_ARCH" in text:
        return True
    if depth >= 4:
        return False
    for name in set(_IDENT_RE.findall(text)):
        for binding in view.index.bindings.get(name, ()):
            if _arch_dependent(view, " ".join(render(expr) for expr in binding.guard) + " " + binding.value, depth + 1):
                return True
    return False


def why_false(view: TargetView, path: str, region: int) -> str:
    """The first enclosing condition that is false for this target, rendered for evidence."""
    facts = view.index.files[path]
    current = region
    while current >= 0:
        reg = facts.regions[current]
        if view.device.truth(reg.cond) == 0:
            return f"{directive_text(reg)}: {false_conjunct(view.device, reg.cond)} is false for {view.target} (__CUDA_ARCH__ = {view.target.cuda_arch})"
        current = reg.parent
    return f"compiled out for {view.target}"


def directive_text(region: Region) -> str:
    return f"line {region.line} `{region.text}`"


def false_conjunct(evaluator: Evaluator, expr: Expr) -> str:
    """The smallest `&&` operand that is false, so evidence names `__CUDA_ARCH__ < 1200`, not the whole line."""
    while isinstance(expr, Binary) and expr.op == "&&":
        expr = expr.left if evaluator.truth(expr.left) == 0 else expr.right
    return f"`{render(expr)}`"
