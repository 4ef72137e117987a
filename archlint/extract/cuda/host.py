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

from archlint.extract.cuda.host_conditions import any_of, capability_named, host_expr, pure
from archlint.extract.cuda.host_nodes import (
    block_statements,
    call_arguments,
    call_names,
    called_name,
    calls_within,
    function_pointers,
    returned_literal,
)
from archlint.extract.cuda.registrations import op_registrations
from archlint.knowledge.host import HostKnowledge, load_host
from archlint.lang.cpp.constant import text
from archlint.lang.cpp.directives import Structure
from archlint.lang.cpp.lexical import whole_words
from archlint.model.cexpr import Expr, Name, Num, Unary
from archlint.model.cuda import Function
from archlint.model.host import CALL, MAJOR, MINOR, CapabilityHelper, HostArm, HostCheck, HostFacts, OpRegistration

_TEXT_LIMIT = 160
_ATTRIBUTE_READERS = ("cudaDeviceGetAttribute", "cuDeviceGetAttribute")
_TUPLE_MAKERS = ("make_tuple", "make_pair", "tuple", "pair")
_STATEMENTS = frozenset(("compound_statement", "expression_statement", "if_statement", "declaration", "return_statement",
                         "for_statement", "while_statement", "do_statement", "switch_statement", "try_statement"))


def host_marked(masked: bytes, knowledge: HostKnowledge | None = None) -> bool:
    """Whether a file's text spells what a host check, capability helper or registration needs: a
    plain substring test first (most files spell none of the names), the word match where one is."""
    names, marker = _marker(knowledge or load_host())
    return any(name in masked for name in names) and marker.search(masked) is not None


@lru_cache(maxsize=4)
def _marker(knowledge: HostKnowledge) -> tuple[tuple[bytes, ...], re.Pattern[bytes]]:
    names = sorted(knowledge.all_checks | {n for n, _ in knowledge.attributes} | {n for n, _ in knowledge.registrations})
    return tuple(n.encode() for n in names), whole_words(names)


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


def _one_line(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _TEXT_LIMIT else text[: _TEXT_LIMIT - 3] + "..."


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
        name = text(name_node).rpartition("::")[2] if name_node is not None else ""
        kind = self.knowledge.registration(name)
        if kind:
            self.registrations.extend(op_registrations(name, kind, declarator, body, self.knowledge))
            return
        line = node.start_point[0] + 1
        enclosing = self.function_at(declarator.start_point[0] + 1) or self.function_at(line)
        state = _Function(enclosing.qualname if enclosing is not None else name)
        state.aliases = function_pointers(body)
        state.calls = sorted((call.start_byte, state.aliases.get(name, name)) for call in calls_within(body)
                             for name in call_names(call))
        self._block(body, state, [])
        values = state.returns[-1] if state.returns and not state.opaque_return else ()
        if not values and state.admits and not state.opaque_return and state.literal_returns <= {0}:
            # `if (sm >= 100 && sm < 120) return true; ... return false;`: a predicate of the capability
            values = (any_of(state.admits),)
        if values and all(pure(value) for value in values):
            self.helpers.append(CapabilityHelper(name, values, line))

    # ------------------------------------------------------------------ statements

    def _block(self, node: Node, state: _Function, arms: list[HostArm]) -> None:
        """The statements of a block in order; `arms`: the capability branches seen so far in it."""
        for child in block_statements(node):
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
            if target.type == "structured_binding_declarator" and value.type == "call_expression" and called_name(value):
                for index, element in enumerate(n for n in target.named_children if n.type == "identifier"):
                    state.env[text(element)] = Name(f"{CALL}{called_name(value)}#{index}")
                continue
            while target.type in ("reference_declarator", "pointer_declarator") and target.named_children:
                target = target.named_children[-1]
            if target.type == "identifier":
                self._assign(text(target), value, state)

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
            if left is not None and right is not None and left.type == "identifier" and text(inner.children[1]) == "=":
                self._assign(text(left), right, state)
            return
        for call in calls_within(node):
            self._attribute_read(call, state)
        if inner.type != "call_expression":
            return
        macro = called_name(inner)
        if macro not in self.knowledge.all_checks:
            return
        arguments = call_arguments(inner)
        if not arguments:
            return
        cond = self.expr(arguments[0], state.env)
        if cond == Num(0):
            if arms:
                self._ladder(node, macro, state, arms)
            return
        if capability_named(cond):
            self._check(node, macro, cond, text(arguments[0]), state)

    def _attribute_read(self, call: Node, state: _Function) -> None:
        """`cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device)`."""
        if called_name(call) not in _ATTRIBUTE_READERS:
            return
        arguments = call_arguments(call)
        if len(arguments) < 2 or text(arguments[1]).rpartition("::")[2] not in self.attributes:
            return
        target = arguments[0]
        if target.type == "pointer_expression" and target.named_children:
            target = target.named_children[-1]
        if target.type == "identifier":
            which = self.attributes[text(arguments[1]).rpartition("::")[2]]
            state.env[text(target)] = Name(MAJOR if which == "major" else MINOR)

    def _if(self, node: Node, state: _Function, arms: list[HostArm]) -> None:
        condition = node.child_by_field_name("condition")
        consequence = node.child_by_field_name("consequence")
        alternative = node.child_by_field_name("alternative")
        if condition is None or consequence is None:
            return
        inner = condition.named_children[-1] if condition.named_children else condition
        cond = self.expr(inner, state.env)
        if capability_named(cond):
            literal = returned_literal(consequence)
            if literal is not None and alternative is None:
                if literal:
                    state.admits.append(cond)
                else:
                    state.opaque_return = True  # `if (cap) return false;`: not read as a predicate
                return
            refusal = self._refusal(consequence)
            if refusal is not None and alternative is None:
                # `if (!cap) throw ...;`: a check that lets through what the condition does not hold for
                self._check(node, refusal, Unary("!", cond), f"!({text(inner)})", state, end=consequence)
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
        calls = tuple(sorted({state.aliases.get(name, name) for call in calls_within(consequence) for name in call_names(call)}))
        return HostArm(cond, _one_line(text(inner)), line, self.structure.region_at(line), calls)

    def _refusal(self, node: Node) -> str | None:
        """The macro (or 'throw') of a statement that only refuses: `throw ...;`, `MACRO(false, ...);`."""
        statements = [s for s in block_statements(node)] if node.type == "compound_statement" else [node]
        if len(statements) != 1:
            return None
        statement = statements[0]
        if statement.type == "throw_statement":
            return "throw"
        inner = statement.named_children[0] if statement.type == "expression_statement" and statement.named_children else None
        if inner is not None and inner.type == "call_expression" and called_name(inner) in self.knowledge.all_checks:
            arguments = call_arguments(inner)
            if arguments and text(arguments[0]) in ("false", "0"):
                return called_name(inner)
        return None

    def _return(self, node: Node, state: _Function) -> None:
        value = next((c for c in node.named_children if c.type != "comment"), None)
        if value is None:
            return
        if value.type == "initializer_list":
            parts = [c for c in value.named_children if c.type != "comment"]
        elif value.type == "call_expression" and called_name(value) in _TUPLE_MAKERS:
            parts = call_arguments(value)
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
        return HostCheck(kind, macro, _one_line(text(node)), line, node.start_point[1] + 1, node.end_point[0] + 1,
                         node.end_point[1] + 1, self.structure.region_at(line), state.qualname, arms)

    # ------------------------------------------------------------------ expressions

    def expr(self, node: Node, env: dict[str, Expr]) -> Expr:
        return host_expr(node, env, self.fields)

