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

from archlint.link.python import module_name
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
class ExtensionIndex:
    modules: dict[str, BinaryFacts]  # dotted module name -> the module's facts
    folders: dict[str, tuple[str, ...]]  # dotted module name -> the folders it lies in, the scan root's name first

    @staticmethod
    def of(binaries: Iterable[BinaryFacts], files: Collection[str], roots: Sequence[str] = ()) -> ExtensionIndex:
        found: dict[str, BinaryFacts] = {}
        folders: dict[str, tuple[str, ...]] = {}
        top = PurePosixPath(str(roots[0]).replace("\\", "/")).name if len(roots) == 1 else ""
        for facts in sorted(binaries, key=lambda b: b.path):
            name = extension_module_name(facts.path, files, roots)
            if name not in found:
                found[name] = facts
                folders[name] = tuple(part for part in (top, *facts.path.split("/")[:-1]) if part)
        return ExtensionIndex(found, folders)

    def __bool__(self) -> bool:
        return bool(self.modules)

    def module(self, dotted: str) -> BinaryFacts | None:
        """The extension module of that dotted name (a module imported by name)."""
        found = self.modules.get(dotted)
        return _bare(found) if found is not None else None

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
        named = [facts for name, facts in self.modules.items() if name.rpartition(".")[2] == namespace]
        if named:
            return named
        return [facts for name, facts in self.modules.items() if namespace in self.folders[name]]


def _bare(facts: BinaryFacts) -> BinaryFacts:
    """The module's facts without its schema names: what a verdict carries."""
    return replace(facts, ops=()) if facts.ops else facts
