"""What looks like an architecture by its name, before anything is evaluated.

A condition whose own text names an architecture (`major`, `cc`, `is_sm90a_supported`) is a gate
candidate even where its value stays unknown, and a call of an arch-looking function that cannot be
evaluated is reported as opaque. Dunder methods are never asked for a capability by name. These are
questions about spelling, asked by the gate detection and by the evaluator alike.
"""

from __future__ import annotations

import re

from archlint.lang.python.expr import walk
from archlint.model.python import PyExpr

ARCHY = re.compile(r"(?i)(?:^|_)(?:sm_?\d+\w*|sm\d+x|capab\w*|arch\w*|hopper|blackwell|ampere|ada|rubin)(?:$|_)")


def names_arch(expr: PyExpr, idioms) -> bool:
    """Whether a condition's own text names an architecture: a call that reads the capability or the
    device properties, or a name, attribute or callee that looks like an arch (`major`, `cc`,
    `device_arch`, `is_sm90a_supported`, `_match_sm_version`)."""
    for sub in walk(expr):
        if sub.kind == "call":
            last = sub.text.rpartition(".")[2]
            if last in idioms.capability_calls or last in idioms.properties_calls:
                return True
        if sub.kind in ("name", "attr", "call") and any(
                ARCHY.search(part) or not _ARCH_WORDS.isdisjoint(part.lower().split("_")) for part in sub.text.split(".")):
            return True
    return False


_ARCH_WORDS = frozenset(("major", "minor", "cc", "sm", "arch", "capability"))


def is_dunder(qualname: str) -> bool:
    """`__init__`, `__call__`: the object protocol runs them, a condition never asks them by name
    for a capability."""
    name = qualname.rpartition(".")[2]
    return len(name) > 4 and name.startswith("__") and name.endswith("__")
