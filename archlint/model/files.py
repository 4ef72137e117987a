"""Discovered files and the facts read from each."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from archlint.model.findings import Diagnostic
from archlint.model.records import fast_pickling

if TYPE_CHECKING:  # annotations only: a stored result loads without these
    from archlint.model.binary import BinaryFacts
    from archlint.model.build import CMakeFacts
    from archlint.model.cuda import CudaFacts
    from archlint.model.python import PythonFacts


@dataclass(frozen=True, slots=True)
class SourceFile:
    path: str  # posix, relative to the scan root
    absolute: str
    language: str  # 'cuda' | 'python' | 'template' | 'binary' | 'cmake'


@dataclass(frozen=True, slots=True)
class Discovery:
    root: str
    files: tuple[SourceFile, ...]
    diagnostics: tuple[Diagnostic, ...]


@dataclass(frozen=True, slots=True)
class FileFacts:
    file: SourceFile
    cuda: CudaFacts | None = None
    python: PythonFacts | None = None
    diagnostics: tuple[Diagnostic, ...] = ()
    binary: BinaryFacts | None = None  # a prebuilt extension module's images
    cmake: CMakeFacts | None = None


fast_pickling(globals())
