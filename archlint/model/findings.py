"""Plain frozen data passed between pipeline stages. No logic beyond trivial helpers."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from archlint.model.records import fast_pickling


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


@dataclass(frozen=True, order=True, slots=True)
class Location:
    """A place in a scanned file. `path` is posix, relative to the scan root (the report root, the
    repository's top, once post-processed); line/col 1-based."""

    path: str
    line: int
    col: int = 1
    end_line: int = 0
    end_col: int = 0


# ---------------------------------------------------------------- preprocessor expressions


# ---------------------------------------------------------------- CUDA / C++ facts


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """Something archlint could not do with an input (AL902 and kin). Not a finding. One about a
    whole file (unreadable, binary, too large) is at its first line: every report format and
    editor takes line 1, where a line 0 is out of range (SARIF regions start at 1)."""

    path: str
    message: str
    line: int = 1
    rule: str = "AL902"


@dataclass(frozen=True, slots=True)
class Suppression:
    line: int  # the (first) line the suppression covers
    ids: tuple[str, ...]  # ids or names, as written
    file_level: bool
    comment_line: int
    end_line: int = 0  # the last line it covers (a Python statement's last); 0: `line` only
    noqa: bool = False  # `# noqa: AL101`: covers nothing; the ids are those archlint would have read (AL903)

    def covers(self, line: int) -> bool:
        return self.file_level or self.line <= line <= max(self.line, self.end_line)


# ---------------------------------------------------------------- findings


class EvidenceKind(Enum):
    """What one hop of an evidence chain is. Consumers read a hop's kind and typed fields, never its
    message; the message is for people (text, JSON, SARIF)."""

    GATE = "gate"  # the gate's condition, or the gate excluding one build
    CALL = "call"  # a Python call on the way from the gate to a build; name: the callee
    BUILDS = "builds"  # a JIT spec naming a source; source: the file (for one the JIT renders: its template)
    COMPILES = "compiles"  # the translation unit that is compiled; source: its path
    INCLUDE = "include"  # an #include on the way to a file; source: the file included
    CONSTRUCT = "construct"  # an instruction or intrinsic the target lacks; name: the construct
    CHECKED = "checked"  # an arch-sensitive construct the target has, under its guard; name: the construct
    SMEM = "smem"  # a shared-memory request above the target's limit
    ASSERT = "assert"  # a static assertion that fails for the target
    TEMPLATE = "template"  # a template placeholder filled in from the Python
    KERNEL = "kernel"  # a kernel's definition; name: the kernel
    EMPTY_KERNEL = "empty-kernel"  # a kernel compiled to an empty body; name: the kernel
    TRAP_KERNEL = "trap-kernel"  # a kernel compiled to traps only; name: the kernel
    DEVICE_FUNCTION = "device-function"  # a device function kernels call; name: the function
    TRAP_CALL = "trap-call"  # a device function that traps for the target; name: the function
    PREBUILT = "prebuilt"  # where a unit loads prebuilt kernels: a loader call, or an include of their interface
    ARCH_CHECK = "arch-check"  # host code that lets only some GPUs run the unit's prebuilt kernels; name: the check
    IMAGES = "images"  # the images a prebuilt extension module carries; source: the module; name: the call into it
    CONDITION = "condition"  # an arch condition and the targets it is true for
    REQUIREMENT = "requirement"  # the targets a construct compiles for and the source of its requirement
    LIMIT = "limit"  # a device's shared-memory limits
    VERDICT = "verdict"  # the static verdict a finding rests on


@dataclass(frozen=True, slots=True)
class Evidence:
    """One hop of an evidence chain: a place, what it says, and what kind of hop it is. `source` and
    `name` are set for the kinds that say so (EvidenceKind); empty otherwise."""

    location: Location
    message: str
    kind: EvidenceKind
    source: str = ""  # root-relative path of the file a BUILDS, COMPILES or INCLUDE hop names
    name: str = ""  # the callee, construct, kernel or function a hop is about


@dataclass(frozen=True, slots=True)
class Fix:
    """A textual replacement a maintainer would make (0-based columns are not used: 1-based)."""

    location: Location  # the span to replace (line/col to end_line/end_col, end exclusive)
    replacement: str
    description: str


@dataclass(frozen=True, slots=True)
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


fast_pickling(globals())
