"""Host code → HostFacts: checks that refuse GPUs before dispatch, capability helpers known by their
body, and op registrations; read from the tree-sitter-cuda parse of a file's host functions.

Within a function, locals are followed in order: `bool is_sm90 = dprops->major == 9 && ...;`,
`int32_t version_num = get_sm_version_num();`, `auto [cc_major, cc_minor] = helper(...);`,
`cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);`. A condition is kept
as an `Expr` in capability names (model.host); which calls are capability helpers is decided
scan-wide (gates.host), since a helper is usually defined in another file.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from functools import lru_cache

import tree_sitter
import tree_sitter_cuda
from tree_sitter import Node

from archlint.knowledge.host import HostKnowledge, load_host
from archlint.lang.cpp.directives import Structure
from archlint.model.cexpr import Binary, Expr, Name, Num, Opaque, Ternary, Unary
from archlint.model.cuda import Function
from archlint.model.host import CALL, MAJOR, MINOR, CapabilityHelper, HostArm, HostCheck, HostFacts, OpRegistration

_TEXT_LIMIT = 160
_BINARY = frozenset(("&&", "||", "==", "!=", "<", "<=", ">", ">=", "+", "-", "*", "/", "%", "&", "|", "^", "<<", ">>"))
_PREPROC = frozenset(("preproc_if", "preproc_ifdef", "preproc_else", "preproc_elif", "preproc_elifdef"))
_ATTRIBUTE_READERS = ("cudaDeviceGetAttribute", "cuDeviceGetAttribute")
_TUPLE_MAKERS = ("make_tuple", "make_pair", "tuple", "pair")
_STATEMENTS = frozenset(("compound_statement", "expression_statement", "if_statement", "declaration", "return_statement",
                         "for_statement", "while_statement", "do_statement", "switch_statement", "try_statement"))


def host_marked(masked: bytes, knowledge: HostKnowledge | None = None) -> bool:
    """Whether a file's text spells what a host check, capability helper or registration needs."""
    knowledge = knowledge or load_host()
    return _marker(knowledge).search(masked) is not None


def _marker(knowledge: HostKnowledge) -> re.Pattern[bytes]:
    names = sorted(knowledge.all_checks | {n for n, _ in knowledge.attributes} | {n for n, _ in knowledge.registrations})
    return re.compile(rb"\b(?:" + b"|".join(re.escape(n.encode()) for n in names) + rb")\b")


@lru_cache(maxsize=1)
def _parser() -> tree_sitter.Parser:
    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_cuda.language()))


def extract_host(data: bytes, structure: Structure, function_at: Callable[[int], Function | None]) -> HostFacts:
    """The host facts of a file `host_marked` picked."""
    reader = _Reader(structure, load_host(), function_at)
    for node in _definitions(_parser().parse(data).root_node):
        reader.definition(node)
    return HostFacts(tuple(reader.checks), tuple(reader.helpers), tuple(reader.registrations))


def _definitions(root: Node) -> Iterator[Node]:
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "function_definition":
            yield node
            continue
        stack.extend(reversed(node.children))


def _text(node: Node) -> str:
    return (node.text or b"").decode("utf-8", "replace")


def _one_line(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _TEXT_LIMIT else text[: _TEXT_LIMIT - 3] + "..."


def _callee(node: Node) -> str:
    """The unqualified name a call_expression calls, '' for a member call or an expression."""
    function = node.child_by_field_name("function")
    while function is not None and function.type in ("qualified_identifier", "template_function"):
        function = function.child_by_field_name("name")
    return _text(function) if function is not None and function.type == "identifier" else ""


def _call_names(node: Node) -> list[str]:
    """What a call names: the function, and the classes it is qualified with
    (`LoopUnroller<1, 16>::unroll(...)` names `unroll` and `LoopUnroller`, whose definition leads on)."""
    callee = _callee(node)
    names = [callee] if callee else []
    function = node.child_by_field_name("function")
    while function is not None and function.type == "qualified_identifier":
        scope = function.child_by_field_name("scope")
        if scope is not None and scope.type == "template_type":
            scope = scope.child_by_field_name("name")
        if scope is not None and scope.type == "type_identifier":
            names.append(_text(scope))
        function = function.child_by_field_name("name")
    return names


def _arguments(node: Node) -> list[Node]:
    arguments = node.child_by_field_name("arguments")
    return [child for child in arguments.named_children if child.type != "comment"] if arguments is not None else []


def _leaves(expr: Expr) -> Iterator[str]:
    if isinstance(expr, Name):
        yield expr.name
    elif isinstance(expr, Unary):
        yield from _leaves(expr.operand)
    elif isinstance(expr, Binary):
        yield from _leaves(expr.left)
        yield from _leaves(expr.right)
    elif isinstance(expr, Ternary):
        for part in (expr.cond, expr.then, expr.other):
            yield from _leaves(part)


def capability_named(expr: Expr) -> bool:
    """Whether a condition reads the capability, or calls what may be a capability helper."""
    return any(leaf.startswith("@") for leaf in _leaves(expr))


def _pure(expr: Expr) -> bool:
    """Only capability names, numbers and operators: what a helper may return."""
    if isinstance(expr, Opaque):
        return False
    return all(leaf.startswith("@") for leaf in _leaves(expr)) and capability_named(expr)


@dataclass
class _Function:
    """What the walk of one function gathers."""

    qualname: str
    env: dict[str, Expr] = field(default_factory=dict)
    calls: list[tuple[int, str]] = field(default_factory=list)  # (start byte, name) of every call
    returns: list[tuple[Expr, ...]] = field(default_factory=list)
    aliases: dict[str, str] = field(default_factory=dict)  # `auto launch = &run_mha_bwd;`: launch -> run_mha_bwd
    admits: list[Expr] = field(default_factory=list)  # conditions of `if (cap) return true;`
    literal_returns: set[int] = field(default_factory=set)  # the literals its other returns give
    opaque_return: bool = False


class _Reader:
    def __init__(self, structure: Structure, knowledge: HostKnowledge, function_at: Callable[[int], Function | None]) -> None:
        self.structure = structure
        self.knowledge = knowledge
        self.function_at = function_at
        self.fields = dict(knowledge.fields)
        self.attributes = dict(knowledge.attributes)
        self.checks: list[HostCheck] = []
        self.helpers: list[CapabilityHelper] = []
        self.registrations: list[OpRegistration] = []

    # ------------------------------------------------------------------ definitions

    def definition(self, node: Node) -> None:
        declarator = node.child_by_field_name("declarator")
        body = node.child_by_field_name("body")
        while declarator is not None and declarator.type != "function_declarator":
            declarator = declarator.child_by_field_name("declarator")
        if declarator is None or body is None:
            return
        name_node = declarator.child_by_field_name("declarator")
        name = _text(name_node).rpartition("::")[2] if name_node is not None else ""
        kind = self.knowledge.registration(name)
        if kind:
            self._registrations(name, kind, declarator, body)
            return
        line = node.start_point[0] + 1
        enclosing = self.function_at(declarator.start_point[0] + 1) or self.function_at(line)
        state = _Function(enclosing.qualname if enclosing is not None else name)
        state.aliases = _function_pointers(body)
        state.calls = sorted((call.start_byte, state.aliases.get(name, name)) for call in _calls(body)
                             for name in _call_names(call))
        self._block(body, state, [])
        values = state.returns[-1] if state.returns and not state.opaque_return else ()
        if not values and state.admits and not state.opaque_return and state.literal_returns <= {0}:
            # `if (sm >= 100 && sm < 120) return true; ... return false;`: a predicate of the capability
            values = (_any_of(state.admits),)
        if values and all(_pure(value) for value in values):
            self.helpers.append(CapabilityHelper(name, values, line))

    # ------------------------------------------------------------------ statements

    def _block(self, node: Node, state: _Function, arms: list[HostArm]) -> None:
        """The statements of a block in order; `arms`: the capability branches seen so far in it."""
        for child in _statements(node):
            self._statement(child, state, arms)

    def _statement(self, node: Node, state: _Function, arms: list[HostArm]) -> None:
        kind = node.type
        if kind == "declaration":
            self._declaration(node, state)
        elif kind == "expression_statement":
            self._expression(node, state, arms)
        elif kind == "if_statement":
            self._if(node, state, arms)
        elif kind == "return_statement":
            self._return(node, state)
        elif kind == "throw_statement":
            pass
        elif kind == "compound_statement":
            self._block(node, state, [])
        else:
            for child in node.named_children:  # loops, switches, try blocks: their bodies
                if child.type in ("case_statement", "catch_clause", "switch_body"):
                    self._block(child, state, [])
                elif child.type in _STATEMENTS:
                    self._statement(child, state, [])

    def _declaration(self, node: Node, state: _Function) -> None:
        for declarator in node.children_by_field_name("declarator"):
            if declarator.type != "init_declarator":
                continue
            target = declarator.child_by_field_name("declarator")
            value = declarator.child_by_field_name("value")
            if target is None or value is None:
                continue
            if target.type == "structured_binding_declarator" and value.type == "call_expression" and _callee(value):
                for index, element in enumerate(n for n in target.named_children if n.type == "identifier"):
                    state.env[_text(element)] = Name(f"{CALL}{_callee(value)}#{index}")
                continue
            while target.type in ("reference_declarator", "pointer_declarator") and target.named_children:
                target = target.named_children[-1]
            if target.type == "identifier":
                self._assign(_text(target), value, state)

    def _assign(self, name: str, value: Node, state: _Function) -> None:
        expr = self.expr(value, state.env)
        if capability_named(expr):
            state.env[name] = expr
        else:
            state.env.pop(name, None)

    def _expression(self, node: Node, state: _Function, arms: list[HostArm]) -> None:
        inner = node.named_children[0] if node.named_children else None
        if inner is None:
            return
        if inner.type == "assignment_expression":
            left, right = inner.child_by_field_name("left"), inner.child_by_field_name("right")
            if left is not None and right is not None and left.type == "identifier" and _text(inner.children[1]) == "=":
                self._assign(_text(left), right, state)
            return
        for call in _calls(node):
            self._attribute_read(call, state)
        if inner.type != "call_expression":
            return
        macro = _callee(inner)
        if macro not in self.knowledge.all_checks:
            return
        arguments = _arguments(inner)
        if not arguments:
            return
        cond = self.expr(arguments[0], state.env)
        if cond == Num(0):
            if arms:
                self._ladder(node, macro, state, arms)
            return
        if capability_named(cond):
            self._check(node, macro, cond, _text(arguments[0]), state)

    def _attribute_read(self, call: Node, state: _Function) -> None:
        """`cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device)`."""
        if _callee(call) not in _ATTRIBUTE_READERS:
            return
        arguments = _arguments(call)
        if len(arguments) < 2 or _text(arguments[1]).rpartition("::")[2] not in self.attributes:
            return
        target = arguments[0]
        if target.type == "pointer_expression" and target.named_children:
            target = target.named_children[-1]
        if target.type == "identifier":
            which = self.attributes[_text(arguments[1]).rpartition("::")[2]]
            state.env[_text(target)] = Name(MAJOR if which == "major" else MINOR)

    def _if(self, node: Node, state: _Function, arms: list[HostArm]) -> None:
        condition = node.child_by_field_name("condition")
        consequence = node.child_by_field_name("consequence")
        alternative = node.child_by_field_name("alternative")
        if condition is None or consequence is None:
            return
        inner = condition.named_children[-1] if condition.named_children else condition
        cond = self.expr(inner, state.env)
        if capability_named(cond):
            literal = _returned_literal(consequence)
            if literal is not None and alternative is None:
                if literal:
                    state.admits.append(cond)
                else:
                    state.opaque_return = True  # `if (cap) return false;`: not read as a predicate
                return
            refusal = self._refusal(consequence)
            if refusal is not None and alternative is None:
                # `if (!cap) throw ...;`: a check that lets through what the condition does not hold for
                self._check(node, refusal, Unary("!", cond), f"!({_text(inner)})", state, end=consequence)
                return
            arms.append(self._arm(cond, inner, consequence, state))
            chain = self._else_chain(alternative, state, arms)
            if chain is not None:
                self._ladder(chain[0], chain[1], state, arms)
        self._block(consequence, state, [])
        if alternative is not None:
            self._block(alternative, state, [])

    def _else_chain(self, alternative: Node | None, state: _Function, arms: list[HostArm]) -> tuple[Node, str] | None:
        """Follow `else if (cap) {...}` arms; the final `else` that only refuses, if there is one."""
        while alternative is not None:
            body = next((c for c in alternative.named_children if c.type != "comment"), None)
            if body is None:
                return None
            if body.type == "if_statement":
                condition, consequence = body.child_by_field_name("condition"), body.child_by_field_name("consequence")
                if condition is None or consequence is None:
                    return None
                inner = condition.named_children[-1] if condition.named_children else condition
                cond = self.expr(inner, state.env)
                if not capability_named(cond):
                    return None
                arms.append(self._arm(cond, inner, consequence, state))
                alternative = body.child_by_field_name("alternative")
                continue
            refusal = self._refusal(body)
            return (body, refusal) if refusal is not None else None
        return None

    def _arm(self, cond: Expr, inner: Node, consequence: Node, state: _Function) -> HostArm:
        line = inner.start_point[0] + 1
        calls = tuple(sorted({state.aliases.get(name, name) for call in _calls(consequence) for name in _call_names(call)}))
        return HostArm(cond, _one_line(_text(inner)), line, self.structure.region_at(line), calls)

    def _refusal(self, node: Node) -> str | None:
        """The macro (or 'throw') of a statement that only refuses: `throw ...;`, `MACRO(false, ...);`."""
        statements = [s for s in _statements(node)] if node.type == "compound_statement" else [node]
        if len(statements) != 1:
            return None
        statement = statements[0]
        if statement.type == "throw_statement":
            return "throw"
        inner = statement.named_children[0] if statement.type == "expression_statement" and statement.named_children else None
        if inner is not None and inner.type == "call_expression" and _callee(inner) in self.knowledge.all_checks:
            arguments = _arguments(inner)
            if arguments and _text(arguments[0]) in ("false", "0"):
                return _callee(inner)
        return None

    def _return(self, node: Node, state: _Function) -> None:
        value = next((c for c in node.named_children if c.type != "comment"), None)
        if value is None:
            return
        if value.type == "initializer_list":
            parts = [c for c in value.named_children if c.type != "comment"]
        elif value.type == "call_expression" and _callee(value) in _TUPLE_MAKERS:
            parts = _arguments(value)
        else:
            parts = [value]
        values = tuple(self.expr(part, state.env) for part in parts)
        if any(capability_named(v) for v in values):
            state.returns.append(values)
        elif len(values) == 1 and isinstance(values[0], Num):
            state.literal_returns.add(values[0].value)
        else:
            state.opaque_return = True  # a function returning something else too is no helper

    # ------------------------------------------------------------------ facts

    def _check(self, node: Node, macro: str, cond: Expr, text: str, state: _Function, end: Node | None = None) -> None:
        after = (end or node).end_byte
        calls = tuple(sorted({name for start, name in state.calls if start >= after}))
        line = node.start_point[0] + 1
        arm = HostArm(cond, _one_line(text), line, self.structure.region_at(line), calls)
        self.checks.append(self._host_check("check", macro, node, state, (arm,)))

    def _ladder(self, node: Node, macro: str, state: _Function, arms: list[HostArm]) -> None:
        self.checks.append(self._host_check("ladder", macro, node, state, tuple(arms)))
        arms.clear()

    def _host_check(self, kind: str, macro: str, node: Node, state: _Function, arms: tuple[HostArm, ...]) -> HostCheck:
        line = node.start_point[0] + 1
        return HostCheck(kind, macro, _one_line(_text(node)), line, node.start_point[1] + 1, node.end_point[0] + 1,
                         node.end_point[1] + 1, self.structure.region_at(line), state.qualname, arms)

    def _registrations(self, macro: str, kind: str, declarator: Node, body: Node) -> None:
        parameters = declarator.child_by_field_name("parameters")
        names = [_text(p).strip() for p in parameters.named_children] if parameters is not None else []
        if len(names) < 2:
            return
        namespace, module = names[0], names[-1]
        # `TORCH_EXTENSION_NAME`, or pasted to a suffix: `CONCAT(TORCH_EXTENSION_NAME, _cache_ops)`
        is_macro = any(re.search(rf"\b{re.escape(m)}\b", namespace) for m in self.knowledge.namespace_macros)
        for call in _calls(body):
            function = call.child_by_field_name("function")
            if function is None or function.type != "field_expression":
                continue
            method = function.child_by_field_name("field")
            owner = function.child_by_field_name("argument")
            if method is None or owner is None or _text(owner) != module or _text(method) not in ("def", "impl"):
                continue
            arguments = _arguments(call)
            schema = _string(arguments[0]) if arguments else None
            if schema is None:
                continue
            op = schema.split("(")[0].strip()
            bound = _bound_function(arguments[1:]) if _text(method) == "impl" or len(arguments) > 1 else ""
            if kind == "pybind":
                bound = _bound_function(arguments[1:2])
            fact_kind = "pybind" if kind == "pybind" else _text(method)
            keys = [_text(a) for a in arguments[1:] if a.type == "qualified_identifier" and _text(a).startswith("torch::k")]
            dispatch = keys[0] if keys else names[1] if kind == "impl" and len(names) > 2 else ""
            self.registrations.append(OpRegistration(fact_kind, macro, namespace, op, bound, call.start_point[0] + 1,
                                                     call.start_point[1] + 1, is_macro, dispatch))

    # ------------------------------------------------------------------ expressions

    def expr(self, node: Node, env: dict[str, Expr]) -> Expr:
        kind = node.type
        if kind == "parenthesized_expression":
            inner = [c for c in node.named_children if c.type != "comment"]
            return self.expr(inner[0], env) if len(inner) == 1 else Opaque(_text(node))
        if kind == "binary_expression":
            left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
            operator = node.child_by_field_name("operator")
            op = _text(operator) if operator is not None else ""
            op = {"and": "&&", "or": "||"}.get(op, op)
            if left is None or right is None or op not in _BINARY:
                return Opaque(_text(node))
            return Binary(op, self.expr(left, env), self.expr(right, env))
        if kind == "unary_expression":
            operator, argument = node.child_by_field_name("operator"), node.child_by_field_name("argument")
            op = _text(operator) if operator is not None else ""
            op = "!" if op == "not" else op
            if argument is None or op not in ("!", "-", "+", "~"):
                return Opaque(_text(node))
            return Unary(op, self.expr(argument, env))
        if kind == "conditional_expression":
            parts = [node.child_by_field_name(f) for f in ("condition", "consequence", "alternative")]
            if any(p is None for p in parts):
                return Opaque(_text(node))
            return Ternary(*(self.expr(p, env) for p in parts if p is not None))
        if kind == "number_literal":
            try:
                return Num(int(_text(node).rstrip("uUlL"), 0))
            except ValueError:
                return Opaque(_text(node))
        if kind in ("true", "false"):
            return Num(1 if kind == "true" else 0)
        if kind == "identifier":
            name = _text(node)
            return env.get(name, Name(name))
        if kind == "field_expression":
            member = node.child_by_field_name("field")
            which = self.fields.get(_text(member)) if member is not None else None
            if which is not None:
                return Name(MAJOR if which == "major" else MINOR)
            return Opaque(_text(node))
        if kind in ("cast_expression", "static_cast_expression"):
            value = node.child_by_field_name("value")
            return self.expr(value, env) if value is not None else Opaque(_text(node))
        if kind == "call_expression":
            callee = _callee(node)
            if callee in ("static_cast", "int", "int32_t", "int64_t"):
                arguments = _arguments(node)
                return self.expr(arguments[0], env) if len(arguments) == 1 else Opaque(_text(node))
            return Name(f"{CALL}{callee}") if callee else Opaque(_text(node))
        return Opaque(_text(node))


def _statements(node: Node) -> Iterator[Node]:
    """The statements of a block, those under preprocessor conditionals among them, in order."""
    for child in node.named_children:
        if child.type in _PREPROC:
            yield from _statements(child)
        elif child.type not in ("comment", "preproc_defined", "identifier", "binary_expression", "preproc_call"):
            yield child


def _calls(node: Node) -> Iterator[Node]:
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type == "call_expression":
            yield current
        stack.extend(reversed(current.named_children))


def _any_of(conditions: list[Expr]) -> Expr:
    value = conditions[0]
    for cond in conditions[1:]:
        value = Binary("||", value, cond)
    return value


def _returned_literal(node: Node) -> int | None:
    """1 or 0 for a branch that only returns `true` or `false`; None otherwise."""
    statements = list(_statements(node)) if node.type == "compound_statement" else [node]
    if len(statements) != 1 or statements[0].type != "return_statement":
        return None
    value = [c for c in statements[0].named_children if c.type != "comment"]
    if len(value) == 1 and value[0].type in ("true", "false"):
        return 1 if value[0].type == "true" else 0
    return None


def _function_pointers(body: Node) -> dict[str, str]:
    """Locals bound to a function (`auto launch = &run_mha_bwd;`): calls through them call it."""
    found: dict[str, str] = {}
    stack = [body]
    while stack:
        current = stack.pop()
        if current.type == "init_declarator":
            target, value = current.child_by_field_name("declarator"), current.child_by_field_name("value")
            if target is not None and value is not None and target.type == "identifier" and value.type == "pointer_expression":
                operand = value.child_by_field_name("argument")
                if operand is not None and operand.type in ("identifier", "qualified_identifier") and _text(value).startswith("&"):
                    found[_text(target)] = _text(operand).rpartition("::")[2]
        stack.extend(current.named_children)
    return found


def _string(node: Node) -> str | None:
    if node.type == "string_literal":
        return "".join(_text(c) for c in node.named_children if c.type == "string_content")
    if node.type == "concatenated_string":
        return "".join(_string(c) or "" for c in node.named_children if c.type == "string_literal")
    return None


def _bound_function(arguments: list[Node]) -> str:
    """The function a registration binds: the last plain name among its arguments (`&fn`,
    `TORCH_BOX(&fn)`, `torch::kCUDA, &fn`); '' for none."""
    for argument in reversed(arguments):
        names = [n for n in _identifiers(argument)]
        if argument.type == "qualified_identifier" and _text(argument).startswith("torch::k"):
            continue  # a dispatch key
        if names and argument.type != "string_literal":
            return names[-1]
    return ""


def _identifiers(node: Node) -> Iterator[str]:
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type == "identifier":
            yield _text(current)
        stack.extend(reversed(current.named_children))
