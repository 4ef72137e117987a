"""CUDA/C++ file → CudaFacts: regions, macros, includes, functions, arch-sensitive constructs, smem.

The preprocessor structure comes from the directive scanner (cpp.directives); functions and
their calls come from tree-sitter-cuda, with a lexical fallback for kernels the C++ grammar
loses in ERROR nodes and for files too large to parse whole; constructs (inline PTX,
intrinsics, shared-memory requests) are found lexically on the comment-masked text, so a
partial parse never hides one.
"""

from __future__ import annotations

import hashlib
import re
from bisect import bisect_right
from dataclasses import replace

from tree_sitter import Tree

from archlint.extract.cuda.asserts import arch_constants, static_asserts
from archlint.extract.cuda.chains import constexpr_branch_spans, names_every_alternative_spells, uniform_chains
from archlint.extract.cuda.functions import find_functions, parse
from archlint.extract.cuda.host import extract_host, host_marked
from archlint.extract.cuda.prebuilt import PrebuiltScan
from archlint.extract.cuda.screen import asm_statements, rule_sites
from archlint.extract.cuda.expansions import macro_expansions
from archlint.extract.cuda.sizes import size_requests
from archlint.extract.cuda.smem import macro_values, smem_requests
from archlint.extract.suppressions import parse_suppression_text
from archlint.knowledge.kb import KnowledgeBase, load_kb
from archlint.knowledge.languages import SOURCE_SUFFIXES
from archlint.knowledge.prebuilt import load_prebuilt
from archlint.lang.cpp.declarations import one_of, read_declarations, spelled_names, type_test_spans
from archlint.lang.cpp.sure import blank_spans, member_body_spans, sure_text
from archlint.lang.cpp.directives import Structure, comment_spans, macro_at, scan_directives
from archlint.lang.cpp.lexical import FileCalls
from archlint.lang.cpp.ptx import PtxError, _literals_from, opcodes
from archlint.model.cuda import Construct, CudaFacts, Declarations, Function, RuntimeArch, SmemRequest
from archlint.model.findings import Suppression

_DECLARES_RE = re.compile(rb"\b(?:struct|class)\s+$")


def extract_cuda(path: str, data: bytes, kb: KnowledgeBase | None = None, parse_limit: int = 1 << 20) -> CudaFacts:
    """Facts of one C/C++/CUDA file. `path` is root-relative posix; `data` its bytes."""
    if kb is None:
        kb = load_kb()
    structure = scan_directives(path, data)
    calls = FileCalls(structure)
    prebuilt = PrebuiltScan(structure, load_prebuilt())
    # host code is parsed where it hands work to a run-time compiler or a vendor library
    marked = host_marked(structure.masked) and len(data) <= parse_limit
    host_code = prebuilt.wanted or marked or _RUNTIME_ARCH_RE.search(data) is not None or kb.calls_library(structure.masked)
    functions, partial, tree = find_functions(data, structure, calls, parse_limit, host_code=host_code)
    spans = _FunctionSpans(functions)
    text = data.decode("utf-8", "replace")
    constexpr = constexpr_branch_spans(structure.masked) if b"constexpr" in structure.masked else []
    every_branch = _sure_text(structure)  # `if constexpr` branches kept: what the chains choose between
    sure = blank_spans(every_branch, constexpr) if constexpr else every_branch
    declarations = _with_chain_names(read_declarations(structure.masked, structure.line_starts, sure),
                                     structure, every_branch, sure)
    around = _Around(spans, structure, declarations)
    constructs = sorted(
        _ptx_constructs(data, text, structure, spans) + _identifier_constructs(kb, structure, around),
        key=lambda c: (c.line, c.col, c.kind, c.name),
    )
    constructs = _mark_constexpr_branches(constructs, structure, constexpr)
    constructs = _mark_uniform_chains([replace(c, unconditional=_kept(sure, _offset(structure, c))) for c in constructs],
                                      kb, structure, sure)
    return replace(
        _directive_facts(path, data, structure),
        functions=tuple(functions),
        constructs=tuple(constructs),
        smem=tuple(_sized(smem_requests(structure, spans.enclosing), data, structure, tree, kb, parse_limit)),
        partial_parse=partial,
        calls=calls.guarded(0, len(structure.masked)),
        declarations=declarations,
        arch_constants=arch_constants(structure),
        static_asserts=static_asserts(structure, spans.enclosing),
        runtime_archs=tuple(_runtime_archs(data, structure, spans)),
        loaders=prebuilt.loaders(spans.function_at),
        arch_checks=prebuilt.checks(spans.function_at) + prebuilt.predicates(functions),
        sm_constants=prebuilt.constants(),
        host=extract_host(data, structure, spans.function_at) if marked else None,
        expansions=macro_expansions(structure),
    )


def _sized(requests: list[SmemRequest], data: bytes, structure: Structure, tree: Tree | None,
           kb: KnowledgeBase, parse_limit: int) -> list[SmemRequest]:
    """The requests, with the sizes the C++ around the unsized host-side ones computes."""
    if len(data) > parse_limit:
        return requests
    return size_requests(lambda: (tree or parse(data)).root_node, structure, requests, kb.limit_reads, macro_values(structure))


# An arch option inside a string literal: the options a program passes to NVRTC.
_RUNTIME_ARCH_RE = re.compile(rb'"[^"\n]*?(?:--gpu-architecture|-arch)[= ]((?:sm|compute)_\d+[af]?)\b')


def _runtime_archs(data: bytes, structure: Structure, spans: "_FunctionSpans") -> list[RuntimeArch]:
    if b"gpu-architecture" not in data and b"-arch" not in data:
        return []
    found = []
    for match in _RUNTIME_ARCH_RE.finditer(data):
        if structure.masked[match.start() : match.start() + 1] != b'"':
            continue  # in a comment
        line = structure.line_of(match.start(1))
        col = match.start(1) - structure.line_starts[line - 1] + 1
        found.append(RuntimeArch(match.group(1).decode(), line, col, structure.region_at(line), spans.enclosing(line)))
    return found


def extract_cuda_directives(path: str, data: bytes) -> CudaFacts:
    """What a file adds to the scan-wide tables, read without a C++ parse: its regions, macros,
    includes, suppressions and directive diagnostics. The same fields as `extract_cuda` gives;
    functions, constructs and the rest stay empty (a file no gate's units can include), and
    `rule_sites` says what the file rules could find in them (extract.cuda.screen)."""
    structure = scan_directives(path, data)
    # a translation unit's definitions: where a host check's calls may lead (gates.host.Reach)
    declarations = read_declarations(structure.masked, structure.line_starts) if path.endswith(SOURCE_SUFFIXES) else Declarations()
    return replace(_directive_facts(path, data, structure), rule_sites=rule_sites(data, structure, load_kb()),
                   host_marked=host_marked(structure.masked), declarations=declarations)


def _directive_facts(path: str, data: bytes, structure: Structure) -> CudaFacts:
    return CudaFacts(
        path=path,
        sha256=hashlib.sha256(data).hexdigest(),
        regions=structure.regions,
        defines=structure.defines,
        includes=structure.includes,
        suppressions=tuple(_suppressions(data, structure)),
        diagnostics=structure.diagnostics,
    )


class _FunctionSpans:
    """Find the function enclosing a line."""

    def __init__(self, functions: list[Function]):
        ordered = sorted(functions, key=lambda f: (f.line, -f.end_line))
        self._starts = [f.line for f in ordered]
        self._functions = ordered

    def span(self, line: int) -> tuple[int, int] | None:
        """(first, last) line of the innermost function around a line."""
        function = self.function_at(line)
        return (function.line, function.end_line) if function else None

    def enclosing(self, line: int) -> str:
        function = self.function_at(line)
        return function.qualname if function else ""

    def function_at(self, line: int) -> Function | None:
        """The innermost function around a line."""
        # C++ functions nest only through local classes, so the nearest few starts suffice.
        index = bisect_right(self._starts, line) - 1
        for function in reversed(self._functions[max(0, index - 7) : index + 1]):
            if function.line <= line <= function.end_line:
                return function
        return None


def _ptx_constructs(data: bytes, text: str, structure: Structure, spans: _FunctionSpans) -> list[Construct]:
    found: list[Construct] = []
    if b"asm" not in data:
        return found
    char_starts: list[int] | None = None
    for match in asm_statements(structure.masked):
        line = structure.line_of(match.start())
        line_start = structure.line_starts[line - 1]
        col = match.start() - line_start + 1
        if char_starts is None:  # str offsets differ from byte offsets in non-ASCII files
            char_starts = [0, *(m.end() for m in re.finditer("\n", text))]
        char_pos = char_starts[line - 1] + len(structure.raw[line_start : match.end()].decode("utf-8", "replace"))
        try:
            names = opcodes(_literals_from(text, char_pos))
        except PtxError:
            continue
        region, function = structure.region_at(line), spans.enclosing(line)
        for name in dict.fromkeys(names):
            found.append(Construct("ptx", name, line, col, region, function))
    return found


def _identifier_kind(kb: KnowledgeBase, name: str) -> str:
    if name.startswith("__cluster_dims__"):
        return "attribute"
    if name.startswith(kb.libraries.prefixes) or name in kb.libraries.form_names:
        return "library"
    if name.startswith(kb.intrinsic_prefixes):
        return "tag"
    return "arch-tag" if name in kb.arch_tag_names else "intrinsic"


def _identifier_constructs(kb: KnowledgeBase, structure: Structure, around: "_Around") -> list[Construct]:
    pattern = kb.identifier_pattern
    found: list[Construct] = []
    if pattern is None:
        return found
    tests = type_test_spans(structure.masked)
    for match in pattern.finditer(structure.masked):
        if _DECLARES_RE.search(structure.masked, max(0, match.start() - 16), match.start()):
            continue  # `struct SM90_...` defines the tag; only its uses count
        if any(start <= match.start() < end for start, end in tests):
            continue  # `is_base_of_v<SM90_TMA_LOAD, Op>` compares with the tag, compiling nothing of it
        name = match.group(0).decode()
        line = structure.line_of(match.start())
        col = match.start() - structure.line_starts[line - 1] + 1
        kind = _identifier_kind(kb, name)
        if kind == "library":
            if not kb.library_name(name):
                continue  # a library's helper: a handle, a descriptor, a query
        elif kb.requirement(kind, name) is None:
            continue  # a tag prefix's other names (`MMA_Atom` beside `MMA_64x8x16_F16F16F16_SS`)
        if kind == "arch-tag" and not around.spells(kb.arch_tag_context[name], match.start(), line):
            continue
        found.append(Construct(kind, name, line, col, structure.region_at(line), around.functions.enclosing(line)))
    return found


_CONTEXT_BYTES = 2048  # around a tag outside functions, macro bodies and definitions


class _Around:
    """The code around a site: its function, else the macro whose body holds it, else its
    namespace-scope definition (for an alias, `using Arch = cutlass::arch::Sm100;`, with every
    definition that uses the alias), else the nearby text."""

    def __init__(self, functions: _FunctionSpans, structure: Structure, declarations: Declarations):
        self.functions = functions
        self.structure = structure
        starts = structure.line_starts
        self._definitions = sorted(((starts[d.start[0] - 1] + d.start[1] - 1, starts[d.end[0] - 1] + d.end[1]), d)
                                   for d in declarations.items)
        self._firsts = [span[0] for span, _ in self._definitions]

    def spells(self, pattern: re.Pattern[bytes], offset: int, line: int) -> bool:
        """Whether the code around an arch tag spells `pattern`: one span, or the definitions an
        alias reaches read together in source order."""
        masked = self.structure.masked
        spans = self._spans(offset, line)
        if any(pattern.search(masked, low, high) is not None for low, high in spans):
            return True
        return len(spans) > 1 and pattern.search(b"\n".join(masked[low:high] for low, high in sorted(set(spans)))) is not None

    def _spans(self, offset: int, line: int) -> list[tuple[int, int]]:
        structure = self.structure
        macro = macro_at(structure.defines, line)
        lines = self.functions.span(line) or ((macro.line, max(macro.line, macro.end_line)) if macro else None)
        if lines is not None:
            start, end = lines
            starts = structure.line_starts
            return [(starts[start - 1], starts[end] if end < len(starts) else len(structure.masked))]
        index = bisect_right(self._firsts, offset) - 1
        if index < 0 or not self._definitions[index][0][0] <= offset < self._definitions[index][0][1]:
            return [(max(0, offset - _CONTEXT_BYTES), offset + _CONTEXT_BYTES)]
        span, declaration = self._definitions[index]
        if not _ALIAS_RE.match(structure.masked, span[0]):
            return [span]
        users = [(other, d) for other, d in self._definitions if not set(declaration.names).isdisjoint(d.uses) and other != span]
        # the aliases those definitions spell (`using OperatorClass = cutlass::arch::OpClassTensorOp;`)
        named = {name for _, d in users for name in d.uses}
        aliases = [other for other, d in self._definitions if other != span and not named.isdisjoint(d.names)
                   and _ALIAS_RE.match(structure.masked, other[0])]
        return [span] + [other for other, _ in users] + aliases


_ALIAS_RE = re.compile(rb"\s*(?:using\s+\w+\s*=|typedef\b)")


def _mark_constexpr_branches(constructs: list[Construct], structure: Structure,
                             spans: list[tuple[int, int]]) -> list[Construct]:
    """Constructs inside either branch of an `if constexpr` (`spans`), marked so."""
    if not constructs or not spans:
        return constructs
    marked = []
    for construct in constructs:
        start = _offset(structure, construct)
        if any(first <= start < end for first, end in spans):
            construct = replace(construct, in_constexpr_branch=True)
        marked.append(construct)
    return marked


def _offset(structure: Structure, construct: Construct) -> int:
    return structure.line_starts[construct.line - 1] + construct.col - 1


def _kept(sure: bytes, offset: int) -> bool:
    """Whether `sure_text` kept the code at an offset (it blanks what only some builds compile)."""
    return sure[offset : offset + 1] not in (b" ", b"")


def _mark_uniform_chains(constructs: list[Construct], kb: KnowledgeBase, structure: Structure, sure: bytes) -> list[Construct]:
    """CuTe atoms and CUTLASS arch tags in an `if constexpr` chain that compiles wherever its
    definition does, every alternative of which names one of the same row, cannot compile or only
    reports an error: marked `every_alternative`."""
    tags = [c for c in constructs if c.kind in ("tag", "arch-tag") and c.in_constexpr_branch]
    if not tags:
        return constructs
    offset = {c: _offset(structure, c) for c in tags}
    rows: dict[str, list[int]] = {}
    for c in tags:
        requirement = kb.requirement(c.kind, c.name)
        if requirement is not None:
            rows.setdefault(requirement.id, []).append(offset[c])
    chains = uniform_chains(structure.masked, rows)
    marked = []
    for c in constructs:
        requirement = kb.requirement(c.kind, c.name) if c in offset else None
        if requirement is not None and any(chain.start <= offset[c] < chain.end and _kept(sure, chain.start)
                                           for chain in chains.get(requirement.id, ())):
            c = replace(c, every_alternative=True)
        marked.append(c)
    return marked


def _with_chain_names(declarations: Declarations, structure: Structure, every_branch: bytes,
                      sure: bytes) -> Declarations:
    """Each definition's sure uses, plus what every working alternative of an `if constexpr` chain
    it surely compiles spells (`BatchPrefillDispatched<AttentionKernelTraits<64, ...>>` in one
    branch per head dimension, an unsupported-shape error in the last)."""
    if sure is every_branch or not declarations.items:  # the same text: no `if constexpr` in the file
        return declarations
    starts = structure.line_starts
    added: dict[int, set[str]] = {}
    for start, names in names_every_alternative_spells(every_branch, spelled_names):
        if not _kept(sure, start):
            continue
        line = bisect_right(starts, start)
        place = (line, start - starts[line - 1] + 1)
        for number, item in enumerate(declarations.items):
            if item.start <= place <= item.end:
                added.setdefault(number, set()).update(names)
    if not added:
        return declarations
    items = tuple(replace(item, sure_uses=one_of(item.uses, {*item.sure_uses, *added[number]})) if number in added else item
                  for number, item in enumerate(declarations.items))
    return replace(declarations, items=items)


def _sure_text(structure: Structure) -> bytes:
    """The file with what only some builds or uses compile blanked (`lang/cpp/sure.py`): the lines
    of every preprocessor conditional but the include guard, type tests, type selections and
    member-function bodies; `if constexpr` branches are blanked on top of it (`blank_spans`)."""
    starts, size = structure.line_starts, len(structure.masked)
    conditional = [(starts[r.start_line - 1] if r.start_line - 1 < len(starts) else size,
                    starts[r.end_line] if r.end_line < len(starts) else size)
                   for r in structure.regions if not r.include_guard and r.end_line >= r.start_line]
    return sure_text(structure.masked, conditional + member_body_spans(structure.masked))


def _suppressions(data: bytes, structure: Structure) -> list[Suppression]:
    """`// archlint: ignore[...]` in real comments only: the same text in a string suppresses nothing."""
    found: list[Suppression] = []
    if b"archlint:" not in data:
        return found
    for match in comment_spans(data):
        comment = match.group(0)
        if b"archlint:" not in comment:
            continue
        parsed = parse_suppression_text(comment.decode("utf-8", "replace"))
        if parsed is None:
            continue
        ids, file_level = parsed
        line = structure.line_of(match.start())
        line_start = structure.line_starts[line - 1]
        own_line = not structure.masked[line_start : match.start()].strip()
        covered = _next_code_line(structure, line) if own_line else line
        found.append(Suppression(covered, ids, file_level, line))
    return found


def _next_code_line(structure: Structure, line: int) -> int:
    for candidate in range(line + 1, min(line + 50, len(structure.line_starts)) + 1):
        start = structure.line_starts[candidate - 1]
        end = structure.line_starts[candidate] if candidate < len(structure.line_starts) else len(structure.masked)
        if structure.masked[start:end].strip():
            return candidate
    return line + 1
