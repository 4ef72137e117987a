"""The CUDA driver API, read directly: `cuda-bindings` when importable, else ctypes on libcuda.

Never through a framework (PyTorch's property names drift between releases; the driver's attribute
ids do not). Every call's CUresult is checked and named. The library loader is injectable: pass
`load_library` to `open_driver`, or set `LOAD_LIBRARY_HOOK`, and any object with the driver's
function names (writing into ctypes byref arguments, returning CUresult codes) stands in for libcuda.
"""

from __future__ import annotations

import ctypes
from typing import Any, Callable

# CUdevice_attribute ids (cuda.h, CUDA 13.0)
ATTR_MAX_SHARED_MEMORY_PER_BLOCK = 8
ATTR_MAX_REGISTERS_PER_BLOCK = 12
ATTR_MULTIPROCESSOR_COUNT = 16
ATTR_COMPUTE_CAPABILITY_MAJOR = 75
ATTR_COMPUTE_CAPABILITY_MINOR = 76
ATTR_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR = 81
ATTR_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97

# CUfunction_attribute
FUNC_ATTR_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8

# CUresult names for when cuGetErrorName is unavailable (cuda.h, CUDA 13.0, enum cudaError_enum).
ERROR_NAMES: dict[int, str] = {
    0: "CUDA_SUCCESS",
    1: "CUDA_ERROR_INVALID_VALUE",
    2: "CUDA_ERROR_OUT_OF_MEMORY",
    3: "CUDA_ERROR_NOT_INITIALIZED",
    4: "CUDA_ERROR_DEINITIALIZED",
    34: "CUDA_ERROR_STUB_LIBRARY",
    35: "CUDA_ERROR_INSUFFICIENT_DRIVER",  # cudaError_t value; the driver reports 803/804 instead
    36: "CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER",
    46: "CUDA_ERROR_DEVICE_UNAVAILABLE",
    100: "CUDA_ERROR_NO_DEVICE",
    101: "CUDA_ERROR_INVALID_DEVICE",
    102: "CUDA_ERROR_DEVICE_NOT_LICENSED",
    200: "CUDA_ERROR_INVALID_IMAGE",
    201: "CUDA_ERROR_INVALID_CONTEXT",
    209: "CUDA_ERROR_NO_BINARY_FOR_GPU",
    218: "CUDA_ERROR_INVALID_PTX",
    221: "CUDA_ERROR_JIT_COMPILER_NOT_FOUND",
    222: "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
    223: "CUDA_ERROR_JIT_COMPILATION_DISABLED",
    301: "CUDA_ERROR_FILE_NOT_FOUND",
    304: "CUDA_ERROR_OPERATING_SYSTEM",
    400: "CUDA_ERROR_INVALID_HANDLE",
    500: "CUDA_ERROR_NOT_FOUND",
    700: "CUDA_ERROR_ILLEGAL_ADDRESS",
    701: "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
    702: "CUDA_ERROR_LAUNCH_TIMEOUT",
    715: "CUDA_ERROR_ILLEGAL_INSTRUCTION",
    719: "CUDA_ERROR_LAUNCH_FAILED",
    800: "CUDA_ERROR_NOT_PERMITTED",
    801: "CUDA_ERROR_NOT_SUPPORTED",
    802: "CUDA_ERROR_SYSTEM_NOT_READY",
    803: "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
    804: "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE",
    999: "CUDA_ERROR_UNKNOWN",
}

LIBRARY_NAMES = ("libcuda.so.1", "libcuda.so", "nvcuda.dll")

# Tests (or embedders) may set this to a zero-argument callable returning a libcuda stand-in.
LOAD_LIBRARY_HOOK: Callable[[], Any] | None = None


class DriverError(RuntimeError):
    """A CUDA driver call failed, or there is no driver. The message is one line, fit to print."""

    def __init__(self, message: str, code: int | None = None, call: str = ""):
        super().__init__(message)
        self.code = code
        self.call = call


def error_name_from_table(code: int) -> str:
    return ERROR_NAMES.get(int(code), f"CUDA error {int(code)}")


def load_libcuda(names: tuple[str, ...] = LIBRARY_NAMES) -> ctypes.CDLL:
    reasons = []
    for name in names:
        try:
            return ctypes.CDLL(name)
        except OSError as exc:
            reasons.append(str(exc).split(":")[-1].strip() or name)
    raise DriverError(
        f"no NVIDIA driver on this machine: {names[0]} could not be loaded ({reasons[0] if reasons else 'not found'})"
    )


class CtypesDriver:
    """libcuda through ctypes. `lib` is a ctypes.CDLL or any object with the same function names."""

    backend = "ctypes"

    def __init__(self, lib: Any):
        self.lib = lib

    def function(self, *names: str) -> Callable[..., int]:
        """The first of `names` the library exports (versioned symbols first, e.g. `_v2`)."""
        for name in names:
            fn = getattr(self.lib, name, None)
            if fn is not None:
                return fn
        raise DriverError(f"{names[-1]} is missing from the CUDA driver library (driver too old?)", call=names[-1])

    def call(self, name: str, *args: Any, alternatives: tuple[str, ...] = ()) -> None:
        code = self.function(*alternatives, name)(*args)
        self.check(code, name)

    def check(self, code: int, call: str) -> None:
        code = int(code or 0)
        if code != 0:
            raise DriverError(f"{call} failed: {self.error_name(code)} ({code})", code=code, call=call)

    def error_name(self, code: int) -> str:
        fn = getattr(self.lib, "cuGetErrorName", None)
        if fn is not None:
            text = ctypes.c_char_p()
            try:
                if int(fn(int(code), ctypes.byref(text)) or 0) == 0 and text.value:
                    return text.value.decode(errors="replace")
            except (OSError, TypeError, ValueError, AttributeError):
                pass
        return error_name_from_table(code)

    def init(self) -> None:
        self.call("cuInit", 0)

    def driver_version(self) -> int:
        value = ctypes.c_int()
        self.call("cuDriverGetVersion", ctypes.byref(value))
        return value.value

    def device_count(self) -> int:
        value = ctypes.c_int()
        self.call("cuDeviceGetCount", ctypes.byref(value))
        return value.value

    def device(self, index: int) -> int:
        handle = ctypes.c_int()
        self.call("cuDeviceGet", ctypes.byref(handle), int(index))
        return handle.value

    def name(self, device: int) -> str:
        buffer = ctypes.create_string_buffer(256)
        self.call("cuDeviceGetName", buffer, 256, device)
        return buffer.value.decode(errors="replace").strip()

    def attribute(self, attribute: int, device: int) -> int:
        value = ctypes.c_int()
        self.call("cuDeviceGetAttribute", ctypes.byref(value), int(attribute), device)
        return value.value


class BindingsDriver:
    """The same calls through NVIDIA's `cuda-bindings` package (`cuda.bindings.driver` or `cuda.cuda`)."""

    backend = "cuda-bindings"

    def __init__(self, module: Any):
        self.mod = module

    def _call(self, name: str, *args: Any) -> tuple:
        try:
            result = getattr(self.mod, name)(*args)
        except DriverError:
            raise
        except Exception as exc:  # the bindings raise their own types when libcuda is missing
            raise DriverError(f"{name} failed: {exc}".splitlines()[0], call=name) from exc
        result = result if isinstance(result, tuple) else (result,)
        code = _as_int(result[0])
        if code != 0:
            raise DriverError(f"{name} failed: {self.error_name(result[0])} ({code})", code=code, call=name)
        return result[1:]

    def error_name(self, code: Any) -> str:
        try:
            err, text = self.mod.cuGetErrorName(code)
            if _as_int(err) == 0 and text:
                return text.decode(errors="replace") if isinstance(text, bytes) else str(text)
        except Exception:
            pass
        return error_name_from_table(_as_int(code))

    def init(self) -> None:
        self._call("cuInit", 0)

    def driver_version(self) -> int:
        return int(self._call("cuDriverGetVersion")[0])

    def device_count(self) -> int:
        return int(self._call("cuDeviceGetCount")[0])

    def device(self, index: int) -> Any:
        return self._call("cuDeviceGet", int(index))[0]

    def name(self, device: Any) -> str:
        raw = self._call("cuDeviceGetName", 256, device)[0]
        raw = raw.split(b"\0", 1)[0] if isinstance(raw, bytes) else raw
        return (raw.decode(errors="replace") if isinstance(raw, bytes) else str(raw)).strip()

    def attribute(self, attribute: int, device: Any) -> int:
        enum = getattr(self.mod, "CUdevice_attribute", None)
        attr = enum(attribute) if enum is not None else attribute
        return int(self._call("cuDeviceGetAttribute", attr, device)[0])


def _as_int(code: Any) -> int:
    try:
        return int(code)
    except (TypeError, ValueError):
        return int(getattr(code, "value", 999))


def import_bindings() -> Any | None:
    """`cuda.bindings.driver` (cuda-bindings >= 12.6), else the older `cuda.cuda`, else None."""
    try:
        from cuda.bindings import driver  # type: ignore[import-not-found]

        return driver
    except Exception:
        pass
    try:
        from cuda import cuda  # type: ignore[import-not-found]

        return cuda
    except Exception:
        return None


def open_driver(load_library: Callable[[], Any] | None = None, prefer_bindings: bool = True):
    """A driver object (CtypesDriver or BindingsDriver); nothing is called yet.

    An injected loader (argument or LOAD_LIBRARY_HOOK) always wins and selects ctypes.
    """
    loader = load_library or LOAD_LIBRARY_HOOK
    if loader is not None:
        return CtypesDriver(loader())
    if prefer_bindings:
        module = import_bindings()
        if module is not None:
            return BindingsDriver(module)
    return CtypesDriver(load_libcuda())


def open_ctypes_driver(load_library: Callable[[], Any] | None = None) -> CtypesDriver:
    """Always ctypes: the launch probe passes raw pointers, which the bindings wrap differently."""
    loader = load_library or LOAD_LIBRARY_HOOK or load_libcuda
    return CtypesDriver(loader())
