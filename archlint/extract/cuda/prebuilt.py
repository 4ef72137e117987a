"""Host code around prebuilt kernels: calls that load device code at run time, checks that let only
some GPUs through, and the integer constants such checks name (read lexically on masked text).

A check is a check macro (`FLASHINFER_CHECK(mSM == kSM_100 || mSM == kSM_103, ...)`,
`TLLM_CHECK_WITH_INFO(...)`) or `if (!(cond)) throw ...;` whose condition is a disjunction of
equalities of one SM-version value (a name whose words include `sm` or `arch`); a predicate is a
`bool` function with one integer SM parameter whose every `return` is `false` or such a
disjunction of that parameter (`isArchCompatible(int smVersion, CudaArch cubinArch)`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from archlint.knowledge.prebuilt import PrebuiltKnowledge
from archlint.lang.cpp.directives import Structure, macro_at
from archlint.lang.cpp.lexical import closing_bracket, split_arguments
from archlint.model.cuda import ArchCheck, Function, LoaderCall, SmConstant

_IDENT = rb"[A-Za-z_]\w*"
_SUBJECT_RE = re.compile(r"(?:this\s*->\s*)?[A-Za-z_]\w*(?:\s*(?:\.|->|::)\s*[A-Za-z_]\w*)*(?:\s*\(\s*\))?")
_VALUE_RE = re.compile(r"\d+[uUlL]*|(?:[A-Za-z_]\w*::)*[A-Za-z_]\w*")
_CONSTANT_STYLE_RE = re.compile(r"(?:[A-Za-z_]\w*::)*(?:k[A-Z0-9_]\w*|[A-Z][A-Z0-9_]*)")
_WORD_RE = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[A-Z]+")
_IF_RE = re.compile(rb"\bif\s*\(")
_RETURN_RE = re.compile(rb"\breturn\b([^;]*);")
_EXITS_RE = re.compile(rb"\b(?:return|goto|co_return)\b")
_BRANCHES_RE = re.compile(rb"\b(?:if|for|while|switch|return|break|continue|goto)\b")
_BOOL_RE = re.compile(rb"\bbool\b")
_INT_TYPE_RE = re.compile(r"(?:const\s+)?(?:std::)?(?:(?:unsigned|signed)\s+)?"
                          r"(?:int|long|short|unsigned|u?int(?:8|16|32|64)_t|size_t)(?:\s+int)?(?:\s+const)?")
# Patterns that start with a literal, which the regex engine finds fast.
_CONSTANT_RE = re.compile(rb"const(?:expr)?\s[^;={}()]{0,80}?\b(" + _IDENT + rb")\s*(?:=\s*|\{\s*)(\d+)[uUlL]*\s*[};]")
_EQUALITY_RETURN_RE = re.compile(rb"return\s+\(?\s*(\w+)\s*==")
_SM_HINT_RE = re.compile(rb"[sS][mM]|[aA][rR][cC][hH]")
_PREDICATE_HINT_RE = re.compile(rb"[sS][mM]|[aA]rch")
_TEXT_LIMIT = 160


@dataclass(frozen=True)
class _Candidate:
    name: str
    subject: str
    values: tuple[str, ...]
    text: str
    offset: int


def sm_named(name: str) -> bool:
    """Whether an identifier (or a call of one) names an SM version or arch: `mSM`, `smVersion`,
    `getSMVersion()`, `sm_version`, `cudaArch`; not `smem_size`."""
    last = re.split(r"\.|->|::", name.replace("()", "").replace(" ", ""))[-1]
    words = {word.lower() for part in re.split(r"[_\d]+", last) for word in _WORD_RE.findall(part)}
    return bool(words & {"sm", "arch"})


class PrebuiltScan:
    """What one file's text says about prebuilt kernels, read before its functions are known (so
    `wanted` can ask for a parse of its host code) and placed in them after."""

    def __init__(self, structure: Structure, knowledge: PrebuiltKnowledge) -> None:
        self.structure = structure
        self.knowledge = knowledge
        masked = structure.masked
        present = any(n.encode() in masked for n in knowledge.loaders)
        self._loaders = list(knowledge.loader_call.finditer(masked)) if present else []
        self._checks = _macro_checks(structure, knowledge) + _if_throws(structure, knowledge)
        self._predicates = any(_PREDICATE_HINT_RE.search(m.group(1)) and not _word_before(masked, m.start())
                               for m in _EQUALITY_RETURN_RE.finditer(masked))

    @property
    def wanted(self) -> bool:
        return bool(self._loaders or self._checks or self._predicates)

    def loaders(self, function_at: Callable[[int], Function | None]) -> tuple[LoaderCall, ...]:
        found = []
        for match in self._loaders:
            line = self.structure.line_of(match.start(1))
            col = match.start(1) - self.structure.line_starts[line - 1] + 1
            function = function_at(line)
            # A call; outside functions the name is a declaration or a macro body, and a wrapper's
            # definition of the same name (TensorRT-LLM's CUDADriverWrapper) loads only when called.
            name = match.group(1).decode()
            if function is not None and (function.line, function.name) != (line, name):
                found.append(LoaderCall(name, line, col, self.structure.region_at(line), function.qualname))
        return tuple(found)

    def checks(self, function_at: Callable[[int], Function | None]) -> tuple[ArchCheck, ...]:
        structure = self.structure
        found = []
        for candidate in self._checks:
            line = structure.line_of(candidate.offset)
            function = function_at(line)
            if function is None:
                continue
            col = candidate.offset - structure.line_starts[line - 1] + 1
            found.append(ArchCheck("check", candidate.name, candidate.subject, candidate.values, candidate.text, line, col,
                                   structure.region_at(line), function.qualname,
                                   _unconditional(structure, function, candidate.offset)))
        return tuple(found)

    def predicates(self, functions: list[Function]) -> tuple[ArchCheck, ...]:
        if not self._predicates:
            return ()
        return tuple(check for function in functions if function.kind in ("host", "host_device")
                     for check in [_predicate(self.structure, function)] if check is not None)

    def constants(self) -> tuple[SmConstant, ...]:
        found = []
        masked = self.structure.masked
        for match in _CONSTANT_RE.finditer(masked):
            name = match.group(1).decode()
            if _SM_HINT_RE.search(match.group(1)) and not _word_before(masked, match.start()) and sm_named(name):
                line = self.structure.line_of(match.start(1))
                found.append(SmConstant(name, int(match.group(2)), line, self.structure.region_at(line)))
        return tuple(found)


def _word_before(masked: bytes, offset: int) -> bool:
    return offset > 0 and (masked[offset - 1 : offset].isalnum() or masked[offset - 1 : offset] == b"_")


def _text(structure: Structure, start: int, end: int, literals: bool = True) -> str:
    """The code as written between two offsets, on one line: with its string literals (a check's
    message), or with comments and literals blanked (a function's head)."""
    source = structure.raw if literals else structure.masked
    text = " ".join(source[start:end].decode("utf-8", "replace").split())
    return text if len(text) <= _TEXT_LIMIT else text[: _TEXT_LIMIT - 3] + "..."


def _macro_checks(structure: Structure, knowledge: PrebuiltKnowledge) -> list[_Candidate]:
    masked = structure.masked
    if b"==" not in masked or not any(m.encode() in masked for m in knowledge.check_macros):
        return []
    found = []
    for match in knowledge.check_call.finditer(masked):
        if macro_at(structure.defines, structure.line_of(match.start())) is not None:
            continue  # a macro body: its condition is a parameter
        close = closing_bracket(masked, match.end() - 1, b"(", b")")
        if close is None:
            continue
        condition = _first_argument(masked[match.end() : close])
        parsed = _disjunction(condition.decode("utf-8", "replace"), None)
        if parsed is not None:
            found.append(_Candidate(match.group(1).decode(), *parsed, _text(structure, match.start(), close + 1), match.start()))
    return found


def _if_throws(structure: Structure, knowledge: PrebuiltKnowledge) -> list[_Candidate]:
    """`if (!(s == a || s == b)) throw ...;` (or `if (s != a && s != b) { throw ...; }`, or an error macro)."""
    masked = structure.masked
    if b"throw" not in masked and not any(e.encode() in masked for e in knowledge.error_macros):
        return []
    found = []
    for match in _IF_RE.finditer(masked):
        close = closing_bracket(masked, match.end() - 1, b"(", b")")
        if close is None or not _throws(masked, close + 1, knowledge.error_report):
            continue
        condition = masked[match.end() : close].decode("utf-8", "replace").strip()
        parsed = _negated_disjunction(condition)
        if parsed is not None and macro_at(structure.defines, structure.line_of(match.start())) is None:
            found.append(_Candidate("throw", *parsed, _text(structure, match.start(), close + 1) + " throw", match.start()))
    return found


def _throws(masked: bytes, start: int, error_report: re.Pattern[bytes]) -> bool:
    """Whether the statement at `start` only throws: `throw ...;`, `ERROR(...);`, or a block of
    statements with no branch that throws."""
    rest = masked[start : start + 4000].lstrip()
    if rest.startswith(b"{"):
        end = closing_bracket(rest, 0, b"{", b"}")
        if end is None:
            return False
        rest = rest[1:end]
        if _BRANCHES_RE.search(rest):
            return False
    else:
        rest = rest[: rest.find(b";") + 1]
    return error_report.search(rest) is not None


def _first_argument(arguments: bytes) -> bytes:
    return split_arguments(arguments, angles=False)[0]


def _strip_parens(text: str) -> str:
    text = text.strip()
    while text.startswith("(") and text.endswith(")") and _balanced(text[1:-1]):
        text = text[1:-1].strip()
    return text


def _balanced(text: str) -> bool:
    depth = 0
    for char in text:
        depth += (char == "(") - (char == ")")
        if depth < 0:
            return False
    return depth == 0


def _split_top(text: str, operator: str) -> list[str]:
    parts, depth, start, index = [], 0, 0, 0
    while index < len(text):
        char = text[index]
        depth += (char == "(") - (char == ")")
        if depth == 0 and text.startswith(operator, index):
            parts.append(text[start:index])
            index += len(operator)
            start = index
            continue
        index += 1
    parts.append(text[start:])
    return parts


def _disjunction(text: str, subject: str | None, operator: str = "==", joint: str = "||") -> tuple[str, tuple[str, ...]] | None:
    """(subject, values) of `s == a || s == b ...` (either side), all of one SM-named subject."""
    pairs = []
    for term in _split_top(_strip_parens(text), joint):
        sides = _split_top(_strip_parens(term), operator)
        if len(sides) != 2:
            return None
        left, right = (" ".join(side.split()) for side in sides)
        if not all(_SUBJECT_RE.fullmatch(side) or _VALUE_RE.fullmatch(side) for side in (left, right)):
            return None
        pairs.append((left, right))
    if subject is None:
        subject = _common_subject(pairs)
    if subject is None or not sm_named(subject):
        return None
    values = []
    for left, right in pairs:
        value = right if left == subject else left if right == subject else None
        if value is None or not _VALUE_RE.fullmatch(value):
            return None
        values.append(value)
    return subject, tuple(values)


def _common_subject(pairs: list[tuple[str, str]]) -> str | None:
    shared = set(pairs[0]).intersection(*pairs[1:]) if len(pairs) > 1 else set()
    if len(shared) == 1:
        return shared.pop()
    left, right = pairs[0]
    if len(pairs) > 1:
        return None
    # one equality: the value is the literal or the constant-style name
    kinds = [bool(re.fullmatch(r"\d+[uUlL]*", side) or _CONSTANT_STYLE_RE.fullmatch(side)) for side in (left, right)]
    if kinds == [False, True]:
        return left
    if kinds == [True, False]:
        return right
    return None


def _negated_disjunction(condition: str) -> tuple[str, tuple[str, ...]] | None:
    text = _strip_parens(condition)
    if text.startswith("!") and not text.startswith("!="):
        rest = text[1:].strip()  # the negation of one parenthesised disjunction, nothing after it
        return _disjunction(rest, None) if rest.startswith("(") and rest.endswith(")") and _balanced(rest[1:-1]) else None
    return _disjunction(text, None, "!=", "&&")


def _unconditional(structure: Structure, function: Function, offset: int) -> bool:
    """Directly in the function's body (not nested in a block, lambda or braceless branch), with no
    return or goto before it."""
    masked = structure.masked
    start = structure.line_starts[function.line - 1] + function.col - 1
    before = masked[start:offset]
    if before.count(b"{") - before.count(b"}") != 1 or _EXITS_RE.search(before):
        return False
    previous = before.rstrip()[-1:]
    return previous in (b"{", b";", b"}")


def _predicate(structure: Structure, function: Function) -> ArchCheck | None:
    masked = structure.masked
    name_at = structure.line_starts[function.line - 1] + function.col - 1
    head_start = max(masked.rfind(b";", 0, name_at), masked.rfind(b"}", 0, name_at), masked.rfind(b"{", 0, name_at),
                     masked.rfind(b"\n#", 0, name_at), name_at - 300)
    if not _BOOL_RE.search(masked, head_start + 1, name_at):
        return None
    opening = masked.find(b"(", name_at)
    close = closing_bracket(masked, opening, b"(", b")") if opening >= 0 else None
    if close is None:
        return None
    parameter = _sm_parameter(masked[opening + 1 : close].decode("utf-8", "replace"))
    brace = masked.find(b"{", close)
    end = closing_bracket(masked, brace, b"{", b"}") if brace >= 0 and b";" not in masked[close:brace] else None
    if parameter is None or end is None:
        return None
    values: list[str] = []
    for match in _RETURN_RE.finditer(masked, brace, end):
        expression = match.group(1).decode("utf-8", "replace").strip()
        if _strip_parens(expression) == "false":
            continue
        parsed = _disjunction(expression, parameter)
        if parsed is None:
            return None
        values += parsed[1]
    if not values:
        return None
    return ArchCheck("predicate", function.name, parameter, tuple(dict.fromkeys(values)),
                     _text(structure, head_start + 1, close + 1, literals=False), function.line, function.col, function.region,
                     function.qualname)


def _sm_parameter(parameters: str) -> str | None:
    """The one integer parameter, when it is named for an SM version."""
    integers = []
    for parameter in _split_top(parameters, ","):
        declaration = parameter.split("=")[0].strip()
        match = re.fullmatch(r"(.*?)\s*\b([A-Za-z_]\w*)", declaration)
        if match and _INT_TYPE_RE.fullmatch(match.group(1).strip()):
            integers.append(match.group(2))
    return integers[0] if len(integers) == 1 and sm_named(integers[0]) else None
