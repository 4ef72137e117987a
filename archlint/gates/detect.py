"""Gates: every place Python code decides which GPU architectures a feature is built or run for,
each reduced to the compute capabilities it admits. The names gates are spelled with (arch-flags
calls, decorators, flag keywords, nvcc options) are the index's gate vocabulary, `rules/idioms/`."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from archlint.gates.arch_names import names_arch
from archlint.gates.capability import Evaluator
from archlint.gates.capability_values import Scope, Trace
from archlint.gates.flagrefs import with_constants
from archlint.gates.flagset import flag_set, parse_arch_string
from archlint.gates.branches import appended_to, common_path, contradicts, decided_out, path_at
from archlint.gates.builds import project_builds
from archlint.gates.methods import capability_methods
from archlint.knowledge.arch import known_ccs, newest_toolkit
from archlint.knowledge.idioms import Idioms
from archlint.lang.python.expr import int_values, tight, walk
from archlint.lang.python.unparse import unparse
from archlint.model.findings import Evidence, EvidenceKind, Location
from archlint.model.gates import Gate, ProjectBuild
from archlint.model.python import PyExpr, ResolvedSource, SourceRef, Span, Test, VersionedFlag


def _gate(kind: str, text: str, path: str, span: Span, function: str, admits: Iterable[int], exact: bool,
          **extra: Any) -> Gate:
    """A gate with the fields every kind has; `extra` sets those its kind knows."""
    gate = Gate(
        f"{path}:{span.line}:{span.col}", kind, tight(text), path, span.line, span.col, span.end_line, span.end_col,
        function, tuple(sorted(admits)), exact,
        suffix="?", guards=(), sources=(), defines=(), list_span=None, majors_literal=None, unit="cc",
    )
    return replace(gate, **extra)


def find_gates(index, toolkit: tuple[int, ...] | None = None) -> tuple[Gate, ...]:
    """`toolkit`: the CUDA toolkit the project's flag code is read for (default: the newest known)."""
    context = gate_context(index, toolkit)
    found = [gate for module, facts in sorted(index.loaded()) for gate in module_gates(index, context, module, facts)]
    return finished_gates(found, arch_macros(index), context.builds)


@dataclass(frozen=True)
class GateContext:
    """What every module's gates are read with: the capabilities, the toolkit and how the project's
    flag code builds each capability."""

    ccs: tuple[int, ...]
    toolkit: tuple[int, ...]
    builds: tuple[ProjectBuild, ...]

    @property
    def suffixes(self) -> dict[int, str]:
        return {build.cc: build.suffix for build in self.builds}


def gate_context(index, toolkit: tuple[int, ...] | None = None) -> GateContext:
    ccs, toolkit = known_ccs(), toolkit or newest_toolkit()
    return GateContext(ccs, toolkit, project_builds(index, ccs, toolkit))


def module_gates(index, context: GateContext, module: str, facts) -> list[Gate]:
    """One module's gates. Its evaluators are its own: what a module's gates are depends on what
    its walk reads, never on which modules were walked before (engine.relink walks one again)."""
    ccs = context.ccs
    evaluator = Evaluator(index, ccs)
    # build scripts' own branches, read for the toolkit and an environment left at its defaults
    build_evaluator = Evaluator(index, ccs, context.toolkit, env_defaults=True)
    found: list[Gate] = []
    found.extend(_flag_gates(index, evaluator, module, facts, ccs, context.suffixes))
    found.extend(_decorator_gates(index, evaluator, module, facts, ccs))
    found.extend(_test_gates(index, evaluator, module, facts, ccs))
    found.extend(_method_gates(index, evaluator, module, facts, ccs))
    spec_gates, folded = _flag_list_gates(index, evaluator, module, facts, ccs)
    found.extend(spec_gates)
    found.extend(_build_flag_gates(index, module, facts, ccs, folded, build_evaluator))
    return found


def finished_gates(found: list[Gate], macros: tuple[str, ...], builds: tuple[ProjectBuild, ...]) -> tuple[Gate, ...]:
    """The modules' gates told the project's arch macros and builds, in place order."""
    if macros or builds:
        found = [replace(gate, arch_macros=macros, project_builds=builds) for gate in found]
    return tuple(sorted(found, key=lambda gate: (gate.path, gate.line, gate.col, gate.kind)))


# ---------------------------------------------------------------- JIT context shared by flag gates


@dataclass(frozen=True)
class _Spec:
    """What the JIT spec a gate in some function feeds builds, and with which -D flags."""

    guards: tuple[str, ...]
    sources: tuple[SourceRef, ...]
    resolved_sources: tuple[ResolvedSource, ...]
    defines: tuple[str, ...]
    flags_complete: bool  # every flag list it passes is read (archlint.pyflags)
    maybe_defines: tuple[str, ...] = ()  # -D flags it passes on some paths only
    versioned_defines: tuple[VersionedFlag, ...] = ()  # -D flags the toolkit version decides

    def fields(self) -> dict[str, object]:
        """The Gate fields the spec sets."""
        return {"guards": self.guards, "sources": self.sources, "resolved_sources": self.resolved_sources,
                "defines": self.defines, "flags_complete": self.flags_complete,
                "maybe_defines": self.maybe_defines, "versioned_defines": self.versioned_defines}


def _context(index, module: str, function: str) -> _Spec:
    qualname = index.qualify(module, function)
    owners = [qualname]
    if not index.sources(qualname):
        owners += [caller for caller in index.callers(qualname) if index.sources(caller)]
    resolved = tuple(source for owner in owners for source in index.sources(owner))
    lists = [flags for owner in owners for flags in flag_lists_of(index, module, owner)]
    defines = tuple(dict.fromkeys(define for flags in lists for define in flags.defines))
    guards = tuple(sorted(set(owners))) if function else ()
    return _Spec(guards, tuple(s.ref for s in resolved), resolved, defines,
                 bool(lists) and all(flags.complete for flags in lists),
                 tuple(dict.fromkeys(define for flags in lists for define in flags.maybe_defines)),
                 tuple(dict.fromkeys(define for flags in lists for define in flags.versioned_defines)))


def flag_lists_of(index, module: str, owner: str):
    """The compiler flag lists the function `owner` passes (`module`: where to look if it is unknown),
    the module constants they name read in."""
    owner_module = index.module_of_path.get(index.functions[owner].path, module) if owner in index.functions else module
    local = owner[len(owner_module) + 1 :]
    return [with_constants(index, owner_module, flags) for flags in index.modules[owner_module].flags
            if flags.function == local]


def _summarise_suffix(admits, suffixes: dict[int, str]) -> tuple[str, tuple[tuple[int, str], ...]]:
    by_cc = tuple((cc, suffixes.get(cc, "?")) for cc in admits)
    kinds = {suffix for _, suffix in by_cc}
    return (kinds.pop() if len(kinds) == 1 else "?"), by_cc


# ---------------------------------------------------------------- get_nvcc_flags_list(...)


def _flag_gates(index, evaluator, module, facts, ccs, suffixes):
    for call in facts.calls.having(lambda callee, _: index.idioms.arch_flags_call(callee) is not None):
        flags_call = index.idioms.arch_flags_call(call.callee)
        key = flags_call.majors_keyword
        arg = call.expr.kwarg(key)
        if arg is None and call.expr.positional():
            arg, key = call.expr.positional()[0], "0"
        if arg is None or arg.kind == "none":
            continue
        majors = _int_list(index, evaluator, module, call, arg, key, ccs)
        admits = ccs if majors.values is None else tuple(cc for cc in ccs if cc // 10 in majors.values)
        suffix, by_cc = _summarise_suffix(admits, suffixes)
        yield _gate(
            "nvcc-flags", call.text, facts.path, call.span, _qual(index, module, call.function), admits, majors.exact,
            suffix=suffix, suffix_by_cc=by_cc, list_span=majors.span, list_brackets=majors.brackets,
            majors_literal=majors.values, unit="major", local_function=call.function,
            **_context(index, module, call.function).fields(),
        )


@dataclass(frozen=True)
class _IntList:
    """A list argument read to ints, and where its literal is written, so a fix can widen it."""

    values: tuple[int, ...] | None  # None when the argument could not be read
    exact: bool
    span: tuple[int, int, int, int] | None = None  # the literal, brackets included, in its file
    brackets: tuple[str, str] | None = None  # the literal's own opening and closing brackets


_BRACKETS = {"list": ("[", "]"), "tuple": ("(", ")"), "set": ("{", "}")}


def _brackets(expr: PyExpr | None) -> tuple[str, str] | None:
    """The brackets a literal list, tuple or set is written with; None for anything else."""
    if expr is None or expr.kind != "seq":
        return None
    return _BRACKETS.get(expr.text)


def _int_list(index, evaluator, module, call, arg: PyExpr, key: str, ccs) -> _IntList:
    """A list argument's ints: a literal in the call, or a constant of this module."""
    literal = int_values(arg)
    if literal is not None:
        span = _span4(dict(call.arg_spans).get(key))
        return _IntList(literal, True, span, _brackets(arg))
    value = evaluator.value(arg, _scope(module, call.function, call.span.line), ccs[0], Trace(), 0)
    if isinstance(value, tuple) and value and all(isinstance(v, int) for v in value):
        span, brackets = _constant_literal(index, module, arg)
        return _IntList(value, True, span, brackets)
    return _IntList(None, False)


def _constant_literal(index, module, arg: PyExpr) -> tuple[tuple[int, int, int, int] | None, tuple[str, str] | None]:
    """Span and brackets of the literal bound to the first module constant `arg` names."""
    names = [sub.text for sub in walk(arg) if sub.kind == "name" and "." not in sub.text]
    facts = index.modules[module]
    for constant in facts.constants:
        if constant.name in names and constant.span is not None:
            value = next((assign.value for assign in facts.assigns.having(lambda _targets, function: not function)
                          if assign.value_span == constant.span), None)
            return _span4(constant.span), _brackets(value)
    return None, None


def _span4(span):
    return (span.line, span.col, span.end_line, span.end_col) if span is not None else None


def _scope(module, function, line):
    return Scope(module, function, line)


def _qual(index, module, function):
    return index.qualify(module, function) if function else ""


# ---------------------------------------------------------------- @supported_compute_capability([...])


def _decorator_gates(index, evaluator, module, facts, ccs):
    for fn in facts.functions:
        for decorator in fn.decorators:
            if decorator.name.rpartition(".")[2] not in index.idioms.gate_decorators or decorator.expr.kind != "call":
                continue
            args = decorator.expr.positional()
            if not args:
                continue
            call_like = _CallView(decorator)
            values = _int_list(index, evaluator, module, call_like, args[0], "0", ccs).values
            admits = ccs if values is None else tuple(cc for cc in ccs if cc in set(values))
            qualname = index.qualify(module, fn.qualname)
            yield _gate(
                "decorator", decorator.text.lstrip("@"), facts.path, decorator.span, qualname, admits,
                values is not None, guards=(qualname,), sources=tuple(s.ref for s in index.sources(qualname)),
                resolved_sources=index.sources(qualname), majors_literal=values, unit="cc", suffix="?",
                local_function=fn.qualname,
            )


@dataclass(frozen=True)
class _CallView:
    decorator: object

    @property
    def arg_spans(self):
        return ()

    @property
    def function(self):
        return ""

    @property
    def span(self):
        return self.decorator.span


# ---------------------------------------------------------------- supports_compute_capability(cls, cap)


def _method_gates(index, evaluator, module, facts, ccs):
    for found in capability_methods(index, evaluator, module, facts, ccs):
        fn = found.method
        qualname = index.qualify(module, fn.qualname)
        resolved = tuple(source for guard in found.guards for source in index.sources(guard))
        yield _gate(
            "capability-method", f"{fn.cls}.{fn.name}", facts.path, fn.span, qualname, found.admits, found.exact,
            guards=found.guards, sources=tuple(s.ref for s in resolved), resolved_sources=resolved,
            unit="cc", suffix="?", local_function=fn.qualname,
        )


# ---------------------------------------------------------------- if / assert / while conditions


def _test_gates(index, evaluator, module, facts, ccs):
    for test in facts.tests:
        if not _may_touch(test.expr):
            continue
        table, trace = evaluator.truth_table(test.expr, module, test.function, test.span.line)
        if not trace.arch:
            continue
        guarded = test.rest_calls if test.exits else test.body_calls
        if not test.exits and not picks_path(guarded, index.idioms):
            continue  # a test that raises (or asserts) refuses the device: a gate whatever follows
        passing = (lambda v: v is not True) if test.exits and test.kind == "if" else (lambda v: v is not False)
        admits = tuple(cc for cc in ccs if passing(table[cc]))
        guards = tuple(sorted({g for g in (index.function_of(module, c, test.function) for c in guarded) if g}))
        direct = _direct_capability(test.expr, index.idioms.capability_calls)
        kind = "predicate-call" if trace.predicate and not direct else "capability-compare"
        own = _sources_after(index, module, test) if test.exits else ()
        yield _gate(
            kind, test.text, facts.path, test.span, _qual(index, module, test.function), admits,
            not trace.opaque, guards=guards, unit="cc", suffix="?", local_function=test.function,
            sources=tuple(s.ref for s in own), resolved_sources=own, arch_test=_arch_test(index, module, test, trace),
            guarded_calls=tuple(sorted({c for c in guarded if "." in c and not index.function_of(module, c, test.function)})),
        )


def picks_path(guarded: Iterable[str], idioms: Idioms) -> bool:
    """A capability test whose body calls something besides reporting picks a code path: one that only
    picks a value (a dtype, a flag) or writes a log line does not, and is no gate."""
    return any(call and call not in idioms.inert_calls and call.partition(".")[0] not in idioms.inert_calls
               for call in guarded)


def _arch_test(index, module: str, test: Test, trace: Trace) -> Evidence | None:
    """The comparison behind a condition that names no architecture (`backend == "cake"`, where
    `backend` is chosen from the capability in a helper): the first innermost comparison that read
    the capability, unless it is written in the condition itself or the condition names an arch
    (a capability call, `major`, `is_sm90a_supported`)."""
    if not trace.tests or names_arch(test.expr, index.idioms):
        return None
    first = trace.tests[0]
    if first.module == module and test.span.line <= first.line <= test.span.end_line:
        return None
    facts = index.modules.get(first.module)
    if facts is None:
        return None
    text = unparse(first.expr)
    return Evidence(Location(facts.path, first.line), f"arch test `{text}`", EvidenceKind.CONDITION, name=text)


def _sources_after(index, module, test) -> tuple:
    """Sources the enclosing function names after an early exit (`if cc[0] != 9: raise ...` then
    `load_jit(cuda_files=[...])`): the rest of the function builds them under the test."""
    if not test.function:
        return ()
    return tuple(s for s in index.sources(index.qualify(module, test.function)) if s.ref.line > test.span.end_line)


def _may_touch(expr: PyExpr) -> bool:
    return any(sub.kind in ("call", "name", "attr") for sub in walk(expr))


def _direct_capability(expr: PyExpr, capability_calls: tuple[str, ...]) -> bool:
    return any(sub.kind == "call" and sub.text.endswith(capability_calls) for sub in walk(expr))


# ---------------------------------------------------------------- arch strings in build flags


def _build_flag_gates(index, module, facts, ccs, folded=frozenset(), build_evaluator=None):
    """One gate per target list: an arch string on its own, the arch strings of one list literal
    together (`["-gencode=...sm_90", "-gencode=...sm_100", "-gencode=...sm_103"]` builds all three;
    no element excludes its siblings), or those a function appends to one list (`cc_flag.append(...)`),
    less any appended on a path the build is read not to take. Strings in the body of the project's
    arch-flags call (`get_nvcc_flags_list`) are not gates: that function spells the flags for
    whatever targets its callers ask for, and each call is the gate (`_flag_gates`). A source named
    on a branch that contradicts the list's (the ROCm branch beside the CUDA one) is not its source."""
    lists: dict[tuple, list] = {}
    for item in facts.arch_strings:
        if (item.function, item.value) in folded or index.idioms.arch_flags_call(item.function) is not None:
            continue
        targets = parse_arch_string(item.value, item.context, index.idioms)
        if not targets:
            continue
        receiver = appended_to(item) if item.within is None else ""
        path = path_at(facts, item.function, item.span.line, item.span.col)
        if receiver and build_evaluator is not None and decided_out(build_evaluator, module, item.function,
                                                                    item.span.line, path):
            continue
        key = ((item.function, "+", receiver) if receiver else
               (item.function, item.within) if item.within is not None else (item.function, item.span))
        lists.setdefault(key, []).append((item, targets, path))
    for members in lists.values():
        first = members[0][0]
        targets = tuple(dict.fromkeys(target for _, found, _ in members for target in found))
        admits = tuple(sorted({cc for cc, _ in targets if cc in ccs}))
        suffixes = {suffix for _, suffix in targets}
        span = replace(first.span, end_line=members[-1][0].span.end_line, end_col=members[-1][0].span.end_col)
        fields = _context(index, module, first.function).fields()
        _own_branch(facts, first.function, fields, common_path([path for _, _, path in members]))
        yield _gate(
            "build-flags", ", ".join(item.value for item, _, _ in members), facts.path, span,
            _qual(index, module, first.function), admits,
            all(cc in ccs for cc, _ in targets), suffix=suffixes.pop() if len(suffixes) == 1 else "?",
            suffix_by_cc=tuple((cc, s) for cc, s in targets if cc in ccs), unit="cc", local_function=first.function,
            **fields,
        )


def _own_branch(facts, function: str, fields: dict, path) -> None:
    """Leave out of the spec's fields the sources the list's own function names on a branch its
    path contradicts (those its callers name are on their own paths)."""
    if not path:
        return
    kept = tuple(source for source in fields["resolved_sources"]
                 if source.ref.function != function
                 or not contradicts(path, path_at(facts, function, source.ref.line, source.ref.col)))
    fields["resolved_sources"] = kept
    fields["sources"] = tuple(source.ref for source in kept)


# ---------------------------------------------------------------- a spec's whole flag list


def _flag_list_gates(index, evaluator, module, facts, ccs):
    """One gate per JIT spec whose flag list names its targets directly (FlashInfer's
    `sm100a_nvcc_flags + ["-gencode=...sm_103a"] + ([...sm_107a] if new_toolkit else [])`).

    A target passed only under an undecided condition counts as admitted: the gate does not
    surely exclude it. Targets the knowledge base does not know (sm_107a) cannot be judged and
    do not make the exclusion of known ones approximate. Returns the gates and the
    (function, literal) pairs folded into them, which are not gates of their own.
    """
    if facts.calls.keywords.isdisjoint(index.idioms.device_flag_keywords):
        return [], frozenset()
    gates, folded = [], set()
    for call in facts.calls.passing(index.idioms.device_flag_keywords):
        for keyword, value in call.kwargs().items():
            if keyword not in index.idioms.device_flag_keywords:
                continue
            flags = flag_set(index, evaluator, value, _scope(module, call.function, call.span.line))
            targets = flags.sure | flags.maybe
            if flags.nvcc_call or not targets:
                continue
            folded.update((call.function, text) for text in flags.strings)
            known = sorted((cc, suffix) for cc, suffix in targets if cc in ccs)
            suffixes = {suffix for _, suffix in known}
            gates.append(_gate(
                "build-flags", call.text, facts.path, call.span, _qual(index, module, call.function),
                {cc for cc, _ in known}, not flags.opaque, suffix=suffixes.pop() if len(suffixes) == 1 else "?",
                suffix_by_cc=tuple(known), unit="cc", local_function=call.function,
                **_context(index, module, call.function).fields(),
            ))
    return gates, frozenset(folded)


# ---------------------------------------------------------------- -D flags that carry the target


_DEFINE_HOLE_RE = re.compile(r"^-D([A-Za-z_]\w*)=\{\}$")


def arch_macros(index) -> tuple[str, ...]:
    """Macros the project's flag code defines to the target's `__CUDA_ARCH__` value, such as
    SGLang's `f"-DSGL_CUDA_ARCH={self.major * 100 + self.minor * 10}"`: every build it makes
    gets them, so each target's view of the sources may read them as that target's number."""
    names = set()
    for _, facts in index.loaded():
        for ret in facts.returns:
            value = ret.value
            match = _DEFINE_HOLE_RE.match(value.text) if value is not None and value.kind == "fstr" else None
            if match and len(value.args) == 1 and _is_cuda_arch_formula(value.args[0]):
                names.add(match.group(1))
    return tuple(sorted(names))


def _is_cuda_arch_formula(expr: PyExpr) -> bool:
    samples = ((8, 0), (8, 9), (9, 0), (12, 1))
    return all(_arch_formula(expr, major, minor) == major * 100 + minor * 10 for major, minor in samples)


def _arch_formula(expr: PyExpr, major: int, minor: int):
    """The value of an arithmetic expression over names ending in `major` / `minor`, else None."""
    if expr.kind == "int":
        return expr.value
    if expr.kind == "name":
        last = expr.text.rpartition(".")[2]
        return {"major": major, "minor": minor}.get(last)
    if expr.kind == "binop" and expr.text in ("+", "*") and len(expr.args) == 2:
        left, right = (_arch_formula(arg, major, minor) for arg in expr.args)
        if left is None or right is None:
            return None
        return left + right if expr.text == "+" else left * right
    return None
