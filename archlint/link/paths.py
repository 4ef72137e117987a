"""Path roots: folding `Path(__file__).resolve().parents[1] / "data" / "csrc"` into a scan path."""

from __future__ import annotations

import posixpath
import re
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache

from archlint.knowledge.headers import is_external_header
from archlint.knowledge.idioms import Idioms
from archlint.knowledge.languages import is_cuda_name
from archlint.link.generated import output_pattern, renderings
from archlint.link.values import VALUE, Reader
from archlint.model.python import PyExpr, ResolvedSource, SourceRef

_MAX_DEPTH = 12


class _Unresolved(Exception):
    pass


def fold_path(index, module: str, expr: PyExpr, function: str = "", line: int | None = None, depth: int = 0) -> str:
    """The posix path (relative to the scan root) an expression denotes; raises _Unresolved."""
    if depth > _MAX_DEPTH:
        raise _Unresolved("definition chain too deep")
    kind = expr.kind
    if kind == "str":
        return expr.text
    if kind == "name":
        return _fold_name(index, module, expr.text, function, line, depth)
    if kind == "binop" and expr.text in ("/", "+"):
        left = fold_path(index, module, expr.args[0], function, line, depth + 1)
        right = _literal(expr.args[1])
        return posixpath.join(left, right.lstrip("/")) if expr.text == "/" else left + right
    if kind == "call":
        return _fold_call(index, module, expr, function, line, depth)
    if kind == "attr" and expr.text == "parent":
        return _up(fold_path(index, module, expr.args[0], function, line, depth + 1), 1)
    if kind == "subscript" and expr.args[0].kind == "attr" and expr.args[0].text == "parents":
        levels = expr.args[1].value if expr.args[1].kind == "int" else None
        if levels is None:
            raise _Unresolved("parents[] index is not a literal")
        return _up(fold_path(index, module, expr.args[0].args[0], function, line, depth + 1), levels + 1)
    raise _Unresolved(f"cannot fold `{expr.text or expr.kind}`")


def _literal(expr: PyExpr) -> str:
    if expr.kind == "str":
        return expr.text
    raise _Unresolved("path component is not a literal string")


def _up(path: str, levels: int) -> str:
    for _ in range(levels):
        if path in ("", "."):
            raise _Unresolved("path climbs above the scan root")
        path = posixpath.dirname(path)
    return path


def _fold_name(index, module, name, function, line, depth) -> str:
    if name == "__file__":
        facts = index.modules.get(module)
        if facts is None:
            raise _Unresolved("unknown module")
        return facts.path
    found = index.assign_of(module, name, function, line)
    if found is None and "." in name:
        binding = index.resolve(module, name, function)
        if binding is not None and binding.kind == "assign":
            found = index.assign_of(binding.module, binding.name)
    if found is None:
        raise _Unresolved(f"`{name}` has no definition in the scanned code")
    owner, assign = found
    if assign.unpack:
        raise _Unresolved(f"`{name}` comes from tuple unpacking")
    return fold_path(index, owner, assign.value, assign.function, assign.line, depth + 1)


def _fold_call(index, module, expr, function, line, depth) -> str:
    callee, args = expr.text, expr.positional()
    callee_expr = expr.args[0]
    if callee_expr.kind == "attr" and callee_expr.text in index.idioms.identity_methods:
        return fold_path(index, module, callee_expr.args[0], function, line, depth + 1)
    last = callee.rpartition(".")[2]
    if last == "dirname" and args:
        return _up(fold_path(index, module, args[0], function, line, depth + 1), 1)
    if last == "join" and callee.endswith("path.join") and args:
        path = fold_path(index, module, args[0], function, line, depth + 1)
        for arg in args[1:]:
            path = posixpath.join(path, _literal(arg))
        return path
    if last in index.idioms.identity_calls and len(args) == 1:
        return fold_path(index, module, args[0], function, line, depth + 1)
    if callee:
        return _fold_returned(index, module, callee, function, depth)
    raise _Unresolved(f"cannot fold call `{callee or 'expression'}(...)`")


def _fold_returned(index, module: str, callee: str, function: str, depth: int) -> str:
    """The folder a scanned function returns (`csrc = _csrc_dir()`): of what its `return`s fold to,
    the one path the scan holds (the packaged folder, where a fallback names a source checkout)."""
    binding = index.resolve(module, callee, function)
    if binding is None or binding.kind != "function":
        raise _Unresolved(f"cannot fold call `{callee}(...)`")
    facts = index.modules.get(binding.module)
    returns = [r for r in facts.returns if r.function == binding.name and r.value is not None] if facts else []
    folded = set()
    for returned in returns:
        for value in _loop_values(facts, binding.name, returned):
            try:
                folded.add(fold_path(index, binding.module, value, binding.name, returned.line, depth + 1))
            except _Unresolved:
                continue
    scanned = sorted(path for path in folded if _scanned(index.files, path))
    if len(scanned) != 1:
        raise _Unresolved(f"`{callee}(...)` returns {'no' if not scanned else len(scanned)} scanned path(s)")
    return scanned[0]


def _loop_values(facts, function: str, returned) -> list[PyExpr]:
    """What a return gives: its value, or, where it returns the variable of a loop over a literal
    sequence (`for root in (CSRC, Path(__file__).parent / "csrc"): ... return root`), each element."""
    value = returned.value
    loops = [loop for loop in facts.loops if loop.function == function and loop.target == value.text
             and loop.line < returned.line and loop.iterable.kind == "seq"] if value.kind == "name" else []
    return list(loops[-1].iterable.args) if loops else [value]


@lru_cache(maxsize=4)
def _folders(files: frozenset[str]) -> frozenset[str]:
    return frozenset(posixpath.dirname(path)[: end] for path in files
                     for end in [i for i, c in enumerate(posixpath.dirname(path) + "/") if c == "/"])


def _scanned(files: frozenset[str], path: str) -> bool:
    """A scanned file, or a folder holding one."""
    return path in files or path in _folders(files)


def ref_base(index, module: str, ref: SourceRef) -> str:
    """The folder a reference's name hangs off: its root expression folded, or, for a name passed to
    a helper (`_source(csrc_dir, "x.cu")` where the helper returns `csrc_dir / name`), the folder the
    helper joins that parameter to. Raises _Unresolved."""
    if ref.root_expr is not None:
        return fold_path(index, module, ref.root_expr, ref.function, ref.line)
    if ref.helper is None:
        raise _Unresolved("the name hangs off no folder expression")
    binding = index.resolve(module, ref.helper.text, ref.function)
    facts = index.modules.get(binding.module) if binding is not None and binding.kind == "function" else None
    helper = next((f for f in facts.functions if f.qualname == binding.name), None) if facts and binding else None
    if facts is None or helper is None or binding is None:
        raise _Unresolved(f"`{ref.helper.text}(...)` is not a scanned function")
    params = helper.params[1:] if helper.cls and helper.params[:1] in (("self",), ("cls",)) else helper.params
    if not 0 <= ref.helper_arg < len(params):
        raise _Unresolved(f"`{ref.helper.text}(...)` takes the name through a parameter archlint cannot place")
    arguments = ref.helper.positional()
    folded = set()
    for returned in (r for r in facts.returns if r.function == binding.name and r.value is not None):
        root = _joined_root(index, binding.module, binding.name, returned, params[ref.helper_arg])
        if root is None:
            raise _Unresolved(f"`{ref.helper.text}(...)` returns a path archlint cannot read")
        if root.kind == "name" and root.text in params and params.index(root.text) < len(arguments):
            folded.add(fold_path(index, module, arguments[params.index(root.text)], ref.function, ref.line))
        else:
            folded.add(fold_path(index, binding.module, root, binding.name, returned.line))
    if len(folded) != 1:
        raise _Unresolved(f"`{ref.helper.text}(...)` returns {len(folded) or 'no'} different folders")
    return folded.pop()


def _joined_root(index, module: str, function: str, returned, parameter: str) -> PyExpr | None:
    """X where a return gives `X / parameter` (also through one local assignment: `path = X / name`
    then `return path`)."""
    value = returned.value
    if value.kind == "name" and value.text != parameter:
        found = index.assign_of(module, value.text, function, returned.line)
        value = found[1].value if found is not None and not found[1].unpack else value
    if value.kind == "binop" and value.text == "/" and value.args[1].kind == "name" and value.args[1].text == parameter:
        return value.args[0]
    return None


def resolve_ref(index, module: str, ref: SourceRef, by_suffix) -> tuple[str | None, str, str]:
    """(path, how, reason) for one source reference."""
    facts = index.modules.get(module)
    tail = "/".join(part for part in ref.parts)
    if ref.dynamic or "{" in tail:
        return None, "unresolved", "file name is formatted at run time"
    try:
        if ref.root_expr is not None or ref.helper is not None:
            base = ref_base(index, module, ref)
        else:
            base = posixpath.dirname(facts.path) if facts is not None else ""
        candidate = posixpath.normpath(posixpath.join(base, tail))
        if candidate in index.files:
            return candidate, "root", ""
        reason = f"`{candidate}` is not among the scanned files"
    except _Unresolved as error:
        reason = str(error)
    matches = by_suffix(tail)
    if len(matches) == 1:
        return matches[0], "basename", f"root unresolved ({reason}); unique match on `{tail}`"
    if len(matches) > 1:
        return None, "unresolved", f"{reason}; `{tail}` matches {len(matches)} files"
    return None, "unresolved", reason


def resolve_sources(index) -> tuple[dict, dict, tuple]:
    """(function qualname -> its ResolvedSources, generated file name -> the template it is rendered
    from, every TemplateRender)."""
    by_suffix = suffix_finder(index)
    return merged_sources([module_sources(index, module, facts, by_suffix) for module, facts in index.loaded()])


@dataclass(frozen=True)
class ModuleSources:
    """What one module gives `resolve_sources`: each function's sources, the templates each written
    name is rendered from (None: one not found), and its template renders."""

    found: tuple[tuple[str, tuple[ResolvedSource, ...]], ...]
    generated: tuple[tuple[str, frozenset], ...]
    renders: tuple[TemplateRender, ...]


def suffix_finder(index) -> Callable[[str], list[str]]:
    """The scanned files a written name can be (by its last parts, or the names it can format to)."""
    by_name = defaultdict(list)
    for path in sorted(index.files):
        by_name[posixpath.basename(path)].append(path)

    def by_suffix(tail: str) -> list[str]:
        name = posixpath.basename(tail)
        if "{}" in name:  # a name formatted at run time: every scanned file it can spell
            if len(posixpath.splitext(name)[0].replace("{}", "")) < 6:
                return []  # `f"{name}.jinja"` could be any file: no guess
            pattern = re.compile("[^/]*".join(re.escape(part) for part in name.split("{}")))
            return [path for each in sorted(by_name) if pattern.fullmatch(each) for path in by_name[each]]
        return [path for path in by_name.get(name, []) if path == tail or path.endswith("/" + tail)]

    return by_suffix


def merged_sources(parts: Iterable[ModuleSources]) -> tuple[dict, dict, tuple]:
    """resolve_sources' answer from its modules' parts, in the order the modules were read."""
    found: dict[str, list[ResolvedSource]] = defaultdict(list)
    generated: dict[str, set] = defaultdict(set)
    renders: list[TemplateRender] = []
    for part in parts:
        for qualname, sources in part.found:
            found[qualname].extend(sources)
        for output, templates in part.generated:
            generated[output].update(templates)
        renders.extend(part.renders)
    unique = {name: next(iter(paths)) for name, paths in generated.items() if len(paths) == 1 and None not in paths}
    return {key: tuple(value) for key, value in sorted(found.items())}, unique, tuple(dict.fromkeys(renders))


def module_sources(index, module: str, facts, by_suffix: Callable[[str], list[str]]) -> ModuleSources:
    """One module's part of resolve_sources."""
    found: dict[str, list[ResolvedSource]] = defaultdict(list)
    generated: dict[str, set] = defaultdict(set)
    resolved = {}
    for ref in facts.sources:
        resolved[ref] = resolve_ref(index, module, ref, by_suffix)
    outputs, renders = _rendered_outputs(facts, resolved, by_suffix, module, index.idioms)
    for (function, output), templates in outputs.items():
        if "{}" not in output:
            generated[output].update(templates)
    for ref in facts.sources:
        qualname = index.qualify(module, ref.function)
        if ref.each is not None:  # `[csrc / name for name in DEVICE_SOURCES]`
            found[qualname].extend(each_source(index, module, ref, qualname if ref.function else ""))
            continue
        rendered_from = outputs.get((ref.function, output_pattern(written_name(ref))))
        if rendered_from and None not in rendered_from:
            for template in sorted(rendered_from):
                found[qualname].append(ResolvedSource(ref, qualname if ref.function else "", template, "generated",
                                                      f"rendered from {template}"))
            continue
        path, how, reason = resolved[ref]
        if path is None and names_toolkit_header(ref):
            continue  # a header the compiler finds in the toolkit, not a source the build compiles
        spelled = by_suffix(output_pattern(ref.name)) if path is None and ref.template and "{" in ref.name else []
        if spelled:  # `open(CSRC_DIR / f"{prefix}_kernel_inst.jinja")`: each template it can name
            found[qualname].extend(ResolvedSource(ref, qualname if ref.function else "", template, "generated",
                                                  "a template the formatted name spells") for template in spelled)
            continue
        spelled = formatted_matches(index, module, ref) if path is None else []
        if spelled:  # `csrc / f"moe_{dtype}.cu"`: each source of that folder the name can spell
            found[qualname].extend(ResolvedSource(ref, qualname if ref.function else "", source, "root",
                                                  "a source the formatted name spells") for source in spelled)
            continue
        found[qualname].append(ResolvedSource(ref, qualname if ref.function else "", path, how, reason))
    return ModuleSources(tuple((name, tuple(sources)) for name, sources in found.items()),
                         tuple((output, frozenset(templates)) for output, templates in generated.items()), tuple(renders))


_MIN_FORMATTED_STEM = 3  # literal characters a formatted file name keeps (`moe_{}.cu`), not `{}.cu`


def formatted_matches(index, module: str, ref: SourceRef) -> list[str]:
    """Every scanned file a path formatted at run time can name, where the folder it hangs off folds
    to a scan path: a module built per dtype from `csrc / f"moe_{dtype}.cu"` compiles one of them."""
    tail = "/".join(ref.parts)
    stem = posixpath.splitext(posixpath.basename(tail))[0].replace("{}", "")
    if (ref.root_expr is None and ref.helper is None) or "{}" not in tail or "{}" in posixpath.dirname(tail) \
            or len(stem) < _MIN_FORMATTED_STEM:
        return []
    try:
        base = ref_base(index, module, ref)
    except _Unresolved:
        return []
    return _spelled_files(index.files, posixpath.normpath(posixpath.join(base, tail)))


def each_source(index, module: str, ref: SourceRef, function: str) -> list[ResolvedSource]:
    """The files a comprehension over a sequence of names builds (`ref.each`): each element joined to
    the folder its root folds to; an element formatted at run time is every file there it can spell."""
    def unresolved(reason: str) -> list[ResolvedSource]:
        return [ResolvedSource(ref, function, None, "unresolved", reason)]

    assert ref.each is not None and ref.root_expr is not None  # as `each_source_ref` makes them
    try:
        base = fold_path(index, module, ref.root_expr, ref.function, ref.line)
    except _Unresolved as error:
        return unresolved(str(error))
    names = Reader(index).elements(module, ref.function, ref.each)
    if not names.known:
        return unresolved(names.why)
    out: list[ResolvedSource] = []
    why = f"an element of `{ref.each.text or ref.each.kind}`"
    for name in sorted(n for n in names.values if is_cuda_name(n)):  # a list of other files names no source
        spelled = posixpath.normpath(posixpath.join(base, *ref.parts[:-1], name.replace(VALUE, "{}")))
        matches = _spelled_files(index.files, spelled) if "{}" in spelled else [spelled] if spelled in index.files else []
        out += [ResolvedSource(ref, function, path, "root", why) for path in matches]
        if not matches:
            out += unresolved(f"`{spelled}` ({why}) is not among the scanned files")
    return out


def _spelled_files(files: frozenset[str], spelled: str) -> list[str]:
    """The scanned files a name formatted at run time can spell (`{}` for each formatted part), where
    the name keeps enough literal characters to say which."""
    stem = posixpath.splitext(posixpath.basename(spelled))[0].replace("{}", "")
    if "{}" in posixpath.dirname(spelled) or len(stem) < _MIN_FORMATTED_STEM:
        return []
    parts = spelled.split("{}")
    pattern = re.compile("[^/]*".join(re.escape(part) for part in parts))
    return sorted(path for path in files if path.startswith(parts[0]) and pattern.fullmatch(path))


_FSTRING_RE = re.compile(r"""^[rR]?[fF][rR]?(['"])(.*)\1$""", re.S)


def written_name(ref: SourceRef) -> str:
    """The file name a reference spells, formatted parts as written: `f"x_mask_{m}.cu"` -> `x_mask_{m}.cu`."""
    if ref.name:
        return ref.name
    match = _FSTRING_RE.match(ref.text.strip())
    return match.group(2).rpartition("/")[2] if match and ref.dynamic else ""


def names_toolkit_header(ref: SourceRef) -> bool:
    """A string on its own (no folder expression before it) naming a toolkit, std or framework
    header, such as the marker files a probe for the CUDA include folder looks for
    (`"cuda_bf16.h"`, `"crt/host_config.h"`): what it names is outside the scanned trees by design."""
    return (not ref.dynamic and ref.root_expr is None and not ref.root and len(ref.parts) == 1
            and is_external_header(ref.parts[0]))


@dataclass(frozen=True)
class TemplateRender:
    """A template rendered in a spec function, with what the call passes its placeholders."""

    template: str  # root-relative path of the template
    module: str
    function: str  # local qualname in the module
    arguments: tuple  # (name, PyExpr), as in pygen.Rendering


def _rendered_outputs(facts, resolved: dict, by_suffix, module: str,
                      idioms: Idioms) -> tuple[dict[tuple[str, str], set], list]:
    """(function, written name) -> paths of the templates rendered into it (None for one not found),
    and the module's TemplateRenders."""
    template_paths = {(ref.function, ref.name): resolved[ref][0] for ref in facts.sources if ref.template}
    out: dict[tuple[str, str], set] = defaultdict(set)
    renders: list[TemplateRender] = []
    for rendering in renderings(facts, idioms):
        if "{}" in rendering.template:
            # `f"{prefix}_sm100_kernel_inst.jinja"`: any template the name can spell may be rendered
            matches = by_suffix(rendering.template)
            out[(rendering.function, rendering.output)].update(matches or [None])
            renders.extend(TemplateRender(path, module, rendering.function, rendering.arguments) for path in matches)
            continue
        path = template_paths.get((rendering.function, rendering.template))
        if path is None:
            matches = by_suffix(rendering.template)
            path = matches[0] if len(matches) == 1 else None
        out[(rendering.function, rendering.output)].add(path)
        if path is not None:
            renders.append(TemplateRender(path, module, rendering.function, rendering.arguments))
    return out, renders
