"""Which branch of a build script a target flag or a source name sits in.

A `setup.py` builds for one platform or another: flash-attn appends `-gencode` flags and names its
CUDA sources under `if not SKIP_CUDA_BUILD and not IS_ROCM:`, and names other sources (for hipcc)
under the `elif ... IS_ROCM:` beside it. A source written on a path that contradicts the flag's
(the same condition taken the other way) is never compiled with that flag: it is not the gate's.
The branch conditions are those the walk records on calls and assignments; a flag appended to a
list (`cc_flag.append("arch=compute_80,code=sm_80")`) joins the other targets appended to the
same list in the same function, and one on a path decided false for the build read (the newest
toolkit, environment variables at their defaults) is not passed.
"""

from __future__ import annotations

from archlint.gates.capability import Evaluator
from archlint.gates.capability_values import Scope, Trace, truth
from archlint.model.python import ArchString, PythonFacts

Path = tuple  # ((PyExpr, taken), ...)

_ADDING = ("append", "extend", "insert")


def appended_to(item: ArchString) -> str:
    """The list a target string is added to by a list method (`cc_flag.append(...)`), else ''."""
    for word in item.context.split():
        receiver, _, method = word.rpartition(".")
        if receiver and method in _ADDING:
            return receiver
    return ""


def path_at(facts: PythonFacts, function: str, line: int, col: int) -> Path:
    """The branch conditions of the innermost call or assignment holding the position."""
    best, best_size = (), None
    spans = [(call.span, call.path) for call in facts.calls.having(lambda _callee, caller: caller == function)]
    spans += [(assign.value_span, assign.path) for assign in facts.assigns.having(lambda _targets, local: local == function)
              if assign.value_span is not None]
    for span, path in spans:
        if (span.line, span.col) <= (line, col) and (line, col) <= (span.end_line, span.end_col):
            size = (span.end_line - span.line, span.end_col - span.col)
            if best_size is None or size < best_size:
                best, best_size = path, size
    return best


def common_path(paths: list[Path]) -> Path:
    """The conditions every one of the paths runs under."""
    if not paths:
        return ()
    return tuple(step for step in paths[0] if all(step in path for path in paths[1:]))


def contradicts(a: Path, b: Path) -> bool:
    """The paths cannot both run: one takes a condition the other refuses."""
    taken = {expr: flag for expr, flag in a}
    return any(expr in taken and taken[expr] != flag for expr, flag in b)


def decided_out(evaluator: Evaluator, module: str, function: str, line: int, path: Path) -> bool:
    """A condition of the path is false whatever the device (the toolkit the scan reads for, the
    environment's defaults): what runs under it is not part of the build."""
    for expr, taken in path:
        value = truth(evaluator.value(expr, Scope(module, function, line), evaluator.ccs[0], trace := Trace(), 0))
        if trace.arch:
            continue
        if value is not None and isinstance(value, bool) and value != taken:
            return True
    return False
