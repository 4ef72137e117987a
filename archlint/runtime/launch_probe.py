"""Prove a shared-memory budget on the real device: launch a kernel asking for N bytes of dynamic
shared memory and see whether the driver takes it.

A compile never proves a budget (dynamic shared memory compiles for any N), so
this is the only check that can. The kernel is PTX written out below and JIT-compiled by the driver
itself (`cuModuleLoadData`), so the probe needs nothing but libcuda: no nvcc, no NVRTC, no framework.
All through ctypes, on the device's primary context.
"""

from __future__ import annotations

import ctypes
from typing import Any, Callable, Iterable, NamedTuple

from archlint.runtime import driver as drv

KERNEL_NAME = b"archlint_smem_probe"

# PTX ISA 6.4 / sm_75 so any driver from CUDA 10.1 on can JIT it for its device. The kernel writes
# one byte at offset n-1 of its dynamic shared memory, so the allocation is really used.
PROBE_PTX = b"""
.version 6.4
.target sm_75
.address_size 64

.extern .shared .align 16 .b8 archlint_dynamic_smem[];

.visible .entry archlint_smem_probe(
	.param .u32 archlint_smem_probe_param_0
)
{
	.reg .pred 	%p<2>;
	.reg .b16 	%rs<2>;
	.reg .b32 	%r<4>;

	ld.param.u32 	%r1, [archlint_smem_probe_param_0];
	setp.eq.s32 	%p1, %r1, 0;
	@%p1 bra 	$L__BB0_2;
	mov.u32 	%r2, archlint_dynamic_smem;
	add.s32 	%r3, %r2, %r1;
	mov.b16 	%rs1, 1;
	st.shared.u8 	[%r3+-1], %rs1;
$L__BB0_2:
	ret;
}
"""

THREADS = 32


class SmemProbe(NamedTuple):
    """One launch: `ok` when the kernel ran with `nbytes` of dynamic shared memory."""

    nbytes: int
    ok: bool
    error: str  # '' when ok; else the failing call and the driver's error name


def probe_smem(
    device_index: int, sizes: Iterable[int], load_library: Callable[[], Any] | None = None
) -> list[SmemProbe]:
    """Launch the probe kernel once per size on device `device_index`. Raises DriverError only when
    the probe cannot start (no driver, no device, module load fails); a refused size is a result."""
    api = drv.open_ctypes_driver(load_library)
    api.init()
    count = api.device_count()
    if not 0 <= device_index < count:
        raise drv.DriverError(f"device {device_index} is out of range: this machine has {count} CUDA device(s)", 101)
    device = api.device(device_index)
    context = ctypes.c_void_p()
    api.call("cuDevicePrimaryCtxRetain", ctypes.byref(context), device)
    try:
        api.call("cuCtxSetCurrent", context)
        return _probe_in_context(api, sizes)
    finally:
        _quietly(api, "cuDevicePrimaryCtxRelease", device, alternatives=("cuDevicePrimaryCtxRelease_v2",))


def _probe_in_context(api: drv.CtypesDriver, sizes: Iterable[int]) -> list[SmemProbe]:
    module = ctypes.c_void_p()
    api.call("cuModuleLoadData", ctypes.byref(module), PROBE_PTX)
    try:
        function = ctypes.c_void_p()
        api.call("cuModuleGetFunction", ctypes.byref(function), module, KERNEL_NAME)
        results: list[SmemProbe] = []
        for nbytes in sizes:
            results.append(launch_once(api, function, int(nbytes)))
            if _sticky(results[-1]):
                break  # the context is unusable now; later sizes would only repeat the error
        return results
    finally:
        _quietly(api, "cuModuleUnload", module)


def launch_once(api: drv.CtypesDriver, function: ctypes.c_void_p, nbytes: int) -> SmemProbe:
    try:
        api.call("cuFuncSetAttribute", function, drv.FUNC_ATTR_MAX_DYNAMIC_SHARED_SIZE_BYTES, nbytes)
        argument = ctypes.c_uint(nbytes)
        params = (ctypes.c_void_p * 1)(ctypes.addressof(argument))
        api.call("cuLaunchKernel", function, 1, 1, 1, THREADS, 1, 1, nbytes, None, params, None)
        api.call("cuCtxSynchronize")
    except drv.DriverError as exc:
        return SmemProbe(nbytes, False, str(exc))
    return SmemProbe(nbytes, True, "")


_STICKY = ("CUDA_ERROR_ILLEGAL_ADDRESS", "CUDA_ERROR_LAUNCH_FAILED", "CUDA_ERROR_ILLEGAL_INSTRUCTION")


def _sticky(result: SmemProbe) -> bool:
    return not result.ok and any(name in result.error for name in _STICKY)


def _quietly(api: drv.CtypesDriver, name: str, *args: Any, alternatives: tuple[str, ...] = ()) -> None:
    try:
        api.call(name, *args, alternatives=alternatives)
    except drv.DriverError:
        pass  # cleanup after a failure must not hide the failure


def limit_sizes(optin: int, requests: Iterable[int] = ()) -> list[int]:
    """The sizes worth launching: the 48 KB default, the opt-in limit, one byte over, and each request."""
    sizes = {48 * 1024, optin, optin + 1, *(int(n) for n in requests if n and n > 0)}
    return sorted(sizes)


def format_probe(result: SmemProbe, optin: int | None = None) -> str:
    where = ""
    if optin is not None:
        delta = result.nbytes - optin
        where = " (the opt-in limit)" if delta == 0 else f" (limit {delta:+,} B)"
    verdict = "launched" if result.ok else f"failed: {result.error}"
    return f"{result.nbytes:>9,} B{where}: {verdict}"
