"""Plain frozen data passed between pipeline stages. No logic beyond trivial helpers."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from .cpp.declarations import Declarations


class Level(str, Enum):
    ERROR = "error"
    WARNING = "warning"
    NOTE = "note"
    NONE = "none"

    @property
    def rank(self) -> int:
        return {"none": 0, "note": 1, "warning": 2, "error": 3}[self.value]


class Verdict(str, Enum):
    POLICY = "POLICY"
    GENUINE = "GENUINE"
    EMPTY = "EMPTY"
    UNKNOWN = "UNKNOWN"


@dataclass(frozen=True, order=True)
class Location:
    """A place in a scanned file. `path` is posix, relative to the scan root; line/col 1-based."""

    path: str
    line: int
    col: int = 1
    end_line: int = 0
    end_col: int = 0


# ---------------------------------------------------------------- preprocessor expressions


@dataclass(frozen=True)
class Num:
    value: int


@dataclass(frozen=True)
class Name:
    name: str


@dataclass(frozen=True)
class Defined:
    name: str


@dataclass(frozen=True)
class Unary:
    op: str  # '!', '-', '+', '~'
    operand: "Expr"


@dataclass(frozen=True)
class Binary:
    op: str  # '&&', '||', '==', '!=', '<', '<=', '>', '>=', '+', '-', '*', '/', '%', '<<', '>>', '&', '|', '^'
    left: "Expr"
    right: "Expr"


@dataclass(frozen=True)
class Ternary:
    cond: "Expr"
    then: "Expr"
    other: "Expr"


@dataclass(frozen=True)
class MacroCall:
    """A function-like macro invoked in a condition; its value is unknown to archlint."""

    name: str
    args: tuple["Expr", ...]


@dataclass(frozen=True)
class Opaque:
    """A condition archlint could not parse; always evaluates to unknown."""

    text: str


Expr = Num | Name | Defined | Unary | Binary | Ternary | MacroCall | Opaque

TRUE_EXPR = Num(1)


# ---------------------------------------------------------------- CUDA / C++ facts


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class MacroDef:
    name: str
    value: str  # the replacement text, stripped; "" for a bare #define
    params: tuple[str, ...] | None  # None for object-like macros
    line: int
    region: int
    undef: bool = False


@dataclass(frozen=True)
class Include:
    target: str
    system: bool
    line: int
    region: int


@dataclass(frozen=True)
class BodyLine:
    """A line of code inside a function body, summarised by the region it sits in."""

    region: int
    trap: bool  # the line only traps (__trap(), asm("trap;"), assert(false))


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class Construct:
    """An arch-sensitive use: a PTX instruction, an intrinsic/API call, an arch tag, an attribute."""

    kind: str  # 'ptx' | 'intrinsic' | 'tag' | 'attribute'
    name: str  # PTX opcode with modifiers ('wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16'), or identifier
    line: int
    col: int
    region: int
    function: str  # enclosing function's qualname, '' at file scope
    # Inside a branch of `if constexpr`: compiled only for the template arguments that take it.
    in_constexpr_branch: bool = False


@dataclass(frozen=True)
class ArchConstant:
    """`constexpr ... kMaxVecBytes = SGL_ARCH_BLACKWELL_OR_GREATER ? 32 : 16;`: a constant whose
    initializer spells a macro, so its value may differ from one target to another."""

    name: str
    value: Expr  # the initializer, read as a preprocessor expression (Opaque when it is not one)
    text: str
    line: int
    region: int


@dataclass(frozen=True)
class StaticAssert:
    """`static_assert(cond, ...)`, with the names its condition spells."""

    names: tuple[str, ...]
    line: int
    col: int
    region: int
    function: str  # enclosing function's qualname, '' outside functions


@dataclass(frozen=True)
class SmemRequest:
    kind: str  # 'static' | 'dynamic-attr' | 'launch'
    nbytes: int | None  # None when the size does not fold to a constant
    text: str  # the size expression as written
    line: int
    col: int
    region: int
    function: str


@dataclass(frozen=True)
class Diagnostic:
    """Something archlint could not do with an input (AL902 and kin). Not a finding."""

    path: str
    message: str
    line: int = 0
    rule: str = "AL902"


@dataclass(frozen=True)
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
    template_holes: tuple = ()  # cpp.jinja.TemplateHole: a template's placeholders that are not plain values
    declarations: Declarations = Declarations()  # namespace-scope definitions, for declaration reach
    arch_constants: tuple[ArchConstant, ...] = ()
    static_asserts: tuple[StaticAssert, ...] = ()


@dataclass(frozen=True)
class Suppression:
    line: int  # the line the suppression covers
    ids: tuple[str, ...]  # ids or names, as written
    file_level: bool
    comment_line: int


# ---------------------------------------------------------------- findings


@dataclass(frozen=True)
class Evidence:
    """One hop of an evidence chain: a place and what it says."""

    location: Location
    message: str


@dataclass(frozen=True)
class Fix:
    """A textual replacement a maintainer would make (0-based columns are not used: 1-based)."""

    location: Location  # the span to replace (line/col to end_line/end_col, end exclusive)
    replacement: str
    description: str


@dataclass(frozen=True)
class Finding:
    rule: str  # 'AL101'
    level: Level
    message: str
    location: Location
    targets: tuple[str, ...] = ()
    evidence: tuple[Evidence, ...] = ()
    symbol: str = ""  # enclosing function/gate, for baseline keys
    snippet: str = ""  # the source line, stripped, for baseline keys
    fixes: tuple[Fix, ...] = ()
    properties: tuple[tuple[str, str], ...] = field(default=())
    suppressed: bool = False

    def sort_key(self) -> tuple:
        return (self.location.path, self.location.line, self.location.col, self.rule, self.message)
