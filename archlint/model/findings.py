"""Plain frozen data passed between pipeline stages. No logic beyond trivial helpers."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum



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


# ---------------------------------------------------------------- CUDA / C++ facts


@dataclass(frozen=True)
class Diagnostic:
    """Something archlint could not do with an input (AL902 and kin). Not a finding."""

    path: str
    message: str
    line: int = 0
    rule: str = "AL902"


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
