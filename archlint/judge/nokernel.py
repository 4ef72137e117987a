"""Why no kernel of a gate's units compiles for a target, in words: what the walk found instead.

Read only where the count of compiled kernels is zero and no library call does the units' device work.
The reason names what archlint saw: kernels compiled out by a condition on a macro no scanned build
passes (the one case where a -D flag archlint cannot read may select them), kernels compiled out by
the target's own arch macros, kernel templates nothing it follows instantiates, or no kernel at all.
"""

from __future__ import annotations

import posixpath

from archlint.judge.hits import settle_by_define
from archlint.judge.hollow import why_false
from archlint.judge.view import TargetView
from archlint.knowledge.arch import ARCH_MACRO_RE
from archlint.lang.cpp.evaluate import TOOLKIT_MACROS
from archlint.model.cexpr import Binary, Defined, Expr, MacroCall, Name, Ternary, Unary
from archlint.model.cuda import Function

_SHOWN = 2


def why_no_kernel(view: TargetView, sources: tuple[str, ...], reached: frozenset[tuple[str, str]]) -> tuple[str, str]:
    """(what was found, what would settle it) for units none of whose kernels compiles for the target.
    `reached`: (path, qualname) of what the units compile, with (path, '') for every file."""
    files = sorted({path for path, qualname in reached if not qualname})
    kernels = [(path, f) for path in files for f in view.index.files[path].functions if f.kind == "global"]
    out = [(path, f) for path, f in kernels if (path, f.qualname) in reached and view.truth(path, f.region) == 0]
    flagged = [(path, f, names) for path, f in out if (names := _unpassed(view, path, f.region))]
    if flagged:
        path, function, names = flagged[0]
        shown = ", ".join(f"`{name}`" for name in names)
        return (f"its kernels sit under a condition on {shown}, which no scanned build passes: {_kernel(path, function)} "
                f"under {_condition(view, path, function.region)} (a -D flag it cannot read may select them)",
                settle_by_define(names))
    if out:
        path, function = out[0]
        return f"every kernel they define is compiled out: {_kernel(path, function)} under {why_false(view, path, function.region)}", ""
    templates = [(path, f) for path, f in kernels if f.template and (path, f.qualname) not in reached]
    if templates:
        shown = "; ".join(_kernel(path, f) for path, f in templates[:_SHOWN])
        return (f"they define only kernel templates ({shown}) that no call archlint follows instantiates "
                "(a launch through a function pointer or a name rendered at build time)", "")
    return f"none of the {len(sources)} guarded source(s) defines a kernel: host code only", ""


def _kernel(path: str, function: Function) -> str:
    return f"`{function.name}` at {posixpath.basename(path)}:{function.line}"


def _condition(view, path: str, region: int) -> str:
    regions = view.index.files[path].regions
    current = region
    while current >= 0 and view.device.truth(regions[current].cond) != 0:
        current = regions[current].parent
    return f"`{regions[current].text}` (line {regions[current].line})" if current >= 0 else "a condition"


def _unpassed(view, path: str, region: int) -> tuple[str, ...]:
    """The macros of the false condition around a site that no scanned code defines and the build is
    taken not to pass: where a -D flag archlint cannot read would change the verdict."""
    regions = view.index.files[path].regions
    found: dict[str, None] = {}
    current = region
    while current >= 0:
        cond = regions[current].cond
        if view.device.truth(cond) == 0:
            found.update(dict.fromkeys(name for name in _names(cond) if _unpassed_name(view, name)))
        current = regions[current].parent
    return tuple(found)


def _unpassed_name(view, name: str) -> bool:
    return (not ARCH_MACRO_RE.match(name) and name not in TOOLKIT_MACROS and name not in view.index.bindings
            and view.device.is_defined(name) == 0)


def _names(expr: Expr) -> list[str]:
    if isinstance(expr, (Name, Defined)):
        return [expr.name]
    if isinstance(expr, Unary):
        return _names(expr.operand)
    if isinstance(expr, Binary):
        return _names(expr.left) + _names(expr.right)
    if isinstance(expr, Ternary):
        return _names(expr.cond) + _names(expr.then) + _names(expr.other)
    if isinstance(expr, MacroCall):
        return [name for arg in expr.args for name in _names(arg)]
    return []
