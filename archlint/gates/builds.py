"""How the project's own flag code builds each compute capability: its normaliser (the gate
vocabulary's suffix functions, FlashInfer's `_normalize_cuda_arch`) read for the scan's CUDA
toolkit, through the toolkit-version tests it makes (`is_cuda_version_at_least("12.9")`)."""

from __future__ import annotations

from archlint.gates.capability import Evaluator
from archlint.gates.capability_values import Trace
from archlint.knowledge.arch import toolkit_text
from archlint.model.gates import ProjectBuild
from archlint.model.python import version_tuple

_OLDEST = (0,)  # a toolkit older than every version a test names
_MAX_ROUNDS = 8


def project_builds(index, ccs: tuple[int, ...], toolkit: tuple[int, ...]) -> tuple[ProjectBuild, ...]:
    """Per compute capability, the suffix the normaliser gives with `toolkit`, and the range of
    toolkit versions it gives the same one for; capabilities it gives no answer for are left out."""
    names = sorted(q for q in index.loaded_functions() if q.rpartition(".")[2] in index.idioms.suffix_functions)
    if not names:
        return ()
    builds = []
    for cc in ccs:
        suffix, tested = _suffix(index, names[0], cc, toolkit)
        if suffix is not None:
            builds.append(ProjectBuild(cc, suffix, _range(index, names[0], cc, toolkit, suffix, tested)))
    return tuple(builds)


def _suffix(index, function: str, cc: int, toolkit: tuple[int, ...]) -> tuple[str | None, set[str]]:
    """The suffix `function(major, minor)` returns for `cc` with `toolkit`, and the versions it tested."""
    trace = Trace()
    value = Evaluator(index, (cc,), toolkit).call_value(function, (cc // 10, cc % 10), cc, trace)
    minor = value[1] if isinstance(value, tuple) and len(value) == 2 else None
    tested = set(trace.toolkit_tests)
    if not isinstance(minor, str):
        return None, tested
    return (minor[-1] if minor[-1:] in ("a", "f") else ""), tested


def _range(index, function: str, cc: int, toolkit: tuple[int, ...], suffix: str, tested: set[str]) -> str:
    """The toolkit versions around `toolkit` for which the normaliser gives `suffix` too: each
    version a test names starts a range, and ranges are read until no new version turns up."""
    answers: dict[tuple[int, ...], str | None] = {}
    versions = {version_tuple(v) for v in tested}
    for _ in range(_MAX_ROUNDS):
        for start in sorted({_OLDEST, *versions} - set(answers)):
            answers[start], more = _suffix(index, function, cc, start)
            versions |= {version_tuple(v) for v in more}
        if versions <= set(answers):
            break
    starts = sorted(answers)
    here = max(start for start in starts if start <= toolkit)
    position = starts.index(here)
    low, high = position, position
    while low > 0 and answers[starts[low - 1]] == suffix:
        low -= 1
    while high + 1 < len(starts) and answers[starts[high + 1]] == suffix:
        high += 1
    floor = starts[low] if starts[low] != _OLDEST else None
    ceiling = starts[high + 1] if high + 1 < len(starts) else None
    parts = ([f"≥ {toolkit_text(floor)}"] if floor else []) + ([f"< {toolkit_text(ceiling)}"] if ceiling else [])
    return " and ".join(parts)
