"""What a device is, in the terms archlint's verdicts need: read from the driver, or from a profile."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import partial
from typing import Any, Callable

from archlint.knowledge.arch import cc_text
from archlint.knowledge.resources import load_toml
from archlint.runtime import driver as drv


@dataclass(frozen=True)
class DeviceInfo:
    name: str
    cc: int  # 90, 120 ... (major * 10 + minor)
    major: int
    minor: int
    sm_count: int | None
    smem_per_block: int | None  # the default per-block limit (attribute 8), not the opt-in max
    smem_per_sm: int | None
    smem_per_block_optin: int | None
    max_registers_per_block: int | None
    driver_version: int | None
    source: str  # 'driver' | 'profile'
    index: int | None = None  # the driver's device ordinal; None for a profile
    notes: tuple[str, ...] = ()  # attribute reads that failed, and why

    @property
    def cc_text(self) -> str:
        return f"{self.major}.{self.minor}"


_OPTIONAL_ATTRIBUTES = (
    ("sm_count", drv.ATTR_MULTIPROCESSOR_COUNT),
    ("smem_per_block", drv.ATTR_MAX_SHARED_MEMORY_PER_BLOCK),
    ("smem_per_sm", drv.ATTR_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR),
    ("smem_per_block_optin", drv.ATTR_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN),
    ("max_registers_per_block", drv.ATTR_MAX_REGISTERS_PER_BLOCK),
)


def read_device(index: int = 0, load_library: Callable[[], Any] | None = None) -> DeviceInfo:
    """Read device `index` through the driver. Raises DriverError with a one-line message.

    Name and compute capability must read; the other limits become None (with a note) when an old
    driver does not know the attribute, so a partial answer still reaches the report.
    """
    api = drv.open_driver(load_library)
    api.init()
    count = api.device_count()
    if not 0 <= index < count:
        raise drv.DriverError(
            f"device {index} is out of range: this machine has {count} CUDA device{'s' if count != 1 else ''}"
            + (f" (0..{count - 1})" if count else ""),
            code=101,
            call="cuDeviceGet",
        )
    handle = api.device(index)
    major = api.attribute(drv.ATTR_COMPUTE_CAPABILITY_MAJOR, handle)
    minor = api.attribute(drv.ATTR_COMPUTE_CAPABILITY_MINOR, handle)
    values, notes = _read_optional(api, handle)
    version, version_note = _optional(api.driver_version)
    return DeviceInfo(
        name=api.name(handle),
        cc=major * 10 + minor,
        major=major,
        minor=minor,
        driver_version=version,
        source="driver",
        index=index,
        notes=tuple(notes) + ((version_note,) if version_note else ()),
        **values,
    )


def _read_optional(api: Any, handle: Any) -> tuple[dict[str, int | None], list[str]]:
    values: dict[str, int | None] = {}
    notes: list[str] = []
    for field_name, attribute in _OPTIONAL_ATTRIBUTES:
        values[field_name], note = _optional(partial(api.attribute, attribute, handle))
        if note:
            notes.append(f"attribute {attribute} ({field_name}): {note}")
    return values, notes


def _optional(read: Callable[[], int]) -> tuple[int | None, str]:
    try:
        return read(), ""
    except drv.DriverError as exc:
        return None, str(exc)


# ---------------------------------------------------------------- profiles

_PROFILE_RE = re.compile(r"^(?:sm_|compute_)?(\d{2,3})[af]?$")
_DOTTED_RE = re.compile(r"^(\d{1,2})\.(\d)$")


def parse_profile_cc(text: str) -> int:
    """`sm_120`, `sm_120a`, `120`, `12.0` → 120. Raises ValueError for anything else."""
    spelled = text.strip().lower()
    dotted = _DOTTED_RE.match(spelled)
    if dotted:
        return int(dotted.group(1)) * 10 + int(dotted.group(2))
    match = _PROFILE_RE.match(spelled)
    if not match:
        raise ValueError(f"not a device profile: {text!r} (expected e.g. sm_120, sm_90, 12.0 or 120)")
    return int(match.group(1))


def profile_rows() -> dict[int, dict]:
    return {int(row["cc"]): row for row in load_toml("kb/devices.toml").get("device", [])}


def profile_device(name: str) -> DeviceInfo:
    """The KB's device profile for a compute capability (rules/kb/devices.toml)."""
    cc = parse_profile_cc(name)
    rows = profile_rows()
    if cc not in rows:
        known = ", ".join(f"sm_{c}" for c in sorted(rows))
        raise ValueError(f"no device profile for compute capability {cc_text(cc)}; known: {known}")
    row = rows[cc]
    per_thread = row.get("max_registers_per_thread")
    return DeviceInfo(
        name=str(row.get("name", f"sm_{cc} (profile)")),
        cc=cc,
        major=cc // 10,
        minor=cc % 10,
        sm_count=row.get("sm_count"),
        smem_per_block=row.get("smem_per_block"),
        smem_per_sm=row.get("smem_per_sm"),
        smem_per_block_optin=row.get("smem_per_block_optin"),
        max_registers_per_block=row.get("max_registers_per_block", 65536 if per_thread else None),
        driver_version=None,
        source="profile",
    )


# ---------------------------------------------------------------- formatting


def format_bytes(value: int | None) -> str:
    if value is None:
        return "unknown"
    return f"{value:,} B ({value / 1024:.1f} KB)"


def format_driver_version(version: int | None) -> str:
    if not version:
        return "n/a"
    return f"{version // 1000}.{(version % 1000) // 10}"


def format_device(info: DeviceInfo) -> str:
    where = f"device {info.index}" if info.index is not None else "profile"
    lines = [
        f"{where}: {info.name}",
        f"  compute capability {info.cc_text} (sm_{info.cc}), read from the {info.source}",
        f"  SMs: {info.sm_count if info.sm_count is not None else 'unknown'}",
        f"  shared memory per SM:           {format_bytes(info.smem_per_sm)}",
        f"  shared memory per block opt-in: {format_bytes(info.smem_per_block_optin)}",
        f"  shared memory per block:        {format_bytes(info.smem_per_block)}",
    ]
    if info.max_registers_per_block is not None:
        lines.append(f"  registers per block: {info.max_registers_per_block:,}")
    if info.source == "driver":
        lines.append(f"  driver: CUDA {format_driver_version(info.driver_version)}")
    lines.extend(f"  note: {note}" for note in info.notes)
    return "\n".join(lines)


def device_dict(info: DeviceInfo) -> dict:
    from dataclasses import asdict

    data = asdict(info)
    data["notes"] = list(info.notes)
    return data
