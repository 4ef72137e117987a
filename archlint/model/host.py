"""Host code facts: checks that let only some GPUs through before dispatch, the helpers that read
the compute capability, and the registrations that make a C++ function an op Python can call.

A condition is an `Expr` (model.cexpr) whose capability reads are names of their own:
`@major`, `@minor`, and `@call:NAME` (`@call:NAME#0` for the first element a helper returns), a
call of a function that a scan-wide link (gates.host) may find to be a capability helper.
"""

from __future__ import annotations

from dataclasses import dataclass

from archlint.model.cexpr import Expr
from archlint.model.records import fast_pickling

MAJOR = "@major"
MINOR = "@minor"
CALL = "@call:"


@dataclass(frozen=True, slots=True)
class HostArm:
    """What a check lets through: its condition, and the functions called where it holds."""

    cond: Expr  # in capability names
    text: str  # the condition as written, on one line
    line: int
    region: int  # the preprocessor region around the arm (an `#if defined ENABLE_X` arm's)
    calls: tuple[str, ...]  # unqualified names called where the condition holds, sorted


@dataclass(frozen=True, slots=True)
class HostCheck:
    """`TORCH_CHECK(is_sm90 || is_sm8x, ...)` (kind 'check', one arm: the rest of its function), or
    a dispatch ladder over the capability ending in a refusal (kind 'ladder', one arm per branch:
    `if (version_num >= 90 && version_num < 100) { ...; return; } ... TORCH_CHECK_NOT_IMPLEMENTED(false, ...)`)."""

    kind: str  # 'check' | 'ladder'
    macro: str  # the check or refusal macro ('throw' for a throw statement)
    text: str  # as written, shortened
    line: int  # the check, or the ladder's refusal
    col: int
    end_line: int
    end_col: int
    region: int
    function: str  # the enclosing function's qualname
    arms: tuple[HostArm, ...]


@dataclass(frozen=True, slots=True)
class CapabilityHelper:
    """A host function whose every capability-bearing return is the compute capability, read from
    the device attributes or properties (`major * 10 + minor`, `{major, minor}`): known by its body."""

    name: str
    values: tuple[Expr, ...]  # what it returns, in @major/@minor: one value, or a tuple's elements
    line: int


@dataclass(frozen=True, slots=True)
class OpRegistration:
    """`ops.def("name(...)")`, `ops.impl("name", torch::kCUDA, &fn)` in a `TORCH_LIBRARY*` block, or
    `m.def("name", &fn)` in `PYBIND11_MODULE(name, m)`."""

    kind: str  # 'def' | 'impl' | 'pybind'
    block: str  # the block's macro
    namespace: str  # the op namespace or module name as written ('_C', 'TORCH_EXTENSION_NAME')
    op: str
    function: str  # the C++ function bound; '' for a schema alone
    line: int
    col: int
    namespace_macro: bool = False  # the namespace is a macro the build defines (any extension's name)
    dispatch: str = ""  # an impl's dispatch key as written ('CUDA', 'torch::kCUDA'); '' for none


@dataclass(frozen=True, slots=True)
class OpCall:
    """A Python call of a custom op: `torch.ops._C.cutlass_scaled_mm(...)` (kind 'torch-op'), or of a
    function of a compiled extension module (`flash_attn_gpu.fwd(...)` after `import
    flash_attn_2_cuda as flash_attn_gpu`, kind 'pybind')."""

    kind: str  # 'torch-op' | 'pybind'
    namespace: str  # the op namespace ('_C'), or the extension module's name
    op: str
    path: str
    line: int
    col: int
    function: str  # the enclosing Python function, local to its module ('' at module level)


@dataclass(frozen=True, slots=True)
class OpBinding:
    """An op call linked through its registration to the C++ function and the units defining it."""

    call: OpCall
    registration: OpRegistration
    registration_path: str
    units: tuple[str, ...]  # root-relative translation units defining the function, sorted


@dataclass(frozen=True, slots=True)
class ArmReach:
    """One arm of a host check: the capabilities that certainly take it, and the translation units
    what it calls reaches (the ids of the build lists compiling them are read off the build gates)."""

    line: int
    text: str  # the arm's condition as written
    ccs: tuple[int, ...]
    units: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class OpLink:
    """A Python gate's op call followed through every layer: the registration, the C++ function and
    the units defining it, the host checks in that function, and the build lists compiling a unit
    of the chain (the defining units, or those the checks' arms reach)."""

    call: OpCall
    registration_path: str
    registration: OpRegistration
    units: tuple[str, ...]
    reached: tuple[str, ...]  # the units the call reaches: those the checks' arms reach, or the function's
    checks: tuple[str, ...]  # gate ids of the host checks in the function
    blocks: tuple[str, ...]  # gate ids of the build lists


@dataclass(frozen=True, slots=True)
class Layers:
    """What a gate's layer rules read (checks/layers.py): a Python gate's op links; a host check's
    arms and the capabilities it certainly refuses; a build list's native capabilities."""

    ops: tuple[OpLink, ...] = ()
    arms: tuple[ArmReach, ...] = ()
    refused: tuple[int, ...] = ()
    # a build list's: the capabilities it builds code of their own major for (not only an older
    # major's PTX, which a kernel's `__CUDA_ARCH__ >= 890` paths are compiled out of)
    native: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class HostFacts:
    checks: tuple[HostCheck, ...] = ()
    helpers: tuple[CapabilityHelper, ...] = ()
    registrations: tuple[OpRegistration, ...] = ()


fast_pickling(globals())
