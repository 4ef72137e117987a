"""Build lists: what a CMake file says, command by command, and the build blocks read from it (the
sources an architecture list compiles, the extension they join, the -D flags the block adds)."""

from __future__ import annotations

from dataclasses import dataclass

from archlint.model.findings import Diagnostic, Suppression
from archlint.model.records import fast_pickling


@dataclass(frozen=True, slots=True)
class CMakeArg:
    """One argument as written: `text` without its quotes or brackets, escapes left as written."""

    text: str
    kind: str  # 'unquoted' | 'quoted' | 'bracket'


@dataclass(frozen=True, slots=True)
class CMakeCommand:
    """One command invocation, `name(args)`, with where it is written."""

    name: str  # as written; CMake compares command names case-insensitively
    args: tuple[CMakeArg, ...]
    line: int
    col: int
    end_line: int
    end_col: int

    @property
    def lowered(self) -> str:
        return self.name.lower()


@dataclass(frozen=True, slots=True)
class CMakeClause:
    """One arm of a block: its opening command (`if(...)`, `elseif(...)`, `else()`, `foreach(...)`,
    `function(...)`) and the statements of its body."""

    head: CMakeCommand
    body: tuple[CMakeStatement, ...]


@dataclass(frozen=True, slots=True)
class CMakeBlock:
    """`if`/`foreach`/`while`/`function`/`macro`/`block` with its arms, in order."""

    kind: str  # 'if' | 'foreach' | 'while' | 'function' | 'macro' | 'block'
    clauses: tuple[CMakeClause, ...]


CMakeStatement = CMakeCommand | CMakeBlock


@dataclass(frozen=True, slots=True)
class CMakeFacts:
    path: str
    sha256: str
    statements: tuple[CMakeStatement, ...]
    diagnostics: tuple[Diagnostic, ...] = ()
    suppressions: tuple[Suppression, ...] = ()  # `# archlint: ignore[AL101]` comments


@dataclass(frozen=True, slots=True)
class BuildSource:
    """A source a build block compiles: root-relative when found in the scan, else as written."""

    written: str
    path: str  # '' when it is not in the scanned trees (fetched or generated at build time)
    line: int  # the command that names it
    glob: str = ""  # the `file(GLOB ...)` pattern it came from, '' when named


@dataclass(frozen=True, slots=True)
class BuildBlock:
    """One architecture list of a build: the `cuda_archs_loose_intersection`-style call that makes
    it, the sources compiled for it, and what the block adds to the build."""

    path: str  # the CMake file holding the call
    line: int
    col: int
    end_line: int
    end_col: int
    text: str  # the call as written, on one line
    variable: str  # the list it sets (`SCALED_MM_ARCHS`)
    source_archs: tuple[str, ...]  # the list it intersects with the build's, evaluated (`10.0f;11.0f`)
    sources: tuple[BuildSource, ...]
    defines: tuple[str, ...]  # -D flags the block adds, `-DENABLE_X=1` as written
    target: str  # the extension target its sources join; '' when not found
    admitted: tuple[tuple[str, tuple[str, ...]], ...]  # requested arch -> the list's result for it
    toolkit: str  # the CUDA toolkit the file was read for ('13.0')
    condition_line: int = 0  # the `if(...)` line the block's sources are compiled under
    # the build's own list (`CUDA_ARCHS`, the supported archs kept to those asked for): what the
    # extension's other sources are compiled for; not a gate, but the last link of an op's chain
    whole_build: bool = False


fast_pickling(globals())
