"""Requests a macro body makes, as one translation unit expands the macro.

`#define LAUNCH_PDL(..., smemSize, stream)` opting into `smemSize` bytes makes a request only in
the units that expand it, directly in code or through the bodies of other macros they expand,
and of the size each expansion passes: `LAUNCH_ROUTING(data, ..., /*smemSize=*/0, stream)` in
code, through `#define LAUNCH_ROUTING(..., smemSize, stream) LAUNCH_PDL(..., smemSize, stream)`.
A unit that expands the macro nowhere does not compile the request; one that does gets a size per
literal the expansions pass, and stays unsized, naming the place, where one passes anything else.
Where a file of the unit was read for its directives only, its expansions are not known, and the
request is judged as its file left it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from archlint.model.cuda import CudaFacts, MacroExpansion, SmemRequest, SmemSize

@dataclass(frozen=True)
class Expansions:
    """The expansions a unit's files spell, by macro name, and the parameters of its macros."""

    calls: dict[str, tuple[tuple[str, MacroExpansion], ...]]
    params: dict[str, tuple[str, ...]]
    complete: bool  # every file was read in full

    def expanded(self, name: str, seen: frozenset[str] = frozenset()) -> bool:
        """Whether code, or the body of a macro the unit expands, expands `name`."""
        return any(not call.within or (call.within not in seen and self.expanded(call.within, seen | {name}))
                   for _, call in self.calls.get(name, ()))

    def sizes(self, name: str, index: int, seen: frozenset[str] = frozenset()) -> tuple[dict[int, str], list[str]]:
        """The values the unit's expansions pass as parameter `index` of `name` (value -> where the
        first is passed), and the places that pass what is not a literal."""
        values: dict[int, str] = {}
        unknown: list[str] = []
        for path, call in self.calls.get(name, ()):
            if call.within and (call.within in seen or not self.expanded(call.within, seen | {name})):
                continue
            passed = call.arguments[index] if index < len(call.arguments) else None
            if isinstance(passed, int):
                values.setdefault(passed, f"`{name}` expanded at {path}:{call.line}")
            elif isinstance(passed, str) and call.within and passed in self.params.get(call.within, ()):
                more, missed = self.sizes(call.within, self.params[call.within].index(passed), seen | {name})
                for value, where in more.items():
                    values.setdefault(value, where)
                unknown += missed
            else:
                what = f"`{passed}`" if isinstance(passed, str) else "a size"
                unknown.append(f"{path}:{call.line} passes {what}")
        return values, unknown


def unit_expansions(files: Iterable[CudaFacts]) -> Expansions:
    calls: dict[str, list[tuple[str, MacroExpansion]]] = {}
    params: dict[str, tuple[str, ...]] = {}
    complete = True
    for facts in files:
        complete = complete and facts.rule_sites is None
        for call in facts.expansions:
            calls.setdefault(call.name, []).append((facts.path, call))
        for define in facts.defines:
            if define.params is not None and not define.undef:
                params.setdefault(define.name, define.params)
    return Expansions({name: tuple(found) for name, found in calls.items()}, params, complete)


def expanded_request(expansions: Expansions, request: SmemRequest) -> SmemRequest | None:
    """The request as the unit's expansions of its macro size it; None where the unit compiles it
    nowhere. A request no macro makes, or a unit not wholly read, gives the request unchanged."""
    if not request.macro or not expansions.complete:
        return request
    if not expansions.expanded(request.macro):
        return None
    if request.macro_argument < 0 or request.nbytes is not None:
        return request
    values, unknown = expansions.sizes(request.macro, request.macro_argument)
    sizes = tuple(SmemSize(value, where, "") for value, where in sorted(values.items()))
    if unknown:
        why = f"it is sized where `{request.macro}` is expanded, and {unknown[0]}, which is no literal"
        return replace(request, sizes=sizes, unsized=why)
    return replace(request, sizes=sizes, unsized="" if sizes else request.unsized)
