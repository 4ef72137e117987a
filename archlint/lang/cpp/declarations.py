"""Namespace-scope declarations of a C++ file, read lexically, for declaration reachability.

A header-only library compiles what a unit names: a class template, a template function or one
of their specialisations is compiled into a unit only when something the unit compiles names it.
CUTLASS's collective builders are the case in point: `CollectiveBuilder<arch::Sm120, ...>` names
SM120 MMA atoms, and is compiled only where something names `arch::Sm120`. This module records,
per file, each namespace-scope definition (class, function, alias) with the names that select it
and the identifiers it names; `archlint.reach` follows them from what a unit surely compiles.

The reading is deliberately coarse and errs towards "compiled": regions are ignored, every
identifier a definition spells counts as named, and a file whose braces do not balance records
no declarations at all (everything in it then counts as compiled).

What choosing a specialisation or an overload needs is read by `specialisation`; the bracket
matching and argument lists are `lexical`'s.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, replace

from archlint.lang.cpp.lexical import (
    IDENT_RE,
    argument_spans,
    closing_angle,
    closing_bracket,
    inside_brackets,
    split_arguments,
)
from archlint.lang.cpp.specialisation import TYPE_TEST_RE, specialisation_keys, template_argument_keys
from archlint.model.cuda import Declaration, Declarations

_DIRECTIVE_LINE_RE = re.compile(rb"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", re.M)
_DEFINE_RE = re.compile(rb"^[ \t]*#[ \t]*define\b", re.M)
_NAMESPACE_HEAD_RE = re.compile(rb"^\s*(?:inline\s+)?namespace\b[\w:\s]*$|^\s*extern\s*\"\s*\"\s*$", re.S)
# `[export] struct [[attr]] alignas(16) MACRO Name<args> : bases` up to the name and its `<`.
_CLASS_RE = re.compile(
    rb"^\s*(?:\w+\s+)*?(?:struct|class|union)\b"
    rb"(?:\s*(?:\[\[[^\]]*\]\]|(?:alignas|__align__|__declspec)\s*\([^)]*\)|__attribute__\s*\(\([^)]*\)\)|[A-Z_][A-Z0-9_]*\b(?!\s*[<:{]|\s*$)))*"
    rb"\s*(\w+)\s*(?:(<)|:|final\b|$)", re.S)
_TEMPLATE_RE = re.compile(rb"^\s*template\s*<")
_ALIAS_RE = re.compile(rb"\s*using\s+(\w+)\s*=")
# `using ns::Name;` brings a name into scope and compiles nothing (not `using namespace ns;`)
_USING_DECLARATION_RE = re.compile(rb"\s*using\s+(?!namespace\b)(?:typename\s+)?(?:::\s*)?(?:\w+\s*::\s*)+(\w+)\s*$")
_FORWARD_RE = re.compile(rb"\s*(?:friend\s+)?(?:struct|class|union)\b[^;={}()]*$")
_FUNCTION_NAME_RE = re.compile(rb"((?:\w+\s*(?:<[^(){};]*>)?\s*::\s*)*)(~?\w+)\s*(?:<[^(){};]*>)?\s*\(")
_OWNER_RE = re.compile(rb"(\w+)\s*(?:<[^(){};]*>)?\s*::")
_OPERATOR_BEFORE_RE = re.compile(rb"\boperator\s*$")
_NOT_NEWLINE_RE = re.compile(rb"[^\n]")
_ANGLES_RE = re.compile(rb"<[^;{}]*>")
_MACRO_NAME_RE = re.compile(r"[A-Z][A-Z0-9_]+")
_BRACKETS_RE = re.compile(rb"[{};]")
_ATTRIBUTE_CALLS = frozenset(
    b"__launch_bounds__ __attribute__ alignas __align__ __declspec decltype __cluster_dims__ noexcept "
    b"requires __nv_register_params__ sizeof alignof".split()
)
_PATTERN_RE = re.compile(rb"\b(?:struct|class|union)\s+(?:\w+\s*::\s*)*\w+\s*<")


# A member alias a definition declares: `using Name = ...;`, `typedef ... Name;`.
_MEMBER_ALIAS_RE = re.compile(rb"\busing\s+(\w+)\s*=|\btypedef\b[^;{}()]*?\b(\w+)\s*;")
_QUALIFIED_BEFORE_RE = re.compile(rb"::\s*(?:template\s+)?\Z")
_NAME_BEFORE_RE = re.compile(rb"(\w+)\s*\Z")
_NAMESPACE_NAME_RE = re.compile(rb"\bnamespace\s+((?:\w+\s*::\s*)*\w+)")


_EXPLICIT_INSTANTIATION_RE = re.compile(rb"(?<![\w\s])\s*\btemplate\s+(?!<)[^;{}]*;")


def read_declarations(masked: bytes, line_starts: tuple[int, ...], sure: bytes | None = None) -> Declarations:
    """The namespace-scope definitions of a comment- and literal-masked file. `sure`: the same text
    with what is compiled only under a condition blanked (`sure_text`), for each one's `sure_uses`."""
    text = without_directives(masked)
    loose = set(_macro_names(masked))
    items: list[Declaration] = []
    depth, statement = 0, 0
    pos = 0
    while True:
        match = _BRACKETS_RE.search(text, pos)
        if match is None:
            break
        char, at = match.group(0), match.start()
        if char == b"}":
            if depth == 0:
                return _unread(masked)
            depth -= 1
            statement = pos = at + 1
            continue
        head = text[statement:at]
        if char == b";":
            _statement(head, statement, at, line_starts, items, loose)
            statement = pos = at + 1
            continue
        if _NAMESPACE_HEAD_RE.match(head):
            depth += 1
            statement = pos = at + 1
            continue
        close = closing_bracket(text, at, b"{", b"}", len(text))
        if close is None:
            return _unread(masked)
        parsed = _Head.read(head)
        if inside_brackets(parsed.body):
            pos = close + 1  # a braced initialiser in a template argument or a default (`Int<1>{}`)
            continue
        end = close
        if parsed.klass is not None or not parsed.function:
            semicolon = text.find(b";", close)
            end = close if semicolon < 0 else semicolon
        _definition(text, statement, parsed, end, line_starts, items, loose)
        statement = pos = end + 1
    if depth != 0:
        return _unread(masked)
    if sure is not None:
        items = [replace(item, sure_uses=one_of(item.uses, _identifiers(sure[_offset(line_starts, item.start):
                                                                            _offset(line_starts, item.end) + 1])))
                 for item in items]
    instantiated = frozenset(name for head in _explicit_instantiations(text) for name in _identifiers(head))
    return Declarations(tuple(items), frozenset(loose), True, instantiated, _namespaces(text))


def one_of(uses: tuple[str, ...], sure_uses: Iterable[str]) -> tuple[str, ...]:
    """`sure_uses` as a definition keeps it, sorted; the `uses` tuple itself where the two are
    equal (nearly half the definitions): one held, pickled and loaded, not two."""
    sure = names_of(sure_uses)
    return uses if sure == uses else sure


def names_of(names: Iterable[str]) -> tuple[str, ...]:
    """Names as a definition keeps them: each once, sorted."""
    return tuple(sorted(set(names)))


def _namespaces(text: bytes) -> frozenset[str]:
    return frozenset(part.strip().decode() for match in _NAMESPACE_NAME_RE.finditer(text)
                     for part in match.group(1).split(b"::"))


def _explicit_instantiations(text: bytes) -> list[bytes]:
    """The statements that instantiate a template explicitly (not `extern template`, which only
    declares that another unit does)."""
    return [match.group(0) for match in _EXPLICIT_INSTANTIATION_RE.finditer(text)]


def without_directives(masked: bytes) -> bytes:
    """The text with its preprocessor directive lines blanked (newlines kept): code only."""
    return _DIRECTIVE_LINE_RE.sub(lambda m: blank(m.group(0)), masked)


def blank(text: bytes) -> bytes:
    """Spaces for every character but newlines, so offsets and line numbers stay."""
    return _NOT_NEWLINE_RE.sub(b" ", text)


def _offset(line_starts: tuple[int, ...], place: tuple[int, int]) -> int:
    return line_starts[place[0] - 1] + place[1] - 1


def _unread(masked: bytes) -> Declarations:
    """A file this reading cannot follow: all of it counts as compiled, so all it names is named."""
    return Declarations((), frozenset(_identifiers(masked)), False)


def _macro_names(masked: bytes) -> set[str]:
    names: set[str] = set()
    for match in _DEFINE_RE.finditer(masked):
        line = _DIRECTIVE_LINE_RE.match(masked, match.start())
        names.update(_identifiers(line.group(0) if line else b""))
    return names


def _statement(head: bytes, start: int, end: int, line_starts, items: list, loose: set) -> None:
    """A `;`-ended statement at namespace scope. Aliases, using-declarations, forward-declared
    classes and template declarations are compiled only where named; the rest (variables, explicit
    instantiations, static_asserts, plain prototypes) counts as always compiled."""
    parsed = _Head.read(head)
    names: tuple[str, ...] = ()
    keys: tuple[tuple[str, ...], ...] = ()
    alias = _ALIAS_RE.match(parsed.body) or _USING_DECLARATION_RE.match(parsed.body)
    if alias is not None:
        names = (alias.group(1).decode(),)
    elif _FORWARD_RE.match(parsed.body) and parsed.klass is not None:
        names, keys = parsed.class_name_and_keys()
    elif parsed.templated:
        names = _declared_names(parsed.body)
    if not _nameable(names):
        loose.update(_identifiers(head, patterns=False))  # `template struct X<...>;` instantiates X<...>
        return
    uses, qualified = _uses(head, names, parsed.params)
    items.append(Declaration(names, keys, _line_col(line_starts, start, head),
                             _line_col(line_starts, end, b""), names_of(uses), templated=parsed.templated,
                             qualified=qualified))


def _declared_names(body: bytes) -> tuple[str, ...]:
    """The name a template declaration declares: a function's, or a variable template's."""
    before_value = body.split(b"=", 1)[0]
    if b"(" in before_value:
        return _function_names(body)
    idents = IDENT_RE.findall(_ANGLES_RE.sub(b" ", before_value))
    return (idents[-1].decode(),) if idents else ()


def _definition(text: bytes, start: int, parsed: "_Head", end: int, line_starts, items: list, loose: set) -> None:
    spelled = text[start : end + 1]
    body = parsed.body
    if parsed.klass is not None:
        names, keys = parsed.class_name_and_keys()
    elif parsed.function and b"=" not in body.split(b"(", 1)[0]:
        names, keys = _function_names(body), _parameter_keys(body, parsed.params)
        if not _nameable(names) or (b"__global__" in body and not parsed.params):
            loose.update(_identifiers(spelled))  # a plain kernel is emitted whether named or not
            return
    else:
        loose.update(_identifiers(spelled))
        return
    uses, qualified = _uses(spelled, names, parsed.params)
    items.append(Declaration(names, keys, _line_col(line_starts, start, parsed.raw),
                             _line_col(line_starts, end, b""), names_of(uses), templated=parsed.templated,
                             qualified=qualified))


def _uses(text: bytes, own: tuple[str, ...], params: AbstractSet[str]) -> tuple[frozenset[str], frozenset[tuple[str, str]]]:
    """What a definition names that can select a namespace-scope definition, and (name, qualifier)
    for the names among them spelled only after a qualifier the reach has to tell (a class or a
    namespace). A member the definition declares itself (`using Mma = Mma_;`) is not the
    namespace-scope `Mma` where it is spelled bare after that, nor is a name spelled after one of
    its template parameters, its member aliases or a `decltype` (`typename GemmKernel::Mma::Shape`)."""
    names = _identifiers(text)
    if b"::" not in text and b"using" not in text and b"typedef" not in text:
        return frozenset(names), frozenset()
    members: dict[str, list[tuple[int, int]]] = {}  # name -> (declared at, in scope from)
    for match in _MEMBER_ALIAS_RE.finditer(text):
        name = match.group(1) or match.group(2)
        if name.decode() not in own:
            at, scope = (match.start(1), text.find(b";", match.end())) if match.group(1) else (match.start(2), match.end())
            members.setdefault(name.decode(), []).append((at, scope))
    bare: set[str] = set()
    local: set[str] = set()
    qualified: dict[str, set[str]] = {}
    for match in IDENT_RE.finditer(text):
        name = match.group(0).decode()
        if name not in names or name in bare:
            continue
        qualifier = _qualifier_before(text, match.start())
        if qualifier is None:
            if not any(match.start() == at or 0 <= scope < match.start() for at, scope in members.get(name, ())):
                bare.add(name)
        elif qualifier == ")" or qualifier in params or qualifier in members:
            local.add(name)  # a member of a type the definition itself names
        elif qualifier:
            qualified.setdefault(name, set()).add(qualifier)
        else:
            bare.add(name)  # `::name`, or a qualifier this reading cannot tell
    member_only = (set(members) | local) - bare - set(qualified)
    spelled_qualified = frozenset((name, qualifier) for name, qualifiers in qualified.items() if name not in bare
                                  for qualifier in qualifiers)
    return frozenset(names - member_only), spelled_qualified


def _qualifier_before(text: bytes, start: int) -> str | None:
    """The qualifier of the name at `start`: None where it is spelled bare, the class or namespace
    name before its `::` (`GemmKernel` in `GemmKernel::Mma`, `Outer` in `Outer<T>::template X`),
    ')' after `decltype(...)::`, '' for `::name` or a qualifier this reading cannot tell."""
    match = _QUALIFIED_BEFORE_RE.search(text, max(0, start - 64), start)
    if match is None:
        return None
    end = match.start()
    while end > 0 and text[end - 1 : end].isspace():
        end -= 1
    if end and text[end - 1 : end] == b")":
        return ")"
    if end and text[end - 1 : end] == b">":
        depth, end = 0, end - 1
        while end >= 0:
            char = text[end : end + 1]
            depth += {b">": 1, b"<": -1}.get(char, 0)
            if depth == 0 or char in b";{}":
                break
            end -= 1
        if depth != 0:
            return ""
    name = _NAME_BEFORE_RE.search(text, max(0, end - 128), end)
    return name.group(1).decode() if name is not None else ""


def _nameable(names: tuple[str, ...]) -> bool:
    """Whether code reaches the definition through one of these names: not an operator (called
    without its name), not a macro invocation that the reading took for a function (`MACRO(x)`
    before a definition, whose expansion it cannot see)."""
    return bool(names) and not any(name.startswith("operator") or _MACRO_NAME_RE.fullmatch(name) for name in names)


@dataclass(frozen=True)
class _Head:
    """What precedes a statement's `;` or a definition's `{`, read once: the names its template heads
    declare, what follows them, and whether that is a class's or a function's head."""

    raw: bytes
    params: frozenset[str]  # the last identifier of each template parameter
    templated: bool  # starts with a template head (`template <>` included)
    body: bytes  # what follows the template heads
    klass: re.Match | None  # `struct [[attr]] Name<args>` up to the name and its `<`

    @classmethod
    def read(cls, head: bytes) -> "_Head":
        lists, body = _template_heads(head)
        params = set()
        for declared in lists:
            for param in split_arguments(declared):
                idents = IDENT_RE.findall(param.split(b"=", 1)[0])
                if idents:
                    params.add(idents[-1].decode())
        return cls(head, frozenset(params), bool(lists), body, _CLASS_RE.match(body))

    @property
    def function(self) -> bool:
        return b"(" in self.body

    def class_name_and_keys(self) -> tuple[tuple[str, ...], tuple[tuple[str, ...], ...]]:
        """The class's name, and for a specialisation what choosing it needs."""
        klass = self.klass
        assert klass is not None, "only called for a class head"
        name = klass.group(1).decode()
        if klass.group(2) is None:
            return (name,), ()
        close = closing_angle(self.body, klass.end(2) - 1)
        args = self.body[klass.end(2) : close] if close is not None else b""
        return (name,), specialisation_keys(args, self.params)


def _function_names(body: bytes) -> tuple[str, ...]:
    """The defined function's name, and for an out-of-line member (`Foo<T>::bar`) its class's too."""
    match = _function_name(body)
    if match is None:
        return ()
    name = match.group(2)
    if name == b"operator" or _OPERATOR_BEFORE_RE.search(body, 0, match.start(2)):
        return ("operator",)  # `operator()`, or a conversion `operator bool()`
    owners = [m.group(1).decode() for m in _OWNER_RE.finditer(match.group(1))]
    return tuple(dict.fromkeys([name.decode().lstrip("~"), *owners[-1:]]))


def _function_name(body: bytes) -> re.Match | None:
    """The defined function's name up to its `(`, past attribute calls (`__launch_bounds__(...)`)."""
    for match in _FUNCTION_NAME_RE.finditer(body):
        name = match.group(2)
        if not (name in _ATTRIBUTE_CALLS or name.startswith(b"__") and name.endswith(b"__")):
            return match
    return None


def _parameter_keys(body: bytes, params: AbstractSet[str]) -> tuple[tuple[str, ...], ...]:
    """What calling a function overload needs: every concrete template argument its parameter types
    spell (`copy(Copy_Traits<SM90_BULK_COPY_AUTO, Args...> const&, ...)` needs `SM90_BULK_COPY_AUTO`),
    since an argument of that type exists only where something names it."""
    name = _function_name(body)
    if name is None:
        return ()
    opening = name.end() - 1
    close = closing_bracket(body, opening, b"(", b")", len(body))
    clauses: list[tuple[str, ...]] = []
    for parameter in split_arguments(body[opening + 1 : close if close is not None else len(body)]):
        clauses += template_argument_keys(parameter.split(b"=", 1)[0], params)
    return tuple(dict.fromkeys(clauses))


def _template_heads(head: bytes) -> tuple[list[bytes], bytes]:
    """The parameter lists of the `template <...>` heads `head` starts with, and what follows them."""
    lists, rest = [], head
    while (match := _TEMPLATE_RE.match(rest)) is not None:
        close = closing_angle(rest, match.end() - 1)
        if close is None:
            break
        lists.append(rest[match.end() : close])
        rest = rest[close + 1 :]
    return lists, rest


def spelled_names(text: bytes) -> set[str]:
    """The names `text` spells that can instantiate something (`_identifiers`)."""
    return _identifiers(text)


def _identifiers(text: bytes, patterns: bool = True) -> set[str]:
    """The names `text` spells, leaving out what names a type without instantiating it: the
    arguments of type tests (`is_same_v<ArchTag, arch::Sm120>`, `is_base_of_v<SM90_TMA_LOAD, Op>`)
    and the patterns of
    specialisations (`struct IsBlockScaled<MainloopSm120X<...>> : true_type`), which match a type
    that something else has to name."""
    if b"is_same" in text or b"is_base_of" in text:
        text = _without_arguments(text, TYPE_TEST_RE)
    if patterns and b"<" in text and _PATTERN_RE.search(text):
        text = _without_arguments(text, _PATTERN_RE)
    return {m.decode() for m in IDENT_RE.findall(text)}


def type_test_spans(masked: bytes) -> list[tuple[int, int]]:
    """(start, end) byte offsets of the argument lists of type tests (`is_same_v<...>`,
    `is_base_of_v<...>`): a type named there is compared, not instantiated."""
    if b"is_same" not in masked and b"is_base_of" not in masked:
        return []
    return list(argument_spans(masked, TYPE_TEST_RE))


def _without_arguments(text: bytes, opener: re.Pattern) -> bytes:
    """`text` with the argument lists that `opener` (ending at a `<`) opens cut out."""
    parts, pos = [], 0
    for start, close in argument_spans(text, opener):
        parts.append(text[pos:start])
        pos = close
    parts.append(text[pos:])
    return b"".join(parts)


def _line_col(line_starts: tuple[int, ...], offset: int, head: bytes) -> tuple[int, int]:
    """(line, col) of `offset`, moved past the whitespace `head` starts with."""
    offset += len(head) - len(head.lstrip())
    line = bisect_right(line_starts, offset)
    return line, offset - line_starts[line - 1] + 1
