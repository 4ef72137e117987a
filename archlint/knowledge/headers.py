"""Headers that come from the toolkit, the C++ standard library or a framework, not from the
scanned code: an `#include` of one left unresolved loses nothing arch-specific that archlint could
judge, and a Python string naming one is a name for the compiler's include search, never a source
a build compiles."""

from __future__ import annotations

import posixpath

from archlint.knowledge.languages import SOURCE_SUFFIXES

EXTERNAL_PREFIXES = (
    "cuda", "cuda_", "cuda/", "cub/", "thrust/", "nv/", "nvtx3/", "cooperative_groups", "mma.h", "sm_", "vector_",
    "torch/", "ATen/", "c10/", "pybind11/", "tvm/", "dlpack/", "Python.h", "nvrtc", "cublas", "cufft", "curand",
    "nccl", "mpi", "crt/", "device_", "host_", "math_", "builtin_", "texture_", "surface_", "library_types",
    "driver_", "nvml", "cudnn", "cusparse", "cusolver", "cupti", "flashinfer_ops", "gtest/", "benchmark/",
)
STD_HEADERS = frozenset(
    "algorithm array atomic bitset cassert cfloat chrono climits cmath complex condition_variable cstddef cstdint "
    "cstdio cstdlib cstring ctime deque exception fstream functional initializer_list iomanip iostream iterator "
    "limits list map memory mutex numeric optional ostream queue random ratio set sstream stack stdexcept string "
    "string_view thread tuple type_traits typeinfo unordered_map unordered_set utility variant vector assert.h "
    "stdint.h stdio.h stdlib.h string.h math.h float.h limits.h stddef.h unistd.h cxxabi.h dlfcn.h execinfo.h "
    "filesystem span any bit concepts source_location cinttypes cerrno csignal".split()
)
# What nvcc compiles as a unit (a template renders one): never a toolkit header, whatever its name starts with.
_UNIT_SUFFIXES = SOURCE_SUFFIXES + (".jinja",)


def is_external(target: str) -> bool:
    """An include target (as written in `#include`) that names a toolkit, std or framework header."""
    return target in STD_HEADERS or target.startswith(EXTERNAL_PREFIXES)


def is_external_header(name: str) -> bool:
    """A file name written on its own (no folder expression before it) that names a toolkit, std or
    framework header: `"cuda_bf16.h"`, `"crt/host_config.h"`. A compilation unit (`cuda_ops.cu`) is
    never one."""
    return not name.endswith(_UNIT_SUFFIXES) and posixpath.normpath(name) == name and is_external(name)
