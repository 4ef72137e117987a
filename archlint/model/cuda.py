"""What one CUDA/C++ file holds, as archlint reads it: regions, macros, includes, functions,
arch-sensitive constructs, shared-memory requests and namespace-scope declarations."""

from __future__ import annotations

from dataclasses import dataclass

from archlint.model.cexpr import Expr
from archlint.model.findings import Diagnostic, Suppression
from archlint.model.host import HostFacts
from archlint.model.records import fast_pickling


@dataclass(frozen=True, slots=True)
class Declaration:
    """One namespace-scope definition: compiled into a unit when one of `names` is named there and,
    for a specialisation, every name in `keys` is too."""

    names: tuple[str, ...]  # the definition's name; an out-of-line member also its class's
    keys: tuple[tuple[str, ...], ...]  # a specialisation's needs: every clause has a name that is named
    start: tuple[int, int]  # (line, col) of its first character
    end: tuple[int, int]  # (line, col) of its last character
    # every identifier it spells, sorted: a scan holds tens of thousands of these, and a tuple
    # takes a fifth of a set's memory (they are only ever iterated)
    uses: tuple[str, ...]
    # what it spells wherever it is compiled: outside `if constexpr` branches, preprocessor
    # conditionals, type tests and type selections (`conditional_t<c, A, B>`, `enable_if_t<...>`)
    sure_uses: tuple[str, ...] = ()  # sorted too
    templated: bool = False  # a template (or specialisation): compiled only as instantiated
    # (name, qualifier) of each name in `uses` spelled only after a qualifier (`GemmKernel::Mma`):
    # a use of a namespace-scope definition only where the qualifier is a namespace, else a member's
    qualified: frozenset[tuple[str, str]] = frozenset()


@dataclass(frozen=True, slots=True)
class Declarations:
    items: tuple[Declaration, ...] = ()
    loose: frozenset[str] = frozenset()  # identifiers of code outside any definition: always compiled
    read: bool = False  # False: the file could not be read this way; all of it counts as compiled
    instantiated: frozenset[str] = frozenset()  # what its explicit instantiations (`template void f<T>(...);`) spell
    namespaces: frozenset[str] = frozenset()  # the namespaces it opens or aliases (`cute`, `arch`, `gmma`)


@dataclass(frozen=True, slots=True)
class Region:
    """One branch of a preprocessor conditional (#if / #elif / #else chain member).

    `cond` is the branch's own condition already conjoined with the negation of every earlier
    branch of the same chain, so the guard of a line is the conjunction of `cond` over the
    region and its ancestors. `text` is the directive as written, for evidence.
    """

    index: int
    parent: int  # -1 for top level
    cond: Expr
    directive: str  # 'if' | 'ifdef' | 'ifndef' | 'elif' | 'else'
    text: str
    line: int  # line of the directive
    start_line: int  # first line of the body
    end_line: int  # last line of the body
    include_guard: bool = False


@dataclass(frozen=True, slots=True)
class MacroDef:
    name: str
    value: str  # the replacement text, stripped; "" for a bare #define
    params: tuple[str, ...] | None  # None for object-like macros
    line: int
    region: int
    undef: bool = False
    end_line: int = 0  # last line of the definition (its continuation lines); 0: as `line`


@dataclass(frozen=True, slots=True)
class Include:
    target: str
    system: bool
    line: int
    region: int


@dataclass(frozen=True, slots=True)
class BodyLine:
    """A line of code inside a function body, summarised by the region it sits in."""

    region: int
    trap: bool  # the line only traps (__trap(), __brkpt(), asm("trap;"), assert(false))
    call: str = ""  # a one-call statement under a conditional of the body: traps if the callee is a trapping macro
    false_arg: bool = False  # that call's condition is the literal `false`


@dataclass(frozen=True, slots=True)
class Function:
    name: str  # unqualified name
    qualname: str  # with enclosing namespaces/classes where known
    kind: str  # 'global' | 'device' | 'host_device' | 'host'
    line: int
    col: int
    end_line: int
    region: int  # innermost region around the definition
    calls: tuple[tuple[str, int], ...]  # (unqualified callee name, region of the call), sorted, unique
    body: tuple[BodyLine, ...]  # distinct (region, trap) pairs of the body's code lines, sorted (kernels,
    # and other functions whose body may trap)
    template: bool = False


@dataclass(frozen=True, slots=True)
class Construct:
    """An arch-sensitive use: a PTX instruction, an intrinsic/API call, an arch tag, an attribute."""

    kind: str  # 'ptx' | 'intrinsic' | 'tag' (a CuTe atom) | 'arch-tag' (CUTLASS's `arch::Sm100`) | 'attribute'
    # | 'library': a vendor library call that does device work, or a name telling its form (CUDA_R_8F_E4M3)
    name: str  # PTX opcode with modifiers ('wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16'), or identifier
    line: int
    col: int
    region: int
    function: str  # enclosing function's qualname, '' at file scope
    # Inside a branch of `if constexpr`: compiled only for the template arguments that take it.
    in_constexpr_branch: bool = False
    # Compiled wherever its definition is: outside `if constexpr` branches, preprocessor
    # conditionals, type tests and selections, and the bodies of member functions.
    unconditional: bool = False
    # In an `if constexpr` chain that compiles wherever its definition does and every alternative
    # of which names a construct of the same knowledge-base row (or cannot compile).
    every_alternative: bool = False


@dataclass(frozen=True, slots=True)
class ArchConstant:
    """`constexpr ... kMaxVecBytes = SGL_ARCH_BLACKWELL_OR_GREATER ? 32 : 16;`: a constant whose
    initializer spells a macro, so its value may differ from one target to another."""

    name: str
    value: Expr  # the initializer, read as a preprocessor expression (Opaque when it is not one)
    text: str
    line: int
    region: int


@dataclass(frozen=True, slots=True)
class StaticAssert:
    """`static_assert(cond, ...)`, with the names its condition spells."""

    names: tuple[str, ...]
    line: int
    col: int
    region: int
    function: str  # enclosing function's qualname, '' outside functions


@dataclass(frozen=True, slots=True)
class SmemSize:
    """A request's size for one instantiation of the function that makes it (extract/cuda/sizes.py)."""

    nbytes: int
    instance: str  # the instantiation as written: 'invokeFusedAGemm<__nv_bfloat16, 7168, 2112, 8>'; '' for no template
    steps: str  # the named values the size took: 'kTileN = 8, tile_k = 256, stage_cnt = 16'


@dataclass(frozen=True, slots=True)
class SmemRequest:
    kind: str  # 'static' | 'dynamic-attr' | 'launch'
    nbytes: int | None  # None when the size does not fold to a constant
    text: str  # the size expression as written
    line: int
    col: int
    region: int
    function: str
    # Where nbytes is None: the size of each instantiation the file spells whose size the C++ around
    # the request computes, and why the rest could not be ('' where every one was)
    sizes: tuple[SmemSize, ...] = ()
    unsized: str = ""
    adaptive: str = ""  # how the size, or a condition it is asked under, follows the device's own limit ('' where not)
    # A request a function-like macro's body makes: the macro, and which of its parameters the
    # size is (-1: none), to be sized where a translation unit expands it (judge/macro_sizes.py)
    macro: str = ""
    macro_argument: int = -1


@dataclass(frozen=True, slots=True)
class MacroExpansion:
    """A call spelled like a macro's (`LAUNCH_PDL(data, false, T, kernel, grid, block, 0, stream)`):
    where a translation unit expands a macro, and the sizes it passes."""

    name: str
    line: int
    # each argument: its value where it is an integer literal (or a product of them), the name of
    # the enclosing macro's parameter it passes on (in code: the variable passed), or None
    arguments: tuple[int | str | None, ...]
    within: str = ""  # the function-like macro whose body holds the call; '' for code


@dataclass(frozen=True, slots=True)
class TemplateHole:
    line: int
    name: str  # the placeholder's expression, as written ('variant_decl')
    kind: str  # 'code' | 'kernel' | 'filled' (code whose value the scanned Python spells out)
    why: str = ""  # for code: why its value stays unknown, once the scanned Python has been read


@dataclass(frozen=True, slots=True)
class RuntimeArch:
    """A target pinned in a string the code hands a run-time compiler (NVRTC's
    `"--gpu-architecture=sm_90a"`): what it compiles then runs on that arch only."""

    arch: str  # as written: 'sm_90a', 'compute_90a'
    line: int
    col: int
    region: int
    function: str  # qualname of the enclosing function, '' at file scope


@dataclass(frozen=True, slots=True)
class LoaderCall:
    """A call that loads device code at run time (`cuModuleLoadData`): the unit runs kernels that
    are not in it."""

    name: str
    line: int
    col: int
    region: int
    function: str  # qualname of the enclosing function


@dataclass(frozen=True, slots=True)
class ArchCheck:
    """Host code that lets only some GPUs through: a check (`FLASHINFER_CHECK(mSM == kSM_100 || mSM
    == kSM_103, ...)`, `if (!(sm == 100)) throw ...`) whose condition is a disjunction of equalities
    of one SM-version value, or a predicate (`bool isArchCompatible(int smVersion, ...)`) whose
    every return is `false` or such a disjunction of its SM parameter."""

    kind: str  # 'check' | 'predicate'
    name: str  # the check macro ('throw' for an if statement), or the predicate's name
    subject: str  # the SM value compared, as written ('mSM', 'smVersion')
    values: tuple[str, ...]  # what it is compared with, as written ('100', 'kSM_100')
    text: str  # the check or the predicate's head, as written (shortened)
    line: int
    col: int
    region: int
    function: str  # check: the enclosing function's qualname; predicate: its own
    unconditional: bool = False  # check: directly in its function's body, no return before it


@dataclass(frozen=True, slots=True)
class SmConstant:
    """`constexpr int32_t kSM_100 = 100;`: an integer constant named for an SM version or arch."""

    name: str
    value: int
    line: int
    region: int


@dataclass(frozen=True, slots=True)
class RuleSites:
    """What the file rules (AL201, AL202, AL204) could report in a file read for its directives
    only, found lexically (`extract.cuda.screen`): a superset of what its full facts hold, so that a
    file no gate builds is read in full only where some scan target would get a finding."""

    kernels: tuple[int, ...] = ()  # the region of each kernel's first line of code (where read lexically)
    unread_kernels: bool = False  # a `__global__` whose body was not found lexically
    constructs: tuple[tuple[str, str, int], ...] = ()  # (kind, name, region): PTX and intrinsics with a KB row
    smem: tuple[SmemRequest, ...] = ()  # shared-memory requests of a constant size (no enclosing function)


@dataclass(frozen=True, slots=True)
class CudaFacts:
    path: str
    sha256: str
    regions: tuple[Region, ...] = ()
    defines: tuple[MacroDef, ...] = ()
    includes: tuple[Include, ...] = ()
    functions: tuple[Function, ...] = ()
    constructs: tuple[Construct, ...] = ()
    smem: tuple[SmemRequest, ...] = ()
    suppressions: tuple["Suppression", ...] = ()
    diagnostics: tuple[Diagnostic, ...] = ()
    partial_parse: bool = False  # tree-sitter produced ERROR nodes
    calls: tuple[tuple[str, int], ...] = ()  # (name, region) of every call in the file: a unit's entry points
    template_holes: tuple[TemplateHole, ...] = ()  # a template's placeholders that are not plain values
    declarations: Declarations = Declarations()  # namespace-scope definitions, for declaration reach
    arch_constants: tuple[ArchConstant, ...] = ()
    static_asserts: tuple[StaticAssert, ...] = ()
    runtime_archs: tuple[RuntimeArch, ...] = ()
    loaders: tuple[LoaderCall, ...] = ()
    arch_checks: tuple[ArchCheck, ...] = ()
    sm_constants: tuple[SmConstant, ...] = ()
    rule_sites: RuleSites | None = None  # a file read for its directives only: what its full facts could report
    host: HostFacts | None = None  # host checks, capability helpers and op registrations (extract.cuda.host)
    host_marked: bool = False  # read for its directives only, it spells what a host check or registration needs
    expansions: tuple[MacroExpansion, ...] = ()  # calls spelled like macros', one per distinct (name, macro around, arguments)


fast_pickling(globals())
