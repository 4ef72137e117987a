"""The driver layer against a fake libcuda: success, no driver, failing calls, bad device index."""

from __future__ import annotations

import ctypes

import pytest
from hypothesis import given
from hypothesis import strategies as st

from archlint.runtime import driver as drv
from archlint.runtime.device import (
    DeviceInfo,
    format_bytes,
    format_device,
    parse_profile_cc,
    profile_device,
    read_device,
)

H200 = {
    drv.ATTR_COMPUTE_CAPABILITY_MAJOR: 9,
    drv.ATTR_COMPUTE_CAPABILITY_MINOR: 0,
    drv.ATTR_MULTIPROCESSOR_COUNT: 132,
    drv.ATTR_MAX_SHARED_MEMORY_PER_BLOCK: 49152,
    drv.ATTR_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: 233472,
    drv.ATTR_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: 232448,
    drv.ATTR_MAX_REGISTERS_PER_BLOCK: 65536,
}


def _write(ref, value):
    ref._obj.value = value


class FakeDriver:
    """libcuda's calls as Python functions: write through byref, return a CUresult."""

    def __init__(self, attributes=None, count=1, fail=None, name=b"NVIDIA H200", error_names=True):
        self.attributes = dict(H200 if attributes is None else attributes)
        self.count = count
        self.fail = fail or {}  # call name (or ('cuDeviceGetAttribute', id)) -> CUresult
        self.name_bytes = name
        self.calls: list[str] = []
        if not error_names:
            self.cuGetErrorName = None

    def cuInit(self, flags):
        self.calls.append("cuInit")
        return self.fail.get("cuInit", 0)

    def cuDriverGetVersion(self, ref):
        _write(ref, 13000)
        return self.fail.get("cuDriverGetVersion", 0)

    def cuDeviceGetCount(self, ref):
        _write(ref, self.count)
        return self.fail.get("cuDeviceGetCount", 0)

    def cuDeviceGet(self, ref, index):
        if index >= self.count:
            return 101
        _write(ref, index)
        return 0

    def cuDeviceGetName(self, buffer, length, device):
        buffer.value = self.name_bytes[: length - 1]
        return self.fail.get("cuDeviceGetName", 0)

    def cuDeviceGetAttribute(self, ref, attribute, device):
        code = self.fail.get(("cuDeviceGetAttribute", attribute), 0)
        if code:
            return code
        if attribute not in self.attributes:
            return 1
        _write(ref, self.attributes[attribute])
        return 0

    def cuGetErrorName(self, code, ref):
        name = drv.ERROR_NAMES.get(code)
        if name is None:
            return 1
        ref._obj.value = name.encode()
        return 0


def test_reads_an_h200_like_device():
    fake = FakeDriver()
    info = read_device(0, load_library=lambda: fake)
    assert info == DeviceInfo(
        name="NVIDIA H200",
        cc=90,
        major=9,
        minor=0,
        sm_count=132,
        smem_per_block=49152,
        smem_per_sm=233472,
        smem_per_block_optin=232448,
        max_registers_per_block=65536,
        driver_version=13000,
        source="driver",
        index=0,
    )
    assert fake.calls[0] == "cuInit"
    text = format_device(info)
    assert "232,448 B (227.0 KB)" in text and "233,472 B (228.0 KB)" in text
    assert "compute capability 9.0" in text and "SMs: 132" in text and "CUDA 13.0" in text


def test_no_libcuda_gives_one_clear_line(monkeypatch):
    def missing(name):
        raise OSError(f"{name}: cannot open shared object file: No such file or directory")

    monkeypatch.setattr(drv.ctypes, "CDLL", missing)
    with pytest.raises(drv.DriverError) as caught:
        drv.load_libcuda()
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("no NVIDIA driver on this machine: libcuda.so.1 could not be loaded")


def test_open_driver_without_bindings_or_library(monkeypatch):
    monkeypatch.setattr(drv, "import_bindings", lambda: None)
    monkeypatch.setattr(drv.ctypes, "CDLL", lambda name: (_ for _ in ()).throw(OSError("nope")))
    with pytest.raises(drv.DriverError, match="no NVIDIA driver"):
        read_device(0)


def test_cuinit_no_device_is_named():
    fake = FakeDriver(fail={"cuInit": 100})
    with pytest.raises(drv.DriverError) as caught:
        read_device(0, load_library=lambda: fake)
    assert str(caught.value) == "cuInit failed: CUDA_ERROR_NO_DEVICE (100)"
    assert caught.value.code == 100 and caught.value.call == "cuInit"


def test_error_names_fall_back_to_the_table():
    fake = FakeDriver(fail={"cuInit": 3}, error_names=False)
    with pytest.raises(drv.DriverError, match=r"CUDA_ERROR_NOT_INITIALIZED \(3\)"):
        read_device(0, load_library=lambda: fake)
    assert drv.error_name_from_table(12345) == "CUDA error 12345"


def test_compute_capability_failure_raises():
    fake = FakeDriver(fail={("cuDeviceGetAttribute", drv.ATTR_COMPUTE_CAPABILITY_MAJOR): 999})
    with pytest.raises(drv.DriverError, match=r"cuDeviceGetAttribute failed: CUDA_ERROR_UNKNOWN \(999\)"):
        read_device(0, load_library=lambda: fake)


def test_an_optional_attribute_failing_is_noted_not_fatal():
    fake = FakeDriver(fail={("cuDeviceGetAttribute", drv.ATTR_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN): 1})
    info = read_device(0, load_library=lambda: fake)
    assert info.smem_per_block_optin is None and info.smem_per_sm == 233472
    assert info.notes == ("attribute 97 (smem_per_block_optin): cuDeviceGetAttribute failed: CUDA_ERROR_INVALID_VALUE (1)",)
    assert "per block opt-in: unknown" in format_device(info)


@pytest.mark.parametrize("index,count", [(1, 1), (3, 2), (-1, 1), (0, 0)])
def test_device_index_out_of_range(index, count):
    fake = FakeDriver(count=count)
    with pytest.raises(drv.DriverError, match=rf"device {index} is out of range: this machine has {count} CUDA device"):
        read_device(index, load_library=lambda: fake)


def test_module_level_hook(monkeypatch):
    monkeypatch.setattr(drv, "LOAD_LIBRARY_HOOK", lambda: FakeDriver(name=b"Fake GPU"))
    assert read_device(0).name == "Fake GPU"


def test_missing_symbol_is_a_driver_error():
    class Old:
        def cuInit(self, flags):
            return 0

    with pytest.raises(drv.DriverError, match="cuDeviceGetCount is missing"):
        read_device(0, load_library=Old)


class FakeBindings:
    """The shape of cuda.bindings.driver: calls return (CUresult, value...)."""

    CUdevice_attribute = int

    def __init__(self, init_code=0):
        self.init_code = init_code

    def cuInit(self, flags):
        return (self.init_code,)

    def cuDriverGetVersion(self):
        return (0, 13000)

    def cuDeviceGetCount(self):
        return (0, 1)

    def cuDeviceGet(self, index):
        return (0, index)

    def cuDeviceGetName(self, length, device):
        return (0, b"NVIDIA H200" + b"\0" * 8)

    def cuDeviceGetAttribute(self, attribute, device):
        return (0, H200[attribute])

    def cuGetErrorName(self, code):
        return (0, drv.ERROR_NAMES[code].encode())


def test_bindings_backend(monkeypatch):
    monkeypatch.setattr(drv, "import_bindings", lambda: FakeBindings())
    info = read_device(0)
    assert (info.name, info.cc, info.smem_per_block_optin) == ("NVIDIA H200", 90, 232448)
    monkeypatch.setattr(drv, "import_bindings", lambda: FakeBindings(init_code=100))
    with pytest.raises(drv.DriverError, match=r"cuInit failed: CUDA_ERROR_NO_DEVICE \(100\)"):
        read_device(0)


def test_real_ctypes_byref_roundtrip():
    value = ctypes.c_int()
    _write(ctypes.byref(value), 7)
    assert value.value == 7


# ---------------------------------------------------------------- profiles


@pytest.mark.parametrize("spelling", ["sm_120", "SM_120a", "12.0", "120", "compute_120"])
def test_profile_spellings(spelling):
    info = profile_device(spelling)
    assert (info.cc, info.major, info.minor, info.source) == (120, 12, 0, "profile")
    assert info.smem_per_sm == 102400 and info.smem_per_block_optin == 101376 and info.sm_count == 188
    text = format_device(info)
    assert "102,400 B (100.0 KB)" in text and "101,376 B (99.0 KB)" in text


def test_sm90_profile():
    info = profile_device("sm_90")
    assert info.smem_per_block_optin == 232448 and info.index is None


@pytest.mark.parametrize("bad", ["sm_999", "banana", "9", "sm_"])
def test_bad_profiles(bad):
    with pytest.raises(ValueError):
        profile_device(bad)


@given(st.integers(min_value=0, max_value=10**9))
def test_format_bytes_round_trips_the_byte_count(n):
    text = format_bytes(n)
    assert int(text.split(" B ")[0].replace(",", "")) == n
    assert text.endswith(f"({n / 1024:.1f} KB)")


@given(st.integers(min_value=1, max_value=15), st.integers(min_value=0, max_value=9))
def test_parse_profile_cc_dotted_and_plain_agree(major, minor):
    assert parse_profile_cc(f"{major}.{minor}") == parse_profile_cc(f"sm_{major}{minor}") == major * 10 + minor


# ---------------------------------------------------------------- the launch probe, against a fake


class FakeLaunchDriver(FakeDriver):
    def __init__(self, optin=232448, **kwargs):
        super().__init__(**kwargs)
        self.optin = optin
        self.attribute_value = 0
        self.launched: list[int] = []
        self.released = False

    def cuDevicePrimaryCtxRetain(self, ref, device):
        ref._obj.value = 0x1000
        return 0

    def cuCtxSetCurrent(self, context):
        return 0

    def cuModuleLoadData(self, ref, image):
        assert b".entry archlint_smem_probe" in image
        ref._obj.value = 0x2000
        return 0

    def cuModuleGetFunction(self, ref, module, name):
        ref._obj.value = 0x3000
        return 0 if name == b"archlint_smem_probe" else 500

    def cuFuncSetAttribute(self, function, attribute, value):
        assert attribute == drv.FUNC_ATTR_MAX_DYNAMIC_SHARED_SIZE_BYTES
        if value > self.optin:
            return 1
        self.attribute_value = value
        return 0

    def cuLaunchKernel(self, function, gx, gy, gz, bx, by, bz, smem, stream, params, extra):
        if smem > self.attribute_value and smem > 49152:
            return 1
        self.launched.append(smem)
        return 0

    def cuCtxSynchronize(self):
        return 0

    def cuModuleUnload(self, module):
        return 0

    def cuDevicePrimaryCtxRelease_v2(self, device):
        self.released = True
        return 0


def test_launch_probe_brackets_the_optin_limit():
    from archlint.runtime.launch_probe import format_probe, limit_sizes, probe_smem

    fake = FakeLaunchDriver()
    sizes = limit_sizes(232448, requests=[163840])
    assert sizes == [49152, 163840, 232448, 232449]
    results = probe_smem(0, sizes, load_library=lambda: fake)
    assert [(r.nbytes, r.ok) for r in results] == [(49152, True), (163840, True), (232448, True), (232449, False)]
    assert results[-1].error == "cuFuncSetAttribute failed: CUDA_ERROR_INVALID_VALUE (1)"
    assert fake.launched == [49152, 163840, 232448] and fake.released
    assert format_probe(results[2], 232448) == "  232,448 B (the opt-in limit): launched"
    assert format_probe(results[3], 232448).startswith("  232,449 B (limit +1 B): failed: cuFuncSetAttribute")
    n, ok, error = results[0]
    assert (n, ok, error) == (49152, True, "")


def test_launch_probe_releases_the_context_when_loading_fails():
    from archlint.runtime.launch_probe import probe_smem

    class NoJit(FakeLaunchDriver):
        def cuModuleLoadData(self, ref, image):
            return 221

    fake = NoJit()
    with pytest.raises(drv.DriverError, match=r"cuModuleLoadData failed: CUDA_ERROR_JIT_COMPILER_NOT_FOUND \(221\)"):
        probe_smem(0, [1024], load_library=lambda: fake)
    assert fake.released
    with pytest.raises(drv.DriverError, match="device 2 is out of range"):
        probe_smem(2, [1024], load_library=lambda: FakeLaunchDriver())
