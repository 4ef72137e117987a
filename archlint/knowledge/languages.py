"""The one table of file suffixes: which language archlint reads a file as."""

from __future__ import annotations

CUDA_SUFFIXES = frozenset({".cu", ".cuh", ".h", ".hh", ".hpp", ".hxx", ".inl", ".inc", ".cc", ".cpp", ".cxx", ".cuinl"})


# Translation-unit sources, not headers: what such a file defines is compiled wherever it is included.
SOURCE_SUFFIXES = (".cu", ".cc", ".cpp", ".cxx")
HEADER_SUFFIXES = tuple(sorted(CUDA_SUFFIXES - set(SOURCE_SUFFIXES)))


PYTHON_SUFFIXES = frozenset({".py"})


TEMPLATE_SUFFIXES = frozenset({".jinja"})


# Prebuilt extension modules: read for the images their fatbins carry (extract/binary), never loaded.
BINARY_SUFFIXES = frozenset({".so"})
# CMake build lists: `CMakeLists.txt` by its whole name, included scripts by their suffix.
CMAKE_SUFFIXES = frozenset({".cmake"})
CMAKE_NAMES = frozenset({"CMakeLists.txt"})


CUDA_EXTENSIONS = (".cu", ".cuh", ".h", ".hpp", ".cpp", ".cc", ".inl", ".jinja")


def is_cuda_name(name: str) -> bool:
    return name.endswith(CUDA_EXTENSIONS) and len(name) > 3
