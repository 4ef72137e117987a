"""Prebuilt extension modules: the device-code images a shared library's fatbins carry, read from
their headers (extract/binary), and a gate's calls that reach such a module (gates/units)."""

from __future__ import annotations

from dataclasses import dataclass

from archlint.model.findings import Evidence
from archlint.model.records import fast_pickling


@dataclass(frozen=True, order=True, slots=True)
class Image:
    """One device-code image of a fatbin: SASS (a cubin) for one GPU, or PTX the driver compiles."""

    arch: int  # compute capability as major*10 + minor: 80, 90, 100, 121
    suffix: str  # '' | 'a' (arch-specific) | 'f' (family-specific)
    kind: str  # 'sass' | 'ptx'

    @property
    def name(self) -> str:
        """As nvcc's -gencode `code=` spells it: `sm_90a` for SASS, `compute_80` for PTX."""
        prefix = "sm" if self.kind == "sass" else "compute"
        return f"{prefix}_{self.arch}{self.suffix}"


@dataclass(frozen=True, slots=True)
class ImageCount:
    """An image and how many of a module's fatbins carry it (one fatbin per translation unit, as nvcc
    links them): an image in fewer than all of them leaves the other units' kernels without it."""

    image: Image
    fatbins: int


@dataclass(frozen=True, slots=True)
class BinaryFacts:
    """What a shared library's bytes say, read without loading it."""

    path: str  # root-relative
    fatbins: int  # fatbin containers read
    images: tuple[ImageCount, ...]  # distinct images, in arch order
    compressed: int  # entries whose payload is compressed (not read: only headers are)
    ops: tuple[str, ...] = ()  # operator names of the schemas its read-only data holds (`m.def("op(...) -> ...")`)
    sections: tuple[str, ...] = ()  # the ELF sections the fatbins were read from
    complete: bool = True  # False: a damaged header stopped the walk, so images may be missing

    @property
    def has_device_code(self) -> bool:
        return bool(self.images)


@dataclass(frozen=True, slots=True)
class ExtensionCall:
    """A gate's call that reaches prebuilt extension modules: an import of one, or a `torch.ops`
    operator one of them defines. `modules` are the candidates: a package that ships one module per
    GPU generation and loads one at run time gives several (each without its `ops`)."""

    what: str  # as written: 'torch.ops.sgl_kernel.fp8_scaled_mm.default', 'flash_ops.fwd'
    modules: tuple[BinaryFacts, ...]
    chain: tuple[Evidence, ...]  # the gate to the call, the call's own hop last


fast_pickling(globals())
