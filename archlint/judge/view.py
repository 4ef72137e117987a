"""One build's reading of the linked facts (TargetView) and what the judging of a scan shares
(Judging): the types every judge helper takes, below all of them. `judge.analysis` builds on them;
nothing here knows what a hit or a verdict is."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Hashable, Mapping
from typing import TypeVar, cast
from weakref import ref

from archlint.judge.hits import settle_by_define
from archlint.knowledge.arch import Target
from archlint.knowledge.kb import KnowledgeBase
from archlint.knowledge.languages import SOURCE_SUFFIXES
from archlint.lang.cpp.directives import guard_chain
from archlint.lang.cpp.evaluate import Evaluator, Value
from archlint.lang.cpp.expr import render
from archlint.link.cuda import CudaIndex
from archlint.model.cuda import CudaFacts, Function, Region

K = TypeVar("K", bound=Hashable)
T = TypeVar("T")

Defines = Mapping[str, object]  # -D name -> int value, UNKNOWN_DEFINE or NOT_PASSED


class Judging:
    """What the judging of one scan shares, passed explicitly to every gate and check: the linked
    index, the KB, one TargetView per (target, -D set), and what no build changes, made once
    (`shared`): each file's sites, each unit's include closure (its declaration reach among it)."""

    def __init__(self, index: CudaIndex, kb: KnowledgeBase) -> None:
        self.index = index
        self.kb = kb
        self._views: dict[tuple[Target, tuple[tuple[str, object], ...]], TargetView] = {}
        self._shared: dict[tuple[Callable, Hashable], object] = {}

    def view(self, target: Target, defines: Defines | None = None) -> TargetView:
        """The view for one build: made once, then shared by every gate and check of the scan."""
        key = (target, tuple(sorted((k, v if isinstance(v, (int, frozenset)) else id(v)) for k, v in (defines or {}).items())))
        view = self._views.get(key)
        if view is None:
            view = self._views[key] = TargetView(self, target, defines or {})
        return view

    def shared(self, compute: Callable[[Judging, K], T], key: K) -> T:
        """`compute(self, key)`, made once per scan: what the linked facts say whatever the build."""
        memo = (compute, key)
        if memo not in self._shared:
            self._shared[memo] = compute(self, key)
        return cast(T, self._shared[memo])


class TargetView:
    """Evaluation of regions for one target over the linked facts (memoised)."""

    def __init__(self, judging: Judging, target: Target, defines: Defines) -> None:
        # by a weak reference: the Judging holds its views, and a cycle outlives the scan while the
        # collector is paused (engine.collector), its memos (half a gigabyte on a large package) with it
        self._judging = ref(judging)
        self.index = judging.index
        self.kb = judging.kb
        self.target = target
        self.defines = dict(defines)
        self.device = Evaluator(target, self.index.bindings, self.defines)
        self.host = Evaluator(None, self.index.bindings, self.defines)
        self._memo: dict[tuple[str, int, bool], Value] = {}
        self._guards: dict[tuple[str, int], Region | None] = {}
        self._undecided: dict[tuple[str, int], tuple[str, ...]] = {}
        self._settle: dict[tuple[str, int], str] = {}
        self._memos: dict[Hashable, object] = {}

    @property
    def judging(self) -> Judging:
        judging = self._judging()
        assert judging is not None, "a view is used while its Judging is"
        return judging

    def truth(self, path: str, region: int, host: bool = False) -> Value:
        key = (path, region, host)
        if key not in self._memo:
            facts = self.index.files[path]
            evaluator = self.host if host else self.device
            self._memo[key] = evaluator.all_true(guard_chain(facts.regions, region)) if region >= 0 else 1
        return self._memo[key]

    def memo(self, key: Hashable, compute: Callable[[], T]) -> T:
        """`compute()`, made once per build and key: what the analysis above reads of this build
        (a unit's hits, keyed by the unit and its reference builds; a site it has), shared by
        every gate and check that asks. A key starts with what it keys, so kinds never collide."""
        memos = self._memos
        if key not in memos:
            memos[key] = compute()
        return cast(T, memos[key])

    def undecided_macros(self, path: str, region: int) -> tuple[str, ...]:
        """The macros that leave a site's guard undecided for this target."""
        if region < 0:
            return ()
        key = (path, region)
        if key not in self._undecided:
            self._undecided[key] = self.device.undecided_macros(guard_chain(self.index.files[path].regions, region))
        return self._undecided[key]

    def settle(self, path: str, region: int) -> str:
        """What would decide a site's undecided guard, for a hit's reason (memoised per site)."""
        key = (path, region)
        if key not in self._settle:
            self._settle[key] = settle_by_define(self.undecided_macros(path, region))
        return self._settle[key]

    def arch_guard(self, path: str, region: int) -> Region | None:
        """The innermost region around a site whose condition depends on the target: it names
        `__CUDA_ARCH__` (or a kin), or reads differently in device and host code."""
        key = (path, region)
        if key not in self._guards:
            regions = self.index.files[path].regions
            current, found = region, None
            while current >= 0 and found is None:
                cond = regions[current].cond
                if "__CUDA_ARCH" in render(cond) or self.device.truth(cond) != self.host.truth(cond):
                    found = regions[current]
                current = regions[current].parent
            self._guards[key] = found
        return self._guards[key]

    # -------------------------------------------------------------- translation units

    def closure(self, source: str) -> dict[str, tuple[str, int] | None]:
        """Files a unit compiles for this target: path -> (including file, line), source -> None."""
        parents: dict[str, tuple[str, int] | None] = {source: None}
        queue = deque([source])
        while queue:
            path = queue.popleft()
            for resolved in self.index.resolved(path):
                if resolved.target is None or resolved.target in parents:
                    continue
                if self.truth(path, resolved.include.region) == 0 and self.truth(path, resolved.include.region, host=True) == 0:
                    continue
                parents[resolved.target] = (path, resolved.include.line)
                queue.append(resolved.target)
        return parents

    def reachable(self, source: str, files: set[str], sure: bool = False) -> set[tuple[str, str]]:
        """(path, qualname) of functions reachable by name from the unit's own functions; with `sure`,
        only through calls whose condition surely holds for the target."""
        return self._reach(source, files, sure)[0]

    def reachable_both(self, source: str, files: set[str]) -> tuple[set[tuple[str, str]], set[tuple[str, str]]]:
        """reachable(source, files) and reachable(source, files, sure=True), in one walk where every
        call's condition the walk reads is decided for the target (both walks then take the same
        calls), as it is for most units and targets."""
        reached, undecided = self._reach(source, files, False)
        return reached, (self.reachable(source, files, sure=True) if undecided else set(reached))

    def _reach(self, source: str, files: set[str], sure: bool) -> tuple[set[tuple[str, str]], bool]:
        """The reachable functions, and whether a call on the way may be live without surely being so."""
        unit = self.index.files[source]
        # A non-template kernel is emitted wherever its header is included, called or not. Device
        # functions are emitted only where live code calls them (whole-program compilation drops the
        # rest), so they start nothing, even in the unit's own file.
        device_code = _device_code(unit)
        device_names = {qualname.rpartition("::")[2] for qualname in device_code}
        # A template that instantiates a kernel named at render time may instantiate any of them.
        any_kernel = any(hole.kind == "kernel" for hole in unit.template_holes)
        # A source file included whole (a unit that is only `#include "other.cu"`) is compiled as
        # the unit's own file is: its host code launches, and so instantiates, its template kernels.
        whole = [path for path in sorted(files) if path != source and _is_source_file(path)]
        own = {path: _device_code(self.index.files[path]) for path in (source, *whole)}
        # An explicit instantiation (`template __global__ void Marlin<...>(...);`) compiles the kernel
        # template it names, however long its argument list is.
        named = unit.declarations.instantiated
        start = [(path, f) for path in own for f in self.index.files[path].functions if f.qualname not in own[path]] + [
            (path, f) for path in sorted(files) if path != source and path not in whole
            for f in self.index.files[path].functions
            if f.kind == "global" and (any_kernel or not f.template or f.name in named)
        ]
        seen = {(path, f.qualname) for path, f in start}
        queue: deque[tuple[str, Function | None]] = deque([(source, None), *start])
        undecided = False
        while queue:
            caller, function = queue.popleft()
            calls = unit.calls if function is None else function.calls
            live, unsettled = self._live_calls(caller, calls, sure)
            undecided = undecided or unsettled
            if function is None:  # the file's own call list also holds each definition's name
                live = tuple(name for name in live if name not in device_names)
            for name in self.index.expand(live):
                for path, callee in self.index.functions_by_name.get(name, ()):
                    key = (path, callee.qualname)
                    if path in files and key not in seen:
                        seen.add(key)
                        queue.append((path, callee))
        return seen, undecided

    def surely_called(self, source: str, surely: set[tuple[str, str]]) -> frozenset[str]:
        """Names the unit calls whatever undecided conditions say (function-like macros it expands
        among them): in its own file or in a function it surely compiles, or in the body of a macro
        it surely expands."""
        names = [name for name, region in self.index.files[source].calls if region < 0 or self._live(source, region, True)]
        for path, qualname in surely:
            for where, function in self.index.functions_by_name.get(qualname.rpartition("::")[2], ()):
                if (where, function.qualname) == (path, qualname):
                    names += [name for name, region in function.calls if region < 0 or self._live(path, region, True)]
        return frozenset(self.index.expand(tuple(names)))

    def _live(self, path: str, region: int, sure: bool) -> bool:
        surely, maybe = self._liveness(path, region)
        return surely if sure else maybe

    def _liveness(self, path: str, region: int) -> tuple[bool, bool]:
        """Whether code under the region surely runs (device or host pass), and whether it may."""
        states = (self.truth(path, region), self.truth(path, region, host=True))
        return 1 in states, states[0] != 0 or states[1] != 0

    def _live_calls(self, path: str, calls, sure: bool) -> tuple[tuple[str, ...], bool]:
        """The names of the calls that are live (_live), and whether one may be live without surely
        being so (then _live answers it one way for `sure` and another without)."""
        live: list[str] = []
        unsettled = False
        for name, region in calls:
            if region < 0:
                live.append(name)
                continue
            surely, maybe = self._liveness(path, region)
            if surely or (maybe and not sure):
                live.append(name)
            unsettled = unsettled or (maybe and not surely)
        return tuple(live), unsettled


def _is_source_file(path: str) -> bool:
    return path.endswith(SOURCE_SUFFIXES)


def _device_code(facts: CudaFacts) -> frozenset[str]:
    """Functions that are device code and not kernels: declared `__device__`, or holding inline PTX
    (which only device code can), as when the qualifier hides in a macro (SGLang's `SGL_DEVICE`)."""
    with_ptx = {c.function for c in facts.constructs if c.kind == "ptx" and c.function}
    return frozenset(f.qualname for f in facts.functions
                     if f.kind == "device" or (f.kind == "host" and f.qualname in with_ptx))
