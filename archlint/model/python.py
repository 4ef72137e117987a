"""What archlint needs from one `.py` file, as plain frozen data; nothing in a scanned tree is
imported or executed to get it."""

from __future__ import annotations

import pickle
import zlib
from abc import abstractmethod
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TypeVar, overload

from archlint.model.findings import Diagnostic, Suppression
from archlint.model.records import fast_pickling
from archlint.model.tactics import TileListFact


@dataclass(frozen=True, slots=True)
class PyExpr:
    """kind and what `text` holds:

    name: dotted name ('jit_env.FLASHINFER_CSRC_DIR')   int: digits (value set)   str: the value
    bool/none: 'True'/'False'/'None'   seq: 'list'|'tuple'|'set'   fstr: literal parts, '{}' holes
    call: dotted callee or '' (args[0] is the callee, then positional args, then 'kw' nodes)
    kw: keyword name (args[0] is the value)   attr: attribute name (args[0] is the object)
    subscript: '' (args: value, index)   compare: operators joined by ','   and/or/not: ''
    binop: operator   unary: operator   cond: '' (args: then, test, else)   other: source text
    splat: '*xs' or '**kw' as written; as an element of a list, tuple or set display args[0] is `xs`
    dict: '' (args: 'kw' nodes, one per literal string key)   comp: 'list'|'generator'|... (args[0]: the element)
    """

    kind: str
    text: str
    value: int | None = None
    args: tuple["PyExpr", ...] = ()

    def kwarg(self, name: str) -> "PyExpr | None":
        for arg in self.args[1:]:
            if arg.kind == "kw" and arg.text == name:
                return arg.args[0]
        return None

    def positional(self) -> tuple["PyExpr", ...]:
        return tuple(arg for arg in self.args[1:] if arg.kind not in ("kw", "splat"))


@dataclass(frozen=True, slots=True)
class Span:
    line: int
    col: int
    end_line: int
    end_col: int


@dataclass(frozen=True, slots=True)
class Decorator:
    name: str  # dotted callee ('supported_compute_capability', 'functools.cache'), or text
    span: Span
    expr: PyExpr  # the decorator expression; a 'call' when it has arguments
    text: str


@dataclass(frozen=True, slots=True)
class PyFunction:
    qualname: str  # local: 'func', 'Class.method', 'outer.inner'
    name: str
    cls: str  # enclosing class qualname, '' when not a method
    span: Span
    params: tuple[str, ...]
    decorators: tuple[Decorator, ...]
    path: str = ""


@dataclass(frozen=True, slots=True)
class PyClass:
    qualname: str
    name: str
    span: Span
    bases: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class PyCall:
    callee: str  # dotted text as written ('current_compilation_context.get_nvcc_flags_list'), '' if not dotted
    span: Span
    function: str  # enclosing function ('' at module level)
    expr: PyExpr  # kind 'call'
    text: str
    arg_spans: tuple[tuple[str, Span], ...] = ()  # keyword name or positional index -> span of a literal list value
    path: tuple = ()  # the branch conditions it runs under, as the walk records them: ((PyExpr, taken), ...)

    def kwargs(self) -> dict[str, PyExpr]:
        return {arg.text: arg.args[0] for arg in self.expr.args[1:] if arg.kind == "kw"}


_Item = TypeVar("_Item")


class _Packed(Sequence[_Item]):
    """A module's records of one kind, kept pickled until read (`at`), a function's at a time: read
    in full only by iterating or indexing."""

    __slots__ = ()

    @abstractmethod
    def at(self, positions: Iterable[int]) -> list[_Item]:
        """The records at these positions, in that order."""

    def __iter__(self) -> Iterator[_Item]:
        return iter(self.at(range(len(self))))

    @overload
    def __getitem__(self, at: int) -> _Item: ...

    @overload
    def __getitem__(self, at: slice) -> Sequence[_Item]: ...

    def __getitem__(self, at: int | slice) -> _Item | Sequence[_Item]:
        if isinstance(at, slice):
            return self.at(range(len(self))[at])
        return self.at([range(len(self))[at]])[0]


@dataclass(frozen=True, slots=True)
class PyCalls(_Packed[PyCall]):
    """A module's calls, kept pickled until read. A scan holds the facts of thousands of
    modules and reads few calls of each: those of a function it follows, those a build or a gate
    is spelled with (about 2% of the calls of the modules it reads any of, on FlashInfer
    0.7.2.post1). Unpickled, the calls are two thirds of a module's facts, and unpickling all of
    a module's calls to read a few of them was most of what linking spent reading facts. What
    picks the calls worth reading stays plain: each call's callee and enclosing function, and
    which calls pass each keyword. The calls are pickled a function at a time (`_packed`), the
    pickles compressed together at zlib's fastest level (to about an eighth); those of the
    modules read last stay decompressed."""

    callees: tuple[str, ...] = ()  # per call, its `callee`
    functions: tuple[str, ...] = ()  # per call, its `function`
    keyword_calls: tuple[tuple[str, tuple[int, ...]], ...] = ()  # each keyword some call passes -> those calls
    packed: bytes = b""  # `_packed`: the calls of each function pickled together, the pickles compressed

    @staticmethod
    def of(calls: Sequence[PyCall]) -> "PyCalls":
        passing: dict[str, list[int]] = {}
        for at, call in enumerate(calls):
            for keyword in dict.fromkeys(arg.text for arg in call.expr.args[1:] if arg.kind == "kw"):
                passing.setdefault(keyword, []).append(at)
        return PyCalls(tuple(call.callee for call in calls), tuple(call.function for call in calls),
                       tuple((keyword, tuple(ats)) for keyword, ats in sorted(passing.items())),
                       _packed(calls, [call.function for call in calls]))

    @property
    def keywords(self) -> frozenset[str]:
        """The keyword names any of the calls passes."""
        return frozenset(keyword for keyword, _ in self.keyword_calls)

    def having(self, wanted: Callable[[str, str], bool]) -> list[PyCall]:
        """The calls whose (callee, function) `wanted` accepts; only those are unpickled."""
        return self.at([at for at, site in enumerate(zip(self.callees, self.functions)) if wanted(*site)])

    def passing(self, keywords: Collection[str]) -> list[PyCall]:
        """The calls that pass any of the keywords, in order."""
        return self.at(sorted({at for keyword, ats in self.keyword_calls if keyword in keywords for at in ats}))

    def __len__(self) -> int:
        return len(self.callees)

    def at(self, positions: Iterable[int]) -> list[PyCall]:
        if _watchers:
            positions = list(positions)
            note_read(self, positions)
        return _read_packed(self.packed, positions)


# Who is told of each packed record read (link.reads.ReadLog, while the Python link records what
# each of its answers read): a module-level hook, since the records are read deep in the evaluators.
_watchers: list[Callable[[object, list[int]], None]] = []


def watch_reads(watcher: Callable[[object, list[int]], None] | None) -> None:
    """Tell `watcher` of every packed read from now on (None: stop telling the last one)."""
    if watcher is None:
        _watchers.pop()
    else:
        _watchers.append(watcher)


def note_read(packed: object, positions: list[int]) -> None:
    """A read of these records of a module's calls or assignments (also one a cache answered)."""
    if _watchers:
        _watchers[-1](packed, positions)


def _packed(items: Sequence[object], functions: Sequence[str]) -> bytes:
    """The items pickled a function at a time, the pickles compressed together. A function's items
    share the conditions they run under, which one pickle holds once, and are mostly read
    together; an item read alone unpickles its function's."""
    if not items:
        return b""
    groups: dict[str, list[int]] = {}
    for at, function in enumerate(functions):
        groups.setdefault(function, []).append(at)
    members = tuple(tuple(group) for group in groups.values())
    pickles = tuple(pickle.dumps(tuple(items[at] for at in group), protocol=5) for group in members)
    return zlib.compress(pickle.dumps((members, pickles), protocol=5), 1)


def _read_packed(packed: bytes, positions: Iterable[int], read: dict | None = None) -> list:
    """The items at these positions, each unpickled once while `read` (by default, the module's
    items while they stay decompressed) keeps them."""
    if not packed:
        return []
    members, pickles, group_of, kept = _unpacked(packed)
    read = kept if read is None else read
    found = []
    for at in positions:
        item = read.get(at)
        if item is None:
            group = group_of[at]
            for position, value in zip(members[group], pickle.loads(pickles[group])):
                read.setdefault(position, value)
            item = read[at]
        found.append(item)
    return found


# (members, pickles, position -> its group, the items unpickled) of the modules read last: a
# module's assignments are asked for a few at a time, over and over as names resolve to them
@lru_cache(maxsize=16)
def _unpacked(packed: bytes) -> tuple[tuple[tuple[int, ...], ...], tuple[bytes, ...], dict[int, int], dict[int, object]]:
    members, pickles = pickle.loads(zlib.decompress(packed))
    return members, pickles, {at: group for group, positions in enumerate(members) for at in positions}, {}


@dataclass(frozen=True, slots=True)
class PyImport:
    module: str  # 'flashinfer.jit.core'; for `from . import env` the module is ''
    names: tuple[str, ...]  # imported names; () for `import module`
    aliases: tuple[str, ...]  # the local name each binds (parallel to names, or the module's)
    level: int  # leading dots of a relative import
    line: int
    function: str


@dataclass(frozen=True, slots=True)
class PyConstant:
    name: str
    values: tuple[int, ...]
    line: int
    span: Span | None = None  # the literal's span


@dataclass(frozen=True, slots=True)
class PyAssign:
    targets: tuple[str, ...]  # dotted targets; several for tuple unpacking
    value: PyExpr
    line: int
    function: str
    unpack: bool
    value_span: Span | None = None
    path: tuple = ()  # the branch conditions it runs under: ((PyExpr, taken), ...)


@dataclass(frozen=True, slots=True)
class PyAssigns(_Packed[PyAssign]):
    """A module's assignments, kept pickled until read as its calls are (PyCalls): they were
    three fifths of what loading a module's facts unpickled, where linking reads the few a name
    resolves to. What picks them stays plain: each one's targets and enclosing function, and the
    dotted names its value reads (what the capability conditions' reach follows: gates.conditions)."""

    targets: tuple[tuple[str, ...], ...] = ()  # per assignment, its `targets`
    functions: tuple[str, ...] = ()  # per assignment, its `function`
    reads: tuple[tuple[str, ...], ...] = ()  # per assignment, the dotted names and callees its value spells
    packed: bytes = b""
    # the assignments unpickled so far, kept with the facts: asked twice, one gives the same object
    # (the capability evaluator remembers values by the assignment's identity)
    _read: dict[int, PyAssign] = field(default_factory=dict, compare=False, repr=False)

    def __reduce__(self) -> tuple:
        return PyAssigns, (self.targets, self.functions, self.reads, self.packed)

    @staticmethod
    def of(assigns: Sequence[PyAssign], reads: Callable[[PyExpr], tuple[str, ...]]) -> "PyAssigns":
        return PyAssigns(tuple(a.targets for a in assigns), tuple(a.function for a in assigns),
                         tuple(reads(a.value) for a in assigns), _packed(assigns, [a.function for a in assigns]))

    def having(self, wanted: Callable[[tuple[str, ...], str], bool]) -> list[PyAssign]:
        """The assignments whose (targets, function) `wanted` accepts; only those are unpickled."""
        return self.at([at for at, site in enumerate(zip(self.targets, self.functions)) if wanted(*site)])

    def at(self, positions: Iterable[int]) -> list[PyAssign]:
        if _watchers:
            positions = list(positions)
            note_read(self, positions)
        return _read_packed(self.packed, positions, self._read)

    def __len__(self) -> int:
        return len(self.functions)


@dataclass(frozen=True, slots=True)
class SourceRef:
    """An expression that names a CUDA source or template file."""

    function: str
    line: int
    col: int
    root: str  # the expression the path hangs off, dotted ('jit_env.FLASHINFER_CSRC_DIR'), '' for a bare string
    parts: tuple[str, ...]  # the literal path components after the root ('nv_internal', 'x.cu')
    text: str
    root_expr: PyExpr | None = None
    template: bool = False  # a jinja template that renders into a generated source
    dynamic: bool = False  # the file name is formatted at run time (an f-string)
    # `[csrc / name for name in DEVICE_SOURCES]`: the sequence whose elements the last part takes
    each: PyExpr | None = None
    # `_source(csrc_dir, "x.cu")`: the call of a scanned helper the name is an argument of, and its
    # position there; linking folds the path the helper's return builds from its parameters
    helper: PyExpr | None = None
    helper_arg: int = -1

    @property
    def name(self) -> str:
        return self.parts[-1] if self.parts else ""


@dataclass(frozen=True, slots=True)
class ResolvedSource:
    """A SourceRef with the file it names, once linking has followed its path expression."""

    ref: SourceRef
    function: str  # full qualname of the function that names it ('' at module level)
    path: str | None  # posix path relative to the scan root, None when unresolved
    how: str  # 'root' (definition chain followed) | 'basename' (unique name match) | 'generated' | 'unresolved'
    reason: str = ""  # why it is unresolved, or what the basename fallback matched on


@dataclass(frozen=True, slots=True)
class VersionedFlag:
    """A flag a build passes exactly when its CUDA toolkit is at least `version` (`at_least`), or
    exactly when it is older (`"-DX" if is_cuda_version_at_least("12.8") else ""`)."""

    flag: str
    version: str  # '12.8'
    at_least: bool = True

    def passed_with(self, toolkit: tuple[int, ...]) -> bool | None:
        """Whether a toolkit at least `toolkit` passes the flag; None when that does not decide it."""
        if version_tuple(self.version) <= toolkit:
            return self.at_least
        return None


def version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


@dataclass(frozen=True, slots=True)
class FlagList:
    function: str
    line: int
    callee: str
    keyword: str  # 'extra_cuda_cflags', 'extra_cflags', ...
    values: tuple[str, ...]
    # Every part read: a -D it lacks is not passed. With `names` or `maybe_names`, every part but
    # those: linking reads them (`gates/flagrefs.py`).
    complete: bool = False
    maybe: tuple[str, ...] = ()  # flags passed on some paths only (`if x: flags += [...]`), versioned ones too
    versioned: tuple[VersionedFlag, ...] = ()  # flags decided by the toolkit version
    names: tuple[str, ...] = ()  # module-scope names the list always holds (`sm90a_nvcc_flags + [...]`)
    maybe_names: tuple[str, ...] = ()  # module-scope names it holds on some paths

    @property
    def defines(self) -> tuple[str, ...]:
        return tuple(value for value in self.values if value.startswith("-D"))

    @property
    def maybe_defines(self) -> tuple[str, ...]:
        return tuple(value for value in self.maybe if value.startswith("-D"))

    @property
    def versioned_defines(self) -> tuple[VersionedFlag, ...]:
        return tuple(flag for flag in self.versioned if flag.flag.startswith("-D"))


def split_define(flag: str) -> tuple[str, str]:
    """`-DNAME=value` (or `NAME=value`) as (name, value); value '' for a bare `-DNAME`."""
    name, _, value = (flag[2:] if flag.startswith("-D") else flag).partition("=")
    return name.strip(), value


@dataclass(frozen=True, slots=True)
class Test:
    """A condition that decides control flow: a gate candidate."""

    kind: str  # 'if' | 'elif' | 'while' | 'assert' | 'ternary'
    expr: PyExpr
    span: Span
    function: str
    text: str
    body_calls: tuple[str, ...]  # callees in the guarded body
    exits: bool  # the body leaves the function (raise/return): the rest of the block is guarded by `not expr`
    rest_calls: tuple[str, ...]  # callees after the statement in the same block (when exits)


@dataclass(frozen=True, slots=True)
class PyReturn:
    function: str
    line: int
    value: PyExpr | None
    path: tuple[tuple[PyExpr, bool], ...]  # enclosing conditions with their required truth


@dataclass(frozen=True, slots=True)
class PyLoop:
    """`for name in iterable:` inside a function: what the loop variable runs over."""

    function: str
    line: int
    target: str
    iterable: PyExpr


@dataclass(frozen=True, slots=True)
class ArchString:
    """A string literal that spells a target ('-gencode=arch=compute_90a,code=sm_90a', '90a')."""

    value: str
    span: Span
    function: str
    context: str  # nearby callee, keyword and assignment target names, space-separated
    within: Span | None = None  # the list, tuple or set literal it is an element of, if any


@dataclass(frozen=True, slots=True)
class PythonFacts:
    path: str
    sha256: str
    encoding: str = "utf-8"
    functions: tuple[PyFunction, ...] = ()
    classes: tuple[PyClass, ...] = ()
    calls: PyCalls = PyCalls()
    imports: tuple[PyImport, ...] = ()
    constants: tuple[PyConstant, ...] = ()
    assigns: PyAssigns = PyAssigns()
    paths: tuple[PyAssign, ...] = ()  # names bound to Path(...) / os.path.join / '/' chains
    sources: tuple[SourceRef, ...] = ()
    flags: tuple[FlagList, ...] = ()
    extended: tuple[str, ...] = ()  # module-scope names a `+=` or a list method at module scope changes
    tests: tuple[Test, ...] = ()
    returns: tuple[PyReturn, ...] = ()
    loops: tuple[PyLoop, ...] = ()  # in functions, over one name
    arch_strings: tuple[ArchString, ...] = ()
    suppressions: tuple[Suppression, ...] = ()
    diagnostics: tuple[Diagnostic, ...] = ()
    partial_parse: bool = False
    tactics: tuple[TileListFact, ...] = ()  # CUTLASS generator tile lists (extract/python/tactics.py)




fast_pickling(globals())
