"""Gates: where Python code decides which GPU architectures a feature is built or run for, and
the verdict for every target a gate shuts out."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from archlint.model.findings import Evidence, Location, Verdict
from archlint.model.records import fast_pickling

if TYPE_CHECKING:  # annotations only: a stored result loads without these
    from archlint.model.binary import ExtensionCall
    from archlint.model.host import Layers
    from archlint.model.python import ResolvedSource, SourceRef, VersionedFlag


@dataclass(frozen=True, slots=True)
class ProjectBuild:
    """How the project's own flag code builds one compute capability: the target suffix its
    normaliser gives with the scan's CUDA toolkit, and the toolkit versions that answer holds for."""

    cc: int
    suffix: str  # '' | 'a' | 'f'
    toolkits: str = ""  # '≥ 12.9', '≥ 12.8 and < 12.9'; '' when no toolkit-version test decides it

    def describe(self) -> str:
        """`as the project builds 12.0 with CUDA ≥ 12.9`."""
        when = f" with CUDA {self.toolkits}" if self.toolkits else ""
        return f"as the project builds {self.cc // 10}.{self.cc % 10}{when}"


# The kinds of gate read from the build and the host code, which the stages after detection tell
# apart (the Python gates' kinds are named where each is found)
BUILD_LIST_KIND = "cmake-archs"  # a CMake list of archs a build compiles its sources for (gates.build_lists)
WHOLE_BUILD_KIND = "cmake-build"  # the build's own list: not judged, the last link of an op's chain
HOST_KIND = "host-check"  # a C++ host check of the device's capability (gates.host)


@dataclass(frozen=True, slots=True)
class Gate:
    id: str
    # 'nvcc-flags' | 'decorator' | 'predicate-call' | 'capability-compare' | 'capability-method' | 'build-flags'
    # | BUILD_LIST_KIND | WHOLE_BUILD_KIND | HOST_KIND
    kind: str
    text: str
    path: str
    line: int
    col: int
    end_line: int
    end_col: int
    function: str
    admits: tuple[int, ...]
    exact: bool
    suffix: str  # '' | 'a' | 'f' | '?'
    guards: tuple[str, ...]
    sources: tuple[SourceRef, ...]
    defines: tuple[str, ...]
    list_span: tuple[int, int, int, int] | None  # the literal list of admitted values, brackets included
    majors_literal: tuple[int, ...] | None
    unit: str  # 'major' | 'cc'
    suffix_by_cc: tuple[tuple[int, str], ...] = ()  # the suffix the build uses for each admitted CC
    resolved_sources: tuple[ResolvedSource, ...] = ()  # `sources` resolved, in the same order
    arch_macros: tuple[str, ...] = ()  # -D names the project sets to the target's __CUDA_ARCH__ value
    flags_complete: bool = False  # every flag list of its spec is read
    absent_defines: tuple[str, ...] = ()  # variant macros sibling specs pass and this one does not
    # With every flag of its spec read: each macro some scanned build passes with -D. Any other
    # ordinary macro name that no scanned code defines is undefined in its build. None: not known.
    passable_defines: tuple[str, ...] | None = None
    list_brackets: tuple[str, str] | None = None  # the brackets that literal is written with: ("(", ")") for a tuple
    local_function: str = ""  # the enclosing function as written in its module ('Class.method'); '' at module level
    maybe_defines: tuple[str, ...] = ()  # -D flags its spec passes on some paths only
    versioned_defines: tuple[VersionedFlag, ...] = ()  # -D flags its spec passes as the CUDA toolkit's version decides
    # How the project's flag code builds each compute capability it answers for (its normaliser, read
    # for the scan's toolkit): the build an excluded capability would get if the gate admitted it.
    project_builds: tuple[ProjectBuild, ...] = ()
    # For a condition whose own text names no architecture (`backend == "cake"`): the comparison that
    # read the capability, in a helper it calls or the assignment of a name it reads (CONDITION;
    # name: that comparison as written). None when the condition names one itself.
    arch_test: Evidence | None = None
    # The callees of the code the condition guards, as written, that name no scanned function
    # (`torch.ops.sgl_kernel.fp8_scaled_mm.default`, `_C.op`): they may reach a prebuilt extension module.
    guarded_calls: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class CheckedConstruct:
    """An arch-sensitive construct a verdict's walk reached and found the target has: where it is,
    the arch guard it compiles under evaluated for the target, and the knowledge-base row saying so."""

    hop: Evidence  # CHECKED: the construct's place, what was checked in words; name: the construct
    guard: str  # the innermost arch condition it compiles under, rendered; '' when no arch condition
    guard_line: int  # that directive's line, in the construct's file; 0 when none
    holds: str  # the guard for the target: 'true', or 'undecided' (archlint could not evaluate it)
    requirement: str  # the knowledge-base row's id
    needs: str  # the row's requirement in words ('needs sm_90 or newer')


@dataclass(frozen=True, slots=True)
class Reached:
    """What the walk behind a verdict checked: the units, the headers followed from them, the kernels
    compiled for the target, and every arch-sensitive construct compiled for it."""

    units: tuple[str, ...]  # root-relative translation units
    headers: tuple[str, ...]  # files reached through #include, units excluded
    kernels: tuple[Evidence, ...]  # KERNEL hops, one per kernel compiled for the target
    constructs: tuple[CheckedConstruct, ...]  # sorted by place
    path: tuple[Evidence, ...] = ()  # the gate to the units, then what was checked: a finding's evidence


@dataclass(frozen=True, slots=True)
class TargetVerdict:
    target: str
    verdict: Verdict
    reason: str
    evidence: tuple[Evidence, ...] = ()
    # the hop saying so, for each kernel left empty or trapping on this target (also when GENUINE):
    # EMPTY_KERNEL, TRAP_KERNEL or TRAP_CALL, named
    empty_kernels: tuple[Evidence, ...] = ()
    reached: Reached | None = None  # what a POLICY verdict checked; None for the other verdicts
    build: str = ""  # why this build was judged: 'as the project builds 12.0 with CUDA ≥ 12.9'; '' when asked for


@dataclass(frozen=True, slots=True)
class GateReport:
    """One gate and its verdict for every target it excludes."""

    gate_id: str
    text: str
    location: Location
    admits: tuple[str, ...]  # target names the gate admits: those evaluated, and the default targets, arch order
    verdicts: tuple[TargetVerdict, ...]
    sources: tuple[str, ...] = ()  # root-relative translation units the gate's builds compile
    function: str = ""  # the enclosing function, local to its module ('gen_module', 'Class.method'); '' at module level
    arch_test: Evidence | None = None  # Gate.arch_test: the arch test behind a condition that names none


@dataclass(frozen=True, slots=True)
class PinnedUnit:
    """A unit the gate's code builds with a flag list that pins every build of it (`sm100a_nvcc_flags`,
    `*NVCC_FLAGS[module.target]` with each entry `-gencode=arch=compute_100a,code=sm_100a`): what it
    compiles for, known even where its source is not."""

    source: str  # the source: its path where read, else the reference as written
    codes: tuple[str, ...]  # what any build of it holds, as nvcc's `code=` spells it: 'sm_100a', 'compute_90'
    evidence: tuple[Evidence, ...]  # the gate, the calls to the spec, the spec's flag list
    read: bool = False  # the source was found and is judged
    flag_gate: bool = False  # the flag list is a gate of its own (one archlint reports), at the last hop


@dataclass(frozen=True, slots=True)
class GuardedUnits:
    sources: tuple[str, ...]  # root-relative CUDA files the gate's builds compile
    unresolved: tuple[str, ...]  # source references that could not be resolved, as written
    evidence: Mapping[str, tuple[Evidence, ...]]  # source path -> evidence hops from the gate to it
    spec_defines: tuple[str, ...] = ()  # the -D flags of the one JIT spec the gate's calls reach, if one
    spec_versioned: tuple[VersionedFlag, ...] = ()  # that spec's -D flags the toolkit version decides
    # Device code written in Python that the gate's code runs (a CuTe DSL kernel module it calls):
    # the evidence hops to the first such call, () for none.
    python_kernels: tuple[Evidence, ...] = ()
    # Calls the gate's code makes into prebuilt extension modules (link/binary.py), in the order found.
    extensions: tuple[ExtensionCall, ...] = ()
    # The admitted capabilities these units serve (a C++ ladder's arm); None: every one the gate admits.
    admitted_ccs: frozenset[int] | None = None
    # Units (among `sources` or `unresolved`) whose builds are pinned to known targets (`gates/pins.py`).
    pinned: tuple[PinnedUnit, ...] = ()
    # The gate's other layers: the custom ops it reaches, or a host check's arms (model.host.Layers).
    layers: Layers | None = None


def gate_location(gate: Gate) -> Location:
    """Where the gate is written: what its findings point at."""
    return Location(gate.path, gate.line, gate.col, gate.end_line, gate.end_col)


fast_pickling(globals())
