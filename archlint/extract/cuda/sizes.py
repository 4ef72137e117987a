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
from collections.abc import Callable, Iterator
from dataclasses import replace

from tree_sitter import Node

from archlint.extract.cuda.functions import parse
from archlint.lang.cpp.constant import Scope, evaluate, text, type_name
from archlint.lang.cpp.layout import layout
from archlint.lang.cpp.directives import Structure
from archlint.model.cuda import SmemRequest, SmemSize

SIZED_KINDS = ("dynamic-attr", "launch")
_DEFINITIONS = ("declaration", "field_declaration")
_ALIASES = ("alias_declaration", "type_definition")
_CLASSES = ("struct_specifier", "class_specifier")
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

    def file_scope(self) -> Scope:
        """Namespace-scope constants and aliases, and the classes' static constexpr members by their
        qualified name (`Traits::kStages`); one scope per file, its values kept between requests."""
        if self._file is None:
            nodes: dict[str, Node] = {}
            types: dict[str, str] = {}
            structs: dict[str, Node] = {}
            _collect(self.root, (), nodes, types, structs=structs)
            self._file = Scope({}, nodes, types, self.macros, structs=structs, lay_out=self._lay_out)
            self._file.functions.update(_constexpr_functions(self.root))
        return self._file

    def _lay_out(self, struct: Node, scope: Scope) -> tuple[int, int] | None:
        body = struct.child_by_field_name("body")
        return layout(body, struct.type == "union_specifier", scope, self._expression) if body is not None else None

    def _expression(self, spelled: str) -> Node | None:
        """An array dimension or alignment as written, parsed as an expression."""
        if spelled not in self._parsed:
            root = parse(f"int __dim = ({spelled});".encode()).root_node
            found = [n for n in _walk(root) if n.type == "init_declarator"]
            value = found[0].child_by_field_name("value") if found and not root.has_error else None
            self._parsed[spelled] = value
        return self._parsed[spelled]

    def size(self, request: SmemRequest) -> SmemRequest:
        offset = self.structure.line_starts[request.line - 1] + request.col - 1
        expression = _size_argument(self.root, offset, request.kind)
        function = _enclosing(expression, ("function_definition",)) if expression is not None else None
        if expression is None or function is None:
            adaptive = self._expanded_adaptive(offset, request.kind)
            if adaptive or request.nbytes is not None:
                return replace(request, adaptive=adaptive)
            return replace(request, unsized=_MACRO_BODY)
        adaptive = self._adaptive(function, expression)
        if adaptive or request.nbytes is not None:
            return replace(request, adaptive=adaptive)
        request = replace(request, text=_short(text(expression)))  # the argument itself, where a pattern read past it
        instances, why = self._instances(function, expression)
        sizes: list[SmemSize] = []
        missing: dict[str, None] = {}
        for instance, values, types in instances:
            scope = _function_scope(self.file_scope(), function, expression.start_byte, values, types)
            scope.trail.clear()
            scope.missing.clear()
            nbytes = evaluate(expression, scope)
            if nbytes is None or nbytes < 0:
                missing.update(scope.missing)
                continue
            steps = ", ".join(f"{name} = {value:,}" for name, value in scope.trail.items() if name != request.text)
            sizes.append(SmemSize(nbytes, instance, steps))
        if missing and not why:
            why = _missing(list(missing))
        if len(sizes) < len(instances) and not why:
            why = "not every instantiation's size could be computed"
        if len(sizes) == 1 and not sizes[0].instance and not why:
            return replace(request, nbytes=sizes[0].nbytes, text=request.text, sizes=tuple(sizes))
        return replace(request, sizes=tuple(sizes), unsized=why)

    @property
    def limit_reads(self) -> frozenset[str]:
        """The names that read the device's shared memory: the knowledge base's, and the file's
        functions that return a value following one (`get_dummy_smem_size(device_id)`)."""
        if self._reads is None:
            reads = set(self.reads)
            if reads:
                functions = [node for node in _walk(self.root) if node.type == "function_definition"]
                for _ in range(2):
                    for function in functions:
                        following = _following(function, frozenset(reads))
                        if any(leaf.type in _NAME_NODES and _last(leaf) in following
                               for node in _walk(function) if node.type == "return_statement" for leaf in _walk(node)):
                            reads.add(_function_name(function))
            self._reads = frozenset(reads)
        return self._reads

    def _expanded_adaptive(self, offset: int, kind: str) -> str:
        """For a request in a macro body: how its size follows the device's limit at every place the
        file expands the macro ('' where it does not at one of them, or where there is none)."""
        macro = _enclosing(self.root.descendant_for_byte_range(offset, offset + 1), ("preproc_function_def", "preproc_def"))
        name = macro.child_by_field_name("name") if macro is not None else None
        argument = _macro_size_text(self.structure.masked, offset, kind)
        if macro is None or name is None or not argument or not self.reads:
            return ""
        leaves = set(re.findall(r"[A-Za-z_]\w*", argument))
        sites = [node for node in _walk(self.root) if node.type == "identifier" and text(node) == text(name)
                 and not (macro.start_byte <= node.start_byte < macro.end_byte)]
        word = re.escape(text(name).encode())
        spelled = len(re.findall(rb"\b" + word + rb"\b", self.structure.masked)) - len(
            re.findall(rb"#\s*undef\s+" + word + rb"\b", self.structure.masked))
        if len(sites) != spelled - 1:
            return ""  # expanded where the parse does not reach (another macro's body)
        said = ""
        for site in sites:
            function = _enclosing(site, ("function_definition",))
            following = _following(function, self.limit_reads) if function is not None else set()
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
        read = next((node for node in _walk(function) if node.type in _NAME_NODES and _last(node) in reads), None)
        if read is None:
            return ""
        following = _following(function, reads)
        deciding = [expression] + [condition for condition in _conditions(expression, function)]
        for node in deciding:
            if any(leaf.type in _NAME_NODES and _last(leaf) in following for leaf in _walk(node)):
                return f"`{_short(text(node))}` follows `{_last(read)}` (line {read.start_point.row + 1})"
        return ""

    def _instances(self, function: Node, expression: Node) -> tuple[list[tuple[str, dict[str, int], dict[str, str]]], str]:
        """(instance, values, types) for each instantiation of the enclosing function the file spells
        (one unnamed instance for a function that is no template), and why the list is short, if it
        is. A function of internal linkage also gets its parameters' values from its callers."""
        found, why = self._bindings(function, 0)
        params = _template_parameters(function)
        if not found and params is not None:
            name = _function_name(function)
            names = ", ".join(f"`{param}`" for param, _, _ in params)
            return [], why or f"`{name}` is a template ({names}) that the file instantiates nowhere"
        return found, why

    def _bindings(self, function: Node, depth: int) -> tuple[list[tuple[str, dict[str, int], dict[str, str]]], str]:
        params = _template_parameters(function)
        inputs = _parameters(function) if _internal(function) else ()
        if params is None and not inputs:
            return [("", {}, {})], ""
        name = _function_name(function)
        found: dict[tuple, tuple[str, dict[str, int], dict[str, str]]] = {}
        why = ""
        for arguments, call, caller in _call_sites(self.root, name, template=params is not None):
            if len(found) >= _MAX_INSTANCES or depth > _MAX_CALLERS:
                break
            outer, short = ([("", {}, {})], "") if caller is None else self._bindings(caller, depth + 1)
            for _, caller_values, caller_types in outer:
                bound = self._bind(params or [], inputs, arguments, call, caller, (caller_values, caller_types))
                if bound is None:
                    spelled = arguments or call
                    line = spelled.start_point.row + 1 if spelled is not None else 0
                    why = short or f"the template arguments of `{name}` at line {line} are not constants"
                    continue
                key = (tuple(sorted(bound[0].items())), tuple(sorted(bound[1].items())))
                found.setdefault(key, (_label(name, params, inputs, bound), *bound))
        if not found and params is None:
            return [("", {}, {})], ""  # no caller in the file: the parameters stay unknown
        return list(found.values()), why

    def _bind(self, params: list[tuple[str, bool, Node | None]], inputs: tuple[str, ...], arguments: Node | None,
              call: Node | None, caller: Node | None,
              outer: tuple[dict[str, int], dict[str, str]]) -> tuple[dict[str, int], dict[str, str]] | None:
        """The template parameters bound to one argument list, its values evaluated where it is
        spelled (None where a value argument is not a constant), and the function's parameters
        bound to the call's arguments where these are constants."""
        values: dict[str, int] = {}
        types: dict[str, str] = {}
        given = _arguments(arguments) if arguments is not None else []
        scope = self.file_scope()
        if caller is not None:
            at = (arguments or call or caller).start_byte
            scope = _function_scope(scope, caller, at, dict(outer[0]), dict(outer[1]))
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
        for param, node in zip(inputs, _arguments(passed) if passed is not None else []):
            value = evaluate(node, scope)
            if value is not None:
                values[param] = value
        return values, types


_MAX_CALLERS = 4
_MACRO_BODY = "it is asked outside any function the file defines (a macro body, sized where the macro is expanded)"


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


def _internal(function: Node) -> bool:
    """A function no other file can call: `static`, or in an anonymous namespace."""
    if any(c.type == "storage_class_specifier" and text(c) == "static" for c in function.children):
        return True
    node = function.parent
    while node is not None:
        if node.type == "namespace_definition" and node.child_by_field_name("name") is None:
            return True
        node = node.parent
    return False


def _parameters(function: Node) -> tuple[str, ...]:
    declarator = function.child_by_field_name("declarator")
    while declarator is not None and declarator.type != "function_declarator":
        declarator = declarator.child_by_field_name("declarator")
    listing = declarator.child_by_field_name("parameters") if declarator is not None else None
    names = []
    for param in listing.named_children if listing is not None else ():
        declared = param.child_by_field_name("declarator")
        while declared is not None and declared.type not in ("identifier",):
            declared = declared.child_by_field_name("declarator")
        names.append(text(declared) if declared is not None else "")
    return tuple(names)


def _call_sites(root: Node, name: str, template: bool) -> Iterator[tuple[Node | None, Node | None, Node | None]]:
    """(template argument list, call, the function it is in) of each explicit instantiation of
    `name` and each call of it; a template's calls only where they spell its arguments."""
    for node in _walk(root):
        if node.type == "template_function":
            called, arguments = node.child_by_field_name("name"), node.child_by_field_name("arguments")
            if called is None or arguments is None or text(called).split("::")[-1] != name:
                continue
            parent = node.parent
            if parent is not None and parent.type == "qualified_identifier":
                parent = parent.parent
            if parent is None:
                continue
            if parent.type == "function_declarator" and _enclosing(parent, ("template_instantiation",)) is not None:
                yield arguments, None, None
            elif parent.type == "call_expression" and parent.child_by_field_name("function") in (node, node.parent):
                yield arguments, parent, _enclosing(parent, ("function_definition",))
        elif node.type == "call_expression" and not template:
            function = node.child_by_field_name("function")
            if function is not None and function.type in ("identifier", "qualified_identifier") \
                    and text(function).split("::")[-1].strip() == name:
                yield None, node, _enclosing(node, ("function_definition",))


_NAME_NODES = ("identifier", "field_identifier", "qualified_identifier")
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
    return " ".join(parts[2].decode("utf-8", "replace").replace("\\", " ").split()) if len(parts) >= 3 else ""


def _short(spelled: str) -> str:
    spelled = " ".join(spelled.split())
    return spelled if len(spelled) <= 80 else spelled[:77] + "..."


def _last(node: Node) -> str:
    return text(node).split("::")[-1].strip()


def _following(function: Node, reads: frozenset[str]) -> set[str]:
    """The names of the limit reads, and the locals whose value follows one: written through a
    pointer by a call that names one (`cudaDeviceGetAttribute(&v, ..., device)`), or set from an
    expression that names one or another such local."""
    following = set(reads)
    flows: list[tuple[str, Node]] = []
    for node in _walk(function):
        if node.type == "init_declarator":
            name, value = node.child_by_field_name("declarator"), node.child_by_field_name("value")
        elif node.type == "assignment_expression":
            name, value = node.child_by_field_name("left"), node.child_by_field_name("right")
        elif node.type == "call_expression":
            arguments = node.child_by_field_name("arguments")
            for argument in arguments.named_children if arguments is not None else ():
                target = argument.child_by_field_name("argument") if argument.type == "pointer_expression" else None
                if target is not None and target.type == "identifier":
                    flows.append((text(target), node))
            continue
        else:
            continue
        if name is not None and value is not None and name.type == "identifier":
            flows.append((text(name), value))
    changed = True
    while changed:
        changed = False
        for local, value in flows:
            if local not in following and any(leaf.type in _NAME_NODES and _last(leaf) in following for leaf in _walk(value)):
                following.add(local)
                changed = True
    return following


def _conditions(node: Node, function: Node) -> Iterator[Node]:
    """The conditions of the `if`, `switch` and `?:` the node is made under, inside the function."""
    child, parent = node, node.parent
    while parent is not None and parent != function:
        if parent.type in ("if_statement", "switch_statement", "conditional_expression"):
            condition = parent.child_by_field_name("condition")
            if condition is not None and condition != child:
                yield condition
        child, parent = parent, parent.parent


def _walk(node: Node) -> Iterator[Node]:
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(current.children))


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


def _enclosing(node: Node | None, types: tuple[str, ...]) -> Node | None:
    while node is not None and node.type not in types:
        node = node.parent
    return node


def _function_name(function: Node) -> str:
    declarator = function.child_by_field_name("declarator")
    while declarator is not None and declarator.type != "function_declarator":
        declarator = declarator.child_by_field_name("declarator")
    name = declarator.child_by_field_name("declarator") if declarator is not None else None
    return re.sub(r"<.*", "", text(name)).split("::")[-1].strip() if name is not None else ""


def _template_parameters(function: Node) -> list[tuple[str, bool, Node | None]] | None:
    """(name, is a type, default) of each template parameter of a function template; None for a
    function that is no template."""
    parent = function.parent
    if parent is None or parent.type != "template_declaration":
        return None
    listing = parent.child_by_field_name("parameters")
    params: list[tuple[str, bool, Node | None]] = []
    for param in listing.named_children if listing is not None else ():
        is_type = "type_parameter" in param.type
        name = param.child_by_field_name("name") if is_type else param.child_by_field_name("declarator")
        if name is None:
            name = next((c for c in param.named_children if c.type in ("type_identifier", "identifier")), None)
        default = param.child_by_field_name("default_type" if is_type else "default_value")
        params.append((text(name) if name is not None else "", is_type, default))
    return params


def _arguments(listing: Node) -> list[Node]:
    return [a for a in listing.named_children if a.type != "comment"]


def _function_scope(outer: Scope, function: Node, before: int, values: dict[str, int], types: dict[str, str]) -> Scope:
    """The scope of a point in a function: the members of the classes around it, its template
    arguments, and the constants it defines before the point in the blocks that hold it."""
    for owner in reversed(list(_owners(function))):
        nodes: dict[str, Node] = {}
        member_types: dict[str, str] = {}
        body = owner.child_by_field_name("body")
        if body is not None:
            _collect(body, (), nodes, member_types, members_only=True)
        outer = outer.inner({}, nodes, member_types)
    nodes = {}
    local_types: dict[str, str] = {}
    body = function.child_by_field_name("body")
    assigned = _assigned(body) if body is not None else set()
    block = body
    while block is not None:
        inner = None
        for child in block.named_children:
            if child.start_byte >= before:
                break
            if child.end_byte > before:
                inner = child
                break
            if child.type == "declaration":
                for name, value, constant in _declared(child):
                    if constant or name not in assigned:
                        nodes[name] = value
            elif child.type in _ALIASES:
                _alias(child, local_types)
        block = inner
    opaque = frozenset(name for name in _parameters(function) if name and name not in values) | frozenset(
        name for name in assigned if name not in nodes)
    return outer.inner(dict(values), nodes, {**types, **local_types}, opaque)


def _owners(function: Node) -> Iterator[Node]:
    node = function.parent
    while node is not None:
        if node.type in _CLASSES:
            yield node
        node = node.parent


def _assigned(body: Node) -> set[str]:
    """Names the body assigns, increments or takes the address of: no constant, whatever their
    declaration says."""
    found: set[str] = set()
    for node in _walk(body):
        target = None
        if node.type == "assignment_expression":
            target = node.child_by_field_name("left")
        elif node.type == "update_expression":
            target = node.child_by_field_name("argument")
        elif node.type == "pointer_expression" and text(node.child_by_field_name("operator") or node).startswith("&"):
            target = node.child_by_field_name("argument")
        if target is not None and target.type == "identifier":
            found.add(text(target))
    return found


def _declared(declaration: Node) -> Iterator[tuple[str, Node, bool]]:
    """(name, initializer, declared const or constexpr) of an integral declaration."""
    qualifiers = {text(c) for c in declaration.children if c.type == "type_qualifier"}
    constant = bool(qualifiers & {"const", "constexpr"})
    for declarator in declaration.children_by_field_name("declarator"):
        if declarator.type != "init_declarator":
            continue
        name = declarator.child_by_field_name("declarator")
        value = declarator.child_by_field_name("value")
        if name is not None and name.type in ("identifier", "field_identifier") and value is not None:
            if value.type == "initializer_list" and value.named_child_count == 1:
                value = value.named_children[0]
            yield text(name), value, constant


def _alias(node: Node, types: dict[str, str]) -> None:
    """`using bf16_t = __nv_bfloat16;` and `typedef __nv_bfloat16 bf16_t;`"""
    if node.type == "alias_declaration":
        name, kind = node.child_by_field_name("name"), node.child_by_field_name("type")
    else:
        kind = node.child_by_field_name("type")
        name = node.child_by_field_name("declarator")
    if name is not None and kind is not None and name.type == "type_identifier":
        types.setdefault(text(name), type_name(kind))


def _collect(node: Node, scope: tuple[str, ...], nodes: dict[str, Node], types: dict[str, str],
             members_only: bool = False, structs: dict[str, Node] | None = None) -> None:
    """Constants and aliases defined outside functions, by their name and, for a class member, its
    qualified name too (`Traits::kStages`); and the structs and unions outside templates."""
    for child in node.named_children:
        if structs is not None and child.type in (*_CLASSES, "union_specifier") and node.type != "template_declaration":
            owner = child.child_by_field_name("name")
            if owner is not None and child.child_by_field_name("body") is not None:
                _bind_name(structs, scope, text(owner), child)
        if child.type in _DEFINITIONS:
            if child.type == "field_declaration":
                for name, value in _field_constants(child):
                    _bind_name(nodes, scope, name, value)
            else:
                for name, value, constant in _declared(child):
                    if constant:
                        _bind_name(nodes, scope, name, value)
        elif child.type in _ALIASES:
            _alias(child, types)
        elif child.type in _CLASSES and not members_only:
            owner = child.child_by_field_name("name")
            body = child.child_by_field_name("body")
            if owner is not None and body is not None:
                _collect(body, (*scope, text(owner)), nodes, types, structs=structs)
        elif child.type in ("namespace_definition", "linkage_specification") and not members_only:
            body = child.child_by_field_name("body")
            named = child.child_by_field_name("name") if child.type == "namespace_definition" else None
            if body is not None:
                _collect(body, (*scope, text(named)) if named is not None else scope, nodes, types, structs=structs)
        elif child.type in ("template_declaration", "declaration_list", "preproc_if", "preproc_ifdef", "preproc_else"):
            if not members_only or child.type != "template_declaration":
                _collect(child, scope, nodes, types, members_only, structs if child.type != "template_declaration" else None)


def _field_constants(field: Node) -> Iterator[tuple[str, Node]]:
    """`static constexpr int kStages = 4;` in a class body."""
    specifiers = {text(c) for c in field.children if c.type in ("type_qualifier", "storage_class_specifier")}
    if "constexpr" not in specifiers and not {"static", "const"} <= specifiers:
        return
    name = field.child_by_field_name("declarator")
    value = field.child_by_field_name("default_value")
    if name is not None and value is not None and name.type == "field_identifier":
        if value.type == "initializer_list" and value.named_child_count == 1:
            value = value.named_children[0]
        yield text(name), value


def _bind_name(nodes: dict[str, Node], scope: tuple[str, ...], name: str, value: Node) -> None:
    nodes.setdefault(name, value)
    if scope:
        nodes.setdefault("::".join((*scope, name)), value)
        nodes.setdefault(f"{scope[-1]}::{name}", value)


def _missing(names: list[str]) -> str:
    """What a size names that has no value, in words."""
    types = [name for name in names if name.startswith("sizeof(")]
    constants = [name for name in names if not name.startswith("sizeof(")]
    parts = []
    if types:
        parts.append(" and ".join(f"`{name}`" for name in types[:2]) + ", the size of a type whose layout archlint does not compute")
    if constants:
        parts.append(", ".join(f"`{name}`" for name in constants[:3]) + ", which the file defines as no constant")
    return "it needs " + "; and ".join(parts)


def _constexpr_functions(root: Node) -> dict[str, tuple[tuple[str, ...], Node]]:
    """`constexpr int SmemBytes(int stages) { return ...; }` outside templates: each whose body is
    one `return`, by name."""
    found: dict[str, tuple[tuple[str, ...], Node]] = {}
    for node in _walk(root):
        if node.type != "function_definition" or (node.parent is not None and node.parent.type == "template_declaration"):
            continue
        if not any(text(c) == "constexpr" for c in node.children if c.type in ("type_qualifier", "storage_class_specifier")):
            continue
        declarator, body = node.child_by_field_name("declarator"), node.child_by_field_name("body")
        statements = [c for c in body.named_children if c.type != "comment"] if body is not None else []
        if declarator is None or declarator.type != "function_declarator" or len(statements) != 1 \
                or statements[0].type != "return_statement" or not statements[0].named_children:
            continue
        name = declarator.child_by_field_name("declarator")
        parameters = declarator.child_by_field_name("parameters")
        names = []
        for param in parameters.named_children if parameters is not None else ():
            declared = param.child_by_field_name("declarator")
            names.append(text(declared) if declared is not None and declared.type == "identifier" else "")
        if name is not None and all(names):
            found.setdefault(text(name), (tuple(names), statements[0].named_children[0]))
    return found
