"""Declaration reach: which namespace-scope definitions a translation unit can compile.

A template, or a specialisation of one, is compiled into a unit only if the unit names it. From
what is compiled whatever happens (the unit's own file, code outside definitions, plain kernels,
macro bodies), follow the names: a definition is reached when one of its names is named by
reached code and, for a specialisation, when every type its arguments spell is named too
(`CollectiveBuilder<arch::Sm120, ...>` needs `Sm120`), and for a function overload, when every
concrete type its parameters spell as template arguments is named. Everything a reached
definition spells is named in turn, except what only names a class's member: a name spelled only
after a qualifier that is no namespace of the unit's files (`typename GemmKernel::Mma::Shape`), or
a member alias the definition declares itself (`using Mma = Mma_;`), where C++ name lookup finds
the member, never a namespace-scope definition. Regions are ignored and every other spelling
counts, so the reach is an over-approximation: a definition outside it is one the unit cannot
compile.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import defaultdict, deque
from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from itertools import accumulate

from archlint.model.cuda import CudaFacts, Declaration


@dataclass(frozen=True)
class Unreached:
    """The definitions of each file a unit cannot compile, as (start, end) spans by file; and, for
    `named`, those it can (outside the unit's own file), by name."""

    spans: dict[str, tuple[tuple[tuple[int, int], tuple[int, int]], ...]]
    # name -> the reached definitions of that name: (path, start, end, sure uses, specialisation)
    reached: dict[str, tuple[tuple[str, tuple[int, int], tuple[int, int], tuple[str, ...], bool], ...]] | None = None

    def covers(self, path: str, line: int, col: int) -> bool:
        spans = self.spans.get(path)
        if not spans:
            return False
        index = bisect_right(spans, ((line, col), (1 << 30, 0))) - 1
        return index >= 0 and spans[index][0] <= (line, col) <= spans[index][1]

    def named(self, names: frozenset[str]) -> "Named":
        """The definitions a unit surely instantiates: those it surely calls or names (`names`), and
        in turn those they name wherever they are compiled (their `sure_uses`). A name is followed
        only to the one reached definition it has: a name with several (overloads, specialisations,
        namesakes in other namespaces) may pick any of them."""
        found: dict[str, list[tuple[tuple[int, int], tuple[int, int], str]]] = {}
        reached = self.reached or {}
        seen = set(names)
        queue = deque(names)
        while queue:
            name = queue.popleft()
            definitions = reached.get(name, ())
            if len(definitions) != 1 or definitions[0][4]:
                continue
            path, start, end, uses, _ = definitions[0]
            found.setdefault(path, []).append((start, end, name))
            for used in uses:
                if used not in seen:
                    seen.add(used)
                    queue.append(used)
        spans = {path: tuple(sorted(spans)) for path, spans in found.items()}
        return Named(spans, {path: tuple(accumulate((end for _, end, _ in found), max)) for path, found in spans.items()})


@dataclass(frozen=True)
class Named:
    """Definitions by file, as (start, end, name) spans in order, and the furthest end among each
    span and those before it (where a search for the spans around a place can stop)."""

    spans: dict[str, tuple[tuple[tuple[int, int], tuple[int, int], str], ...]]
    furthest: dict[str, tuple[tuple[int, int], ...]]

    def at(self, path: str, line: int, col: int) -> str:
        """The name of the innermost definition around a place ('' for none)."""
        spans, furthest = self.spans.get(path, ()), self.furthest.get(path, ())
        place = (line, col)
        index = bisect_right(spans, (place, (1 << 30, 0))) - 1  # the last span starting at or before the place
        inside = []
        while index >= 0 and furthest[index] >= place:
            start, end, name = spans[index]
            if end >= place:
                inside.append((start, name))
            index -= 1
        return max(inside)[1] if inside else ""


def unreached_declarations(files: Mapping[str, CudaFacts], source: str, closure: Iterable[str]) -> Unreached:
    """`files`: path -> CudaFacts; `closure`: the paths the unit compiles, `source` among them."""
    by_name: dict[str, list[tuple[str, int]]] = defaultdict(list)
    named: set[str] = set()
    queue: deque[str] = deque()

    def name(names) -> None:
        for each in names:
            if each not in named:
                named.add(each)
                queue.append(each)

    closure = tuple(closure)
    namespaces = frozenset().union(*(files[path].declarations.namespaces for path in closure))
    declared = {each for path in closure for item in files[path].declarations.items for each in item.names}

    def uses(item: Declaration) -> Iterable[str]:
        if not item.qualified:
            return item.uses
        members = _members(item.qualified, namespaces, declared)
        return [each for each in item.uses if each not in members]

    declarations: dict[str, tuple[Declaration, ...]] = {}
    for path in closure:
        found = files[path].declarations
        name(found.loose)
        if path == source:  # the unit's own file is compiled as a whole
            for item in found.items:
                name(uses(item))
            continue
        declarations[path] = found.items
        for number, item in enumerate(found.items):
            for each in item.names:
                by_name[each].append((path, number))

    reached: set[tuple[str, int]] = set()
    waiting: dict[str, list[tuple[str, int]]] = defaultdict(list)

    def consider(key: tuple[str, int]) -> None:
        if key in reached:
            return
        item = declarations[key[0]][key[1]]
        # a type no file of the unit declares (the toolkit's, a builtin) may come into being unnamed
        unmet = next((clause for clause in item.keys
                      if not any(name in named or name not in declared for name in clause)), None)
        if unmet is not None:
            for each in unmet:
                waiting[each].append(key)
            return
        reached.add(key)
        name(uses(item))

    while queue:
        current = queue.popleft()
        for key in by_name.get(current, ()):
            consider(key)
        for key in waiting.pop(current, ()):
            consider(key)
    numbers: dict[str, set[int]] = defaultdict(set)  # path -> its reached definitions
    for path, number in reached:
        numbers[path].add(number)
    spans = {}
    for path, items in declarations.items():
        hit = numbers.get(path, ())
        out = sorted((item.start, item.end) for number, item in enumerate(items) if number not in hit)
        if out:
            spans[path] = tuple(out)
    kept: dict[str, list[tuple[str, tuple[int, int], tuple[int, int], tuple[str, ...], bool]]] = defaultdict(list)
    for path, items in declarations.items():
        for number in sorted(numbers.get(path, ())):
            item = items[number]
            for each in item.names:
                kept[each].append((path, item.start, item.end, item.sure_uses, bool(item.keys)))
    return Unreached(spans, {name: tuple(found) for name, found in kept.items()})


def _members(qualified: frozenset[tuple[str, str]], namespaces: frozenset[str], classes: AbstractSet[str]) -> set[str]:
    """The names a definition spells only as members of a class: after qualifiers each of which a
    file of the unit declares (a class, an alias) and none opens as a namespace (`Traits::Mma`
    names Traits's member, not the namespace-scope `Mma` templates). A qualifier the unit's files
    neither declare nor open (a namespace opened by a macro) may be a namespace: its names count."""
    through_namespace = {name for name, qualifier in qualified if qualifier in namespaces or qualifier not in classes}
    return {name for name, _ in qualified} - through_namespace
