"""Flag lists that name module constants (`sm90a_nvcc_flags + [...]`, with `sm90a_nvcc_flags` bound in
the same module or imported from another scanned one: `from ..core import sm90a_nvcc_flags`), read
from the constants' values. The constant's module is read when a list asks for it; names within it
are followed the same way, a bounded number of hops. A constant assigned more than once or added to
at module scope, or assigned under a condition, leaves the list incomplete (its last value is still read)."""

from __future__ import annotations

from dataclasses import replace

from archlint.lang.python.flagread import FlagRead, FlagReader
from archlint.link.python import PyIndex
from archlint.model.python import FlagList, PyAssign

_MAX_HOPS = 4


def with_constants(index: PyIndex, module: str, flags: FlagList) -> FlagList:
    """`flags` (passed in `module`) with the module constants it names read into it."""
    if not flags.names and not flags.maybe_names:
        return flags
    read = FlagRead((), (), (), flags.complete, flags.names, flags.maybe_names)
    resolved = _resolve(index, module, read, 0)
    return replace(flags, values=flags.values + resolved.sure, maybe=flags.maybe + resolved.maybe,
                   versioned=flags.versioned + resolved.versioned, complete=resolved.complete,
                   names=(), maybe_names=())


def _resolve(index: PyIndex, module: str, read: FlagRead, hops: int) -> FlagRead:
    """`read` with the names it hands back looked up in `module`."""
    out = FlagRead(read.sure, read.maybe, read.versioned, read.complete)
    for name in read.names:
        out = out + _constant(index, module, name, hops)
    for name in read.maybe_names:
        out = out + _constant(index, module, name, hops).demoted()
    return out


def _constant(index: PyIndex, module: str, name: str, hops: int) -> FlagRead:
    found = _constant_of(index, module, name) if hops < _MAX_HOPS else None
    if found is None:
        return FlagRead(complete=False)
    owner, target, assigns = found
    last = assigns[-1]
    if last.unpack:
        return FlagRead(complete=False)
    read = _resolve(index, owner, FlagReader(lambda _: None, index.idioms).read(last.value), hops + 1)
    if len(assigns) > 1 or last.path or target in index.modules[owner].extended:
        return read + FlagRead(complete=False)
    return read


def _constant_of(index: PyIndex, module: str, name: str) -> tuple[str, str, list[PyAssign]] | None:
    """The module binding the constant a module-scope name (dotted, or imported from another scanned
    module) refers to, the constant's name there, and every module-scope assignment of it; that
    module is read now."""
    binding = index.resolve(module, name)
    if binding is None or binding.kind != "assign" or binding.module not in index.modules:
        return None
    assigns = index.modules[binding.module].assigns.having(lambda targets, function: not function and binding.name in targets)
    return (binding.module, binding.name, assigns) if assigns else None
