"""Python calls → prebuilt extension modules: `torch.ops.<ns>.<op>(...)` and calls through an
imported extension module (`from vllm import _C`; `_C.op(...)`).

The rules are generic: an operator namespace names the modules whose module name ends in it
(`torch.ops._C` → `vllm/_C.abi3.so`) or, failing that, the modules a package of that name ships
(`torch.ops.sgl_kernel` → `sgl_kernel/**/*.so`); of those, the ones whose read-only data holds the
operator's schema, where any holds schemas at all."""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import PurePosixPath

from archlint.link.modules import module_name
from archlint.model.binary import BinaryFacts

__all__ = ["ExtensionIndex", "extension_module_name"]

# CPython's extension-module suffixes: `.abi3.so`, `.cpython-310-x86_64-linux-gnu.so`, plain `.so`
_SUFFIX = re.compile(r"(\.(abi3|cpython-[^./]+|pypy[^./]*))?\.so$")
_TORCH_OPS = "torch.ops."


def extension_module_name(path: str, files: Collection[str], roots: Sequence[str] = ()) -> str:
    """The dotted module name a library's place gives, as Python's import system would: the
    package chain of `__init__.py` files, then the file name without its extension-module suffix
    (`sgl_kernel/flash_ops.abi3.so` → `sgl_kernel.flash_ops`)."""
    return module_name(_SUFFIX.sub("", path) + ".py", files, roots)


@dataclass(frozen=True)
class _Module:
    name: str  # dotted module name
    folders: tuple[str, ...]  # the folders it lies in, the scan root's name first
    facts: BinaryFacts


@dataclass(frozen=True)
class ExtensionIndex:
    """The scan's extension modules. Two may share a module name (`sm90/common_ops.abi3.so` and
    `sm100/common_ops.abi3.so`, one loaded at run time by the GPU's generation): both are kept."""

    entries: tuple[_Module, ...]

    @staticmethod
    def of(binaries: Iterable[BinaryFacts], files: Collection[str], roots: Sequence[str] = ()) -> ExtensionIndex:
        top = PurePosixPath(str(roots[0]).replace("\\", "/")).name if len(roots) == 1 else ""
        return ExtensionIndex(tuple(
            _Module(extension_module_name(facts.path, files, roots), tuple(p for p in (top, *facts.path.split("/")[:-1]) if p),
                    facts)
            for facts in sorted(binaries, key=lambda b: b.path)))

    def __bool__(self) -> bool:
        return bool(self.entries)

    def module(self, dotted: str) -> tuple[BinaryFacts, ...]:
        """The extension modules of that dotted name (a module imported by name)."""
        return tuple(_bare(entry.facts) for entry in self.entries if entry.name == dotted)

    def operator(self, callee: str) -> tuple[BinaryFacts, ...]:
        """The modules that may define `torch.ops.<ns>.<op>[.overload]`, () when none is shipped."""
        if not callee.startswith(_TORCH_OPS):
            return ()
        parts = callee[len(_TORCH_OPS):].split(".")
        if len(parts) < 2:
            return ()
        namespace, op = parts[0], parts[1]
        candidates = self._namespace(namespace)
        with_schemas = [facts for facts in candidates if facts.ops]
        if with_schemas:
            candidates = [facts for facts in with_schemas if op in facts.ops]
        return tuple(_bare(facts) for facts in candidates)

    def _namespace(self, namespace: str) -> list[BinaryFacts]:
        named = [entry.facts for entry in self.entries if entry.name.rpartition(".")[2] == namespace]
        if named:
            return named
        return [entry.facts for entry in self.entries if namespace in entry.folders]


def _bare(facts: BinaryFacts) -> BinaryFacts:
    """The module's facts without its schema names: what a verdict carries."""
    return replace(facts, ops=()) if facts.ops else facts
