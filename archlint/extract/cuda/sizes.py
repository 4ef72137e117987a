"""Sizes of dynamic shared-memory opt-ins that only the C++ around them can compute.

`cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes)` where
`smem_bytes` is a `constexpr` of the enclosing function's locals, its template parameters and the
file's constants (vLLM's dsv3_fused_a_gemm.cu: 16 stages of (16 + kTileN) × 256 bf16 tiles). The
function's template arguments come from the file's explicit instantiations (`template void
f<__nv_bfloat16, 7168, 2112, 8>(...);`) and the calls that spell them (`f<T, kHdIn, 16>(...)`,
their names evaluated where the call is). Each instantiation gets its size, with the named values
it took (lang/cpp/constant.py); a size no instantiation lets the evaluator compute keeps the names
it could not resolve, for the verdict to say what would settle it.

A request whose size the code chooses from the device's own limit (it reads
`cudaDevAttrMaxSharedMemoryPerBlockOptin` or `sharedMemPerBlockOptin`, rules/kb/devices.toml) in
the function that opts in is marked `adaptive`: sized for whatever GPU it runs on.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace

from tree_sitter import Node

from archlint.extract.cuda.functions import parse
from archlint.extract.cuda.cpp_tree import (
    NAME_NODES,
    argument_nodes,
    call_sites,
    collect,
    conditions,
    constexpr_functions,
    enclosing,
    function_name,
    function_scope,
    internal,
    last_name,
    names_following,
    parameters,
    template_parameters,
    walk,
)
from archlint.lang.cpp.constant import Scope, evaluate, text, type_name
from archlint.lang.cpp.layout import layout
from archlint.lang.cpp.directives import Structure
from archlint.model.cuda import SmemRequest, SmemSize

SIZED_KINDS = ("dynamic-attr", "launch")
_MAX_INSTANCES = 32


def size_requests(root: Callable[[], Node], structure: Structure, requests: list[SmemRequest], reads: frozenset[str],
                  macros: Callable[[str], int | None]) -> list[SmemRequest]:
    """`requests` with each unsized host-side request sized where the C++ around it lets it be, and
    each host-side request marked where it follows the device's own limit. `root`: the file's
    parse, made on first need; `reads`: the names by which code reads the device's limit."""
    reading = any(name.encode() in structure.masked for name in reads)
    if not any((r.nbytes is None or reading) and r.kind in SIZED_KINDS for r in requests):
        return requests
    sizer = _Sizer(root(), structure, reads if reading else frozenset(), macros)
    return [sizer.size(request) if (request.nbytes is None or reading) and request.kind in SIZED_KINDS else request
            for request in requests]


class _Sizer:
    def __init__(self, root: Node, structure: Structure, reads: frozenset[str], macros: Callable[[str], int | None]):
        self.root = root
        self.structure = structure
        self.reads = reads
        self.macros = macros
        self._file: Scope | None = None
        self._parsed: dict[str, Node | None] = {}
        self._reads: frozenset[str] | None = None
        self._chosen: dict[str, str] = {}  # instance -> the device condition it is launched under

    def file_scope(self) -> Scope:
        """Namespace-scope constants and aliases, and the classes' static constexpr members by their
        qualified name (`Traits::kStages`); one scope per file, its values kept between requests."""
        if self._file is None:
            nodes: dict[str, Node] = {}
            types: dict[str, str] = {}
            structs: dict[str, Node] = {}
            collect(self.root, (), nodes, types, structs=structs)
            self._file = Scope({}, nodes, types, self.macros, structs=structs, lay_out=self._lay_out)
            self._file.functions.update(constexpr_functions(self.root))
        return self._file

    def _lay_out(self, struct: Node, scope: Scope) -> tuple[int, int] | None:
        body = struct.child_by_field_name("body")
        return layout(body, struct.type == "union_specifier", scope, self._expression) if body is not None else None

    def _expression(self, spelled: str) -> Node | None:
        """An array dimension or alignment as written, parsed as an expression."""
        if spelled not in self._parsed:
            root = parse(f"int __dim = ({spelled});".encode()).root_node
            found = [n for n in walk(root) if n.type == "init_declarator"]
            value = found[0].child_by_field_name("value") if found and not root.has_error else None
            self._parsed[spelled] = value
        return self._parsed[spelled]

    def size(self, request: SmemRequest) -> SmemRequest:
        offset = self.structure.line_starts[request.line - 1] + request.col - 1
        expression = _size_argument(self.root, offset, request.kind)
        function = enclosing(expression, ("function_definition",)) if expression is not None else None
        if expression is None or function is None:
            argument = _macro_size_text(self.structure.masked, offset, request.kind)  # read once, for both
            adaptive = self._expanded_adaptive(offset, argument)
            if adaptive or request.nbytes is not None:
                return replace(request, adaptive=adaptive)
            return self._in_macro(request, offset, argument)
        adaptive = self._adaptive(function, expression)
        if adaptive or request.nbytes is not None:
            return replace(request, adaptive=adaptive)
        request = replace(request, text=_short(text(expression)))  # the argument itself, where a pattern read past it
        return self._in_function(request, function, expression, expression.start_byte)

    def _in_macro(self, request: SmemRequest, offset: int, argument: str) -> SmemRequest:
        """A request a macro body makes: its size is one of the macro's parameters (sized where the
        macro is expanded, judge/macro_sizes.py), or, for a macro defined inside a function, an
        expression of that function's names, sized there."""
        macro = enclosing(self.root.descendant_for_byte_range(offset, offset + 1), ("preproc_function_def",))
        name = macro.child_by_field_name("name") if macro is not None else None
        if macro is None or name is None:
            return replace(request, unsized=_MACRO_BODY)
        params = _macro_params(macro)
        request = replace(request, unsized=_MACRO_BODY, macro=text(name), text=_short(argument) or request.text)
        if argument in params:
            return replace(request, macro_argument=params.index(argument))
        function = enclosing(macro, ("function_definition",))
        expression = self._expression(argument) if argument and function is not None else None
        if function is None or expression is None or set(re.findall(r"[A-Za-z_]\w*", argument)) & set(params):
            return request
        return replace(self._in_function(request, function, expression, macro.start_byte), macro="")

    def _in_function(self, request: SmemRequest, function: Node, expression: Node, at: int) -> SmemRequest:
        """The request sized by `expression` read at byte `at` of `function`, per instantiation."""
        instances, why = self._instances(function, expression)
        if not instances:
            return replace(request, unsized=self._run_time(function, expression, at) or why)
        chosen = [self._chosen[label] for label, _, _ in instances if label in self._chosen]
        if instances and len(chosen) == len(instances):
            return replace(request, adaptive=f"every instantiation is launched under a choice: {chosen[0]}")
        instances = [instance for instance in instances if instance[0] not in self._chosen]
        sizes: list[SmemSize] = []
        missing: dict[str, None] = {}
        runtime: set[str] = set()
        for instance, values, types in instances:
            scope = function_scope(self.file_scope(), function, at, values, types)
            scope.trail.clear()
            scope.missing.clear()
            nbytes = evaluate(expression, scope)
            if nbytes is None or nbytes < 0:
                missing.update(scope.missing)
                runtime |= scope.opaque
                continue
            steps = ", ".join(f"{name} = {value:,}" for name, value in scope.trail.items() if name != request.text)
            sizes.append(SmemSize(nbytes, instance, steps))
        if missing and not why:
            why = _missing(list(missing), runtime)
        if len(sizes) < len(instances) and not why:
            why = "not every instantiation's size could be computed"
        if len(sizes) == 1 and not sizes[0].instance and not why:
            return replace(request, nbytes=sizes[0].nbytes, text=request.text, sizes=tuple(sizes))
        return replace(request, sizes=tuple(sizes), unsized=why)

    def _run_time(self, function: Node, expression: Node, at: int) -> str:
        """For a size no instantiation computes: that it follows run-time values whatever the
        template arguments are, where it does ('' where not)."""
        scope = function_scope(self.file_scope(), function, at, {}, {})
        scope.missing.clear()
        evaluate(expression, scope)
        runtime = [name for name in scope.missing if name in scope.opaque]
        return _missing(runtime, set(runtime)) if runtime else ""

    @property
    def limit_reads(self) -> frozenset[str]:
        """The names that read the device's shared memory: the knowledge base's, and the file's
        functions that return a value following one (`get_dummy_smem_size(device_id)`)."""
        if self._reads is None:
            reads = set(self.reads)
            if reads:
                functions = [node for node in walk(self.root) if node.type == "function_definition"]
                for _ in range(2):
                    for function in functions:
                        following = names_following(function, frozenset(reads))
                        if any(leaf.type in NAME_NODES and last_name(leaf) in following
                               for node in walk(function) if node.type == "return_statement" for leaf in walk(node)):
                            reads.add(function_name(function))
            self._reads = frozenset(reads)
        return self._reads

    def _expanded_adaptive(self, offset: int, argument: str) -> str:
        """For a request in a macro body: how its size follows the device's limit at every place the
        file expands the macro ('' where it does not at one of them, or where there is none)."""
        macro = enclosing(self.root.descendant_for_byte_range(offset, offset + 1), ("preproc_function_def", "preproc_def"))
        name = macro.child_by_field_name("name") if macro is not None else None
        if macro is None or name is None or not argument or not self.reads:
            return ""
        leaves = set(re.findall(r"[A-Za-z_]\w*", argument))
        sites = [node for node in walk(self.root) if node.type == "identifier" and text(node) == text(name)
                 and not (macro.start_byte <= node.start_byte < macro.end_byte)]
        word = re.escape(text(name).encode())
        spelled = len(re.findall(rb"\b" + word + rb"\b", self.structure.masked)) - len(
            re.findall(rb"#\s*undef\s+" + word + rb"\b", self.structure.masked))
        if len(sites) != spelled - 1:
            return ""  # expanded where the parse does not reach (another macro's body)
        said = ""
        for site in sites:
            function = enclosing(site, ("function_definition",))
            following = names_following(function, self.limit_reads) if function is not None else set()
            if function is None or not leaves & following:
                return ""
            said = said or (f"`{_short(argument)}` follows the device's shared memory where `{text(name)}` is expanded "
                            f"(line {site.start_point.row + 1})")
        return said

    def _adaptive(self, function: Node, expression: Node) -> str:
        """How the size, or a condition the request is made under, follows the device's own limit
        read in the function ('' where it does not): a read of the limit that only checks a size
        chosen before it (`TORCH_CHECK(smem <= max_smem)`) chooses nothing."""
        reads = self.limit_reads
        read = next((node for node in walk(function) if node.type in NAME_NODES and last_name(node) in reads), None)
        if read is None:
            return ""
        following = names_following(function, reads)
        deciding = [expression] + [condition for condition in conditions(expression, function)]
        for node in deciding:
            if any(leaf.type in NAME_NODES and last_name(leaf) in following for leaf in walk(node)):
                return f"`{_short(text(node))}` follows `{last_name(read)}` (line {read.start_point.row + 1})"
        return ""

    def _instances(self, function: Node, expression: Node) -> tuple[list[tuple[str, dict[str, int], dict[str, str]]], str]:
        """(instance, values, types) for each instantiation of the enclosing function the file spells
        (one unnamed instance for a function that is no template), and why the list is short, if it
        is. A function of internal linkage also gets its parameters' values from its callers."""
        found, why = self._bindings(function, 0)
        params = template_parameters(function)
        if not found and params is not None:
            name = function_name(function)
            names = ", ".join(f"`{param}`" for param, _, _ in params)
            return [], why or f"`{name}` is a template ({names}) that the file instantiates nowhere"
        return found, why

    def _bindings(self, function: Node, depth: int) -> tuple[list[tuple[str, dict[str, int], dict[str, str]]], str]:
        params = template_parameters(function)
        inputs = parameters(function) if internal(function) else ()
        if params is None and not inputs:
            return [("", {}, {})], ""
        name = function_name(function)
        found: dict[tuple, tuple[str, dict[str, int], dict[str, str]]] = {}
        why = ""
        for arguments, call, caller in call_sites(self.root, name, template=params is not None):
            if len(found) >= _MAX_INSTANCES or depth > _MAX_CALLERS:
                break
            outer, short = ([("", {}, {})], "") if caller is None else self._bindings(caller, depth + 1)
            choice = self._device_choice(call, caller)
            for caller_label, caller_values, caller_types in outer:
                bound = self._bind(params or [], inputs, arguments, call, caller, (caller_values, caller_types))
                if bound is None:
                    spelled = arguments or call
                    line = spelled.start_point.row + 1 if spelled is not None else 0
                    why = short or f"the template arguments of `{name}` at line {line} are not constants"
                    continue
                key = (tuple(sorted(bound[0].items())), tuple(sorted(bound[1].items())))
                label = _label(name, params, inputs, bound)
                found.setdefault(key, (label, *bound))
                chosen = choice or self._chosen.get(caller_label, "")
                if chosen:
                    self._chosen.setdefault(label, chosen)
        if not found and params is None:
            return [("", {}, {})], ""  # no caller in the file: the parameters stay unknown
        return list(found.values()), why

    def _device_choice(self, call: Node | None, caller: Node | None) -> str:
        """How a call is made only under a condition that follows the device's shared memory
        (`if (max_stages >= 16) launch<16>(...); else if (max_stages >= 4) launch<4>(...);`)."""
        if call is None or caller is None or not self.reads:
            return ""
        chosen = names_following(caller, self.limit_reads)
        for condition in conditions(call, caller):
            if any(leaf.type in NAME_NODES and last_name(leaf) in chosen for leaf in walk(condition)):
                return f"`{_short(text(condition))}` (line {condition.start_point.row + 1}) follows the device's shared memory"
        return ""

    def _bind(self, params: list[tuple[str, bool, Node | None]], inputs: tuple[str, ...], arguments: Node | None,
              call: Node | None, caller: Node | None,
              outer: tuple[dict[str, int], dict[str, str]]) -> tuple[dict[str, int], dict[str, str]] | None:
        """The template parameters bound to one argument list, its values evaluated where it is
        spelled (None where a value argument is not a constant), and the function's parameters
        bound to the call's arguments where these are constants."""
        values: dict[str, int] = {}
        types: dict[str, str] = {}
        given = argument_nodes(arguments) if arguments is not None else []
        scope = self.file_scope()
        if caller is not None:
            at = (arguments or call or caller).start_byte
            scope = function_scope(scope, caller, at, dict(outer[0]), dict(outer[1]))
        for index, (param, is_type, default) in enumerate(params):
            node = given[index] if index < len(given) else default
            if node is None:
                return None
            if is_type:
                types[param] = _resolved_type(type_name(node), outer[1])
                continue
            value = evaluate(node, scope)
            if value is None:
                return None
            values[param] = value
        passed = call.child_by_field_name("arguments") if call is not None else None
        for param, node in zip(inputs, argument_nodes(passed) if passed is not None else []):
            value = evaluate(node, scope)
            if value is not None:
                values[param] = value
        return values, types


_MAX_CALLERS = 4
_MACRO_BODY = "it is asked outside any function the file defines (a macro body, sized where the macro is expanded)"


def _macro_params(macro: Node) -> list[str]:
    params = macro.child_by_field_name("parameters")
    return [text(child) for child in params.named_children] if params is not None else []


def _label(name: str, params: list[tuple[str, bool, Node | None]] | None, inputs: tuple[str, ...],
           bound: tuple[dict[str, int], dict[str, str]]) -> str:
    values, types = bound
    spelled = name
    if params is not None:
        spelled += "<" + ", ".join(types.get(p, "?") if is_type else str(values.get(p, "?")) for p, is_type, _ in params) + ">"
    passed = [f"{p} = {values[p]:,}" for p in inputs if p in values]
    return spelled + (f"({', '.join(passed)})" if passed else "")


def _resolved_type(name: str, types: dict[str, str]) -> str:
    return types.get(name, name)


_ATTR_CALL = b"cudaFuncSetAttribute"


def _macro_size_text(masked: bytes, offset: int, kind: str) -> str:
    """The size argument of the request at `offset` as written in a macro body, continuation
    backslashes dropped ('' where it cannot be read)."""
    start = masked.find(b"(", offset) if kind == "dynamic-attr" else masked.find(b"<<<", offset) + 2
    if start < 0:
        return ""
    depth, parts, current = 0, [], bytearray()
    for byte in masked[start + 1 : start + 2000]:
        char = chr(byte)
        if char in "([{" or (kind == "launch" and char == "<"):
            depth += 1
        elif char in ")]}" or (kind == "launch" and char == ">"):
            if depth == 0:
                break
            depth -= 1
        if char == "," and depth == 0:
            parts.append(bytes(current))
            current = bytearray()
        else:
            current.append(byte)
    parts.append(bytes(current))
    # the attribute's value is the call's last argument: a kernel named with template arguments
    # (`&kernel<T, LOADS>`) holds commas no bracket protects
    size = parts[-1] if kind == "dynamic-attr" else parts[2] if len(parts) >= 3 else b""
    return " ".join(size.decode("utf-8", "replace").replace("\\", " ").split()) if len(parts) >= 3 else ""


def _short(spelled: str) -> str:
    spelled = " ".join(spelled.split())
    return spelled if len(spelled) <= 80 else spelled[:77] + "..."


def _size_argument(root: Node, offset: int, kind: str) -> Node | None:
    """The size expression of the request at `offset`: the third argument of the attribute call or
    of the launch configuration."""
    node = root.descendant_for_byte_range(offset, offset + 1)
    while node is not None:
        if kind == "dynamic-attr" and node.type == "call_expression":
            arguments = node.child_by_field_name("arguments")
            named = [a for a in arguments.named_children if a.type != "comment"] if arguments is not None else []
            return named[2] if len(named) >= 3 else None
        if kind == "launch" and node.type == "kernel_call_syntax":
            named = [a for a in node.named_children if a.type != "comment"]
            return named[2] if len(named) >= 3 else None
        if kind == "launch" and node.type == "call_expression":
            syntax = next((c for c in node.children if c.type == "kernel_call_syntax"), None)
            named = [a for a in syntax.named_children if a.type != "comment"] if syntax is not None else []
            return named[2] if len(named) >= 3 else None
        node = node.parent
    return None


def _missing(names: list[str], runtime: set[str]) -> str:
    """What a size names that has no value, in words: run-time values (the function's parameters
    and the locals it assigns) apart from constants and types."""
    if names and all(name in runtime for name in names):
        return "it follows run-time values: " + ", ".join(f"`{name}`" for name in names[:4])
    types = [name for name in names if name.startswith("sizeof(")]
    constants = [name for name in names if not name.startswith("sizeof(")]
    parts = []
    if types:
        parts.append(" and ".join(f"`{name}`" for name in types[:2]) + ", the size of a type whose layout archlint does not compute")
    if constants:
        parts.append(", ".join(f"`{name}`" for name in constants[:3]) + ", which the file defines as no constant")
    return "it needs " + "; and ".join(parts)

