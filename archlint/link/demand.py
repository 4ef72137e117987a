"""Which Python modules a scan must read before its gates are found, beyond those the byte prefilter
picks: the modules whose conditions can read the compute capability.

A condition reads the capability through a capability call (`torch.cuda.get_device_capability()`),
or through a scanned function or module constant whose own text does. To reach one in another
module, a condition's module spells its name, or a name it is imported as. So the modules that can
hold a capability test are found from the words alone: start from the capability calls, take the
files that spell one, add the names of their definitions whose text spells one, and repeat until
no new name appears. Every module found is read; a module never found spells none of the names its
conditions would need, and holds no capability test.
"""

from __future__ import annotations

from collections.abc import Collection

from archlint.link.python import PyIndex
from archlint.model.python import PythonFacts


def load_condition_modules(index: PyIndex) -> None:
    """Read every module that can hold a condition on the compute capability."""
    words = set(index.idioms.capability_calls) | set(index.idioms.properties_calls)
    asked: set[str] = set()
    while words - asked:
        new = words - asked
        asked |= new
        modules = index.spelling(new)
        index.load(modules)
        for module in modules:
            text = index.text(module)
            if text is not None:
                words |= _defined_spelling(index.modules[module], text, new)


def _defined_spelling(facts: PythonFacts, text: bytes, words: Collection[str]) -> set[str]:
    """Names the module defines (functions, module constants, imports) whose text spells a word."""
    needles = [word.encode("utf-8") for word in words]
    present = [needle for needle in needles if needle in text]
    if not present:
        return set()
    lines = text.split(b"\n")

    def spells(first: int, last: int) -> bool:
        chunk = b"\n".join(lines[first - 1:last])
        return any(needle in chunk for needle in present)

    found = {fn.name for fn in facts.functions if spells(fn.span.line, fn.span.end_line)}
    for assign in facts.assigns:
        if not assign.function and spells(assign.line, assign.value_span.end_line if assign.value_span else assign.line):
            found.update(target.rpartition(".")[2] for target in assign.targets if target)
    for imp in facts.imports:
        found.update(alias for name, alias in zip(imp.names, imp.aliases) if name in words)
    return found
