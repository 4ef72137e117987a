"""The tree-sitter walk behind `extract.python.facts.extract_python`. Iterative: nesting depth comes
from input. It gathers a module's definitions, calls, imports, assignments, tests and strings as
lists; `facts.walk_module` makes them one `PythonFacts`, and `imports` reads import statements."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import tree_sitter

from archlint.extract.python.imports import from_import, plain_imports
from archlint.extract.python.nodes import (
    exits,
    first_statement,
    has_alternatives,
    is_conditional,
    param_names,
    raises,
    subscript_target,
)
from archlint.extract.python.queries import Interesting, language
from archlint.extract.suppressions import may_hold_notes
from archlint.knowledge.idioms import Idioms
from archlint.knowledge.languages import is_cuda_name
from archlint.lang.python.expr import (
    ExprBuilder,
    dotted,
    fstring_parts,
    is_bytes,
    new_span,
    node_text,
    string_value,
)
from archlint.lang.python.strings import (
    ARCH_STRING_RE,
    is_probe,
    each_source_ref,
    is_text_operand,
    same_node,
    source_ref,
    string_context,
)
from archlint.model import python as pf

_MAX_PATH = 24


@lru_cache(maxsize=1)
def _parser() -> tree_sitter.Parser:
    return tree_sitter.Parser(language())


# A frame of the walk: (node, function, scope, cls, path). `function`: the enclosing function's
# qualname; `scope`: the qualname prefix for definitions; `cls`: the enclosing class; `path`: the
# branch conditions the node runs under. Plain tuples: the walk makes one per node it visits.
_Frame = tuple

@dataclass
class _Out:
    functions: list = field(default_factory=list)
    classes: list = field(default_factory=list)
    calls: list = field(default_factory=list)
    imports: list = field(default_factory=list)
    assigns: list = field(default_factory=list)
    extends: list = field(default_factory=list)  # (function, name, value, conditional, path) of `name += value`
    sources: list = field(default_factory=list)
    tests: list = field(default_factory=list)
    returns: list = field(default_factory=list)
    loops: list = field(default_factory=list)
    arch_strings: list = field(default_factory=list)
    comments: list = field(default_factory=list)
    errors: list = field(default_factory=list)


class Walker:
    """One module's walk. It owns the walk's memos: the expressions built, and the callees found
    under each node (exit tests re-read the statements after them)."""

    def __init__(self, path: str, data: bytes, idioms: Idioms):
        self.path = path
        self.lines = data.split(b"\n")
        self.ascii = data.isascii()
        # Comments are read only for suppressions (and `noqa`s naming archlint ids), which need this text.
        self.notes = may_hold_notes(data)
        self.idioms = idioms
        self.out = _Out()
        self.exprs = ExprBuilder(data)
        self._callees: dict[int, tuple[str, ...]] = {}
        self._wanted: Interesting | None = None

    def col(self, point) -> int:
        row, byte = point
        if self.ascii:
            return byte + 1
        line = self.lines[row] if row < len(self.lines) else b""
        if line.isascii():
            return min(byte, len(line)) + 1
        return len(line[:byte].decode("utf-8", "replace")) + 1

    def span(self, node) -> pf.Span:
        (row, byte), (end_row, end_byte) = node.start_point, node.end_point
        if self.ascii:
            return new_span(row + 1, byte + 1, end_row + 1, end_byte + 1)
        return new_span(row + 1, self.col((row, byte)), end_row + 1, self.col((end_row, end_byte)))

    def run(self, root) -> None:
        self._wanted = wanted = Interesting(root, _INTERESTING_KINDS if self.notes else _FACT_KINDS)
        kinds, below = wanted.kinds, wanted.holds_below
        handlers = _HANDLERS
        errors = self.out.errors
        broken = root.has_error  # else no node is an error, is missing or holds one
        stack: list[_Frame] = [(root, "", "", "", ())]
        pop, push = stack.pop, stack.append
        while stack:
            frame = pop()
            node = frame[0]
            kind = node.type
            if broken and (node.is_error or node.is_missing):
                errors.append(node.start_point[0] + 1)
            handler = handlers.get(kind)
            frames = handler(self, frame) if handler is not None else None
            if frames is None:
                _, function, scope, cls, path = frame
                for child in reversed(node.named_children):
                    if (child.type in kinds or (broken and child.has_error)
                            or (child.named_child_count and below(child))):
                        push((child, function, scope, cls, path))
            else:
                for child_frame in reversed(frames):
                    child = child_frame[0]
                    if (child.type in kinds or (broken and child.has_error)
                            or (child.named_child_count and below(child))):
                        push(child_frame)

    # ---------------------------------------------------------------- definitions

    def function_definition(self, frame: _Frame):
        node = frame[0]
        name = node_text(node.child_by_field_name("name"))
        qualname = f"{frame[2]}.{name}" if frame[2] else name
        decorators: tuple[pf.Decorator, ...] = ()
        if node.parent is not None and node.parent.type == "decorated_definition":
            decorators = tuple(self.decorator(d) for d in node.parent.named_children if d.type == "decorator")
        params = param_names(node.child_by_field_name("parameters"))
        self.out.functions.append(pf.PyFunction(qualname, name, frame[3], self.span(node), params, decorators, self.path))
        body = node.child_by_field_name("body")
        frames = [_child(frame, child) for child in node.named_children if not same_node(child, body)]
        if body is not None:
            frames.append((body, qualname, qualname, "", ()))
        return frames

    def decorator(self, node) -> pf.Decorator:
        expression = node.named_children[0] if node.named_children else node
        expr = self.exprs.build(expression)
        name = expr.text if expr.kind in ("call", "name") else self.exprs.short_text(expression)
        return pf.Decorator(name, self.span(node), expr, self.exprs.short_text(node))

    def class_definition(self, frame: _Frame):
        node = frame[0]
        name = node_text(node.child_by_field_name("name"))
        qualname = f"{frame[2]}.{name}" if frame[2] else name
        supers = node.child_by_field_name("superclasses")
        bases = tuple(filter(None, (dotted(child) for child in supers.named_children))) if supers else ()
        self.out.classes.append(pf.PyClass(qualname, name, self.span(node), bases))
        body = node.child_by_field_name("body")
        frames = [_child(frame, child) for child in node.named_children if not same_node(child, body)]
        if body is not None:
            frames.append((body, frame[1], qualname, qualname, ()))
        return frames

    # ---------------------------------------------------------------- statements

    def block(self, frame: _Frame):
        """Children in order, each with the conditions that hold when it runs."""
        path = frame[4]
        frames = []
        children = frame[0].named_children
        for index, child in enumerate(children):
            frames.append(_child(frame, child, path))
            if child.type in ("if_statement", "assert_statement"):
                cond = child.child_by_field_name("condition") if child.type == "if_statement" else first_statement(child)
                if cond is None:
                    continue
                leaves = child.type == "assert_statement" or (exits(child) and not has_alternatives(child))
                if child.type == "assert_statement" or (raises(child) and not has_alternatives(child)):
                    self.record_exit_test(child, cond, frame, children[index + 1 :])
                if leaves:
                    if len(path) < _MAX_PATH:
                        path = path + ((self.exprs.build(cond), child.type == "assert_statement"),)
        return frames

    def record_exit_test(self, statement, cond, frame: _Frame, rest) -> None:
        kind = "assert" if statement.type == "assert_statement" else "if"
        body = statement.child_by_field_name("consequence")
        self.out.tests.append(
            pf.Test(
                kind,
                self.exprs.build(cond),
                self.span(cond),
                frame[1],
                self.exprs.short_text(cond),
                self.callees(body) if body is not None else (),
                True,
                tuple(sorted(set().union(*(self.callees(node) for node in rest)))) if rest else (),
            )
        )

    def if_statement(self, frame: _Frame):
        node = frame[0]
        cond = node.child_by_field_name("condition")
        body = node.child_by_field_name("consequence")
        cond_expr = self.exprs.build(cond)
        if not (raises(node) and not has_alternatives(node)):
            self.add_test("if", cond, cond_expr, body, frame)
        frames = [_child(frame, cond)]
        frames += [_child(frame, c) for c in node.named_children if c.type == "comment"]
        negations: tuple[tuple[pf.PyExpr, bool], ...] = ((cond_expr, False),)
        frames.append(_child(frame, body, _extend(frame[4], ((cond_expr, True),))))
        for clause in node.children_by_field_name("alternative"):
            if clause.type == "elif_clause":
                elif_cond = clause.child_by_field_name("condition")
                elif_body = clause.child_by_field_name("consequence")
                elif_expr = self.exprs.build(elif_cond)
                self.add_test("elif", elif_cond, elif_expr, elif_body, frame)
                frames.append(_child(frame, elif_cond, _extend(frame[4], negations)))
                frames.append(_child(frame, elif_body, _extend(frame[4], negations + ((elif_expr, True),))))
                negations = negations + ((elif_expr, False),)
            else:
                frames.append(_child(frame, clause, _extend(frame[4], negations)))
        return frames

    def add_test(self, kind, cond, cond_expr, body, frame: _Frame) -> None:
        if cond is None:
            return
        calls = self.callees(body) if body is not None else ()
        self.out.tests.append(
            pf.Test(kind, cond_expr, self.span(cond), frame[1], self.exprs.short_text(cond), calls, False, ())
        )

    def while_statement(self, frame: _Frame):
        node = frame[0]
        cond = node.child_by_field_name("condition")
        self.add_test("while", cond, self.exprs.build(cond), node.child_by_field_name("body"), frame)
        return None

    def for_statement(self, frame: _Frame):
        node = frame[0]
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        if frame[1] and left is not None and left.type == "identifier" and right is not None:
            self.out.loops.append(pf.PyLoop(frame[1], node.start_point[0] + 1, dotted(left) or "", self.exprs.build(right)))
        return None

    def conditional_expression(self, frame: _Frame):
        parts = [child for child in frame[0].named_children if child.type != "comment"]
        if len(parts) == 3:
            self.add_test("ternary", parts[1], self.exprs.build(parts[1]), parts[0], frame)
        return None

    def return_statement(self, frame: _Frame):
        node = frame[0]
        value = node.named_children[0] if node.named_children else None
        expr = self.exprs.build(value) if value is not None and value.type != "comment" else None
        self.out.returns.append(pf.PyReturn(frame[1], node.start_point[0] + 1, expr, frame[4]))
        return None

    def assignment(self, frame: _Frame):
        node = frame[0]
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        if left is None or right is None or right.type in ("assignment", "yield"):
            return None
        if left.type in ("pattern_list", "tuple_pattern", "tuple", "list_pattern", "expression_list"):
            targets = tuple(dotted(child) or "" for child in left.named_children)
            unpack = True
        else:
            targets = (dotted(left) or subscript_target(left),)
            unpack = False
        if any(targets):
            line = node.start_point[0] + 1
            self.out.assigns.append(pf.PyAssign(targets, self.exprs.build(right), line, frame[1], unpack, self.span(right),
                                                frame[4]))
        return None

    def as_pattern(self, frame: _Frame):
        """`with open(path) as f:` binds `f` as an assignment would (what the file handle reads is traced)."""
        node = frame[0]
        alias = node.child_by_field_name("alias")
        value = node.named_children[0] if node.named_children else None
        target = dotted(alias.named_children[0]) if alias is not None and alias.named_children else None
        if node.parent is not None and node.parent.type == "with_item" and value is not None and target:
            self.out.assigns.append(pf.PyAssign((target,), self.exprs.build(value), node.start_point[0] + 1, frame[1],
                                                False, self.span(value), frame[4]))
        return None

    def augmented_assignment(self, frame: _Frame):
        """`flags += ["-DX"]`: kept apart from assignments (the name keeps its earlier value too);
        only flag lists read it."""
        node = frame[0]
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        operator = node.child_by_field_name("operator")
        if left is not None and right is not None and operator is not None and operator.type == "+=":
            name = dotted(left)
            if name:
                self.out.extends.append((frame[1], name, self.exprs.build(right), is_conditional(node),
                                         frame[4]))
        return None

    # ---------------------------------------------------------------- expressions

    def call(self, frame: _Frame):
        node = frame[0]
        expr = self.exprs.build(node)
        spans = self.list_spans(node.child_by_field_name("arguments"))
        self.out.calls.append(pf.PyCall(expr.text, self.span(node), frame[1], expr, self.exprs.short_text(node), spans,
                                        frame[4]))
        return None

    def comprehension(self, frame: _Frame):
        """`[csrc / name for name in DEVICE_SOURCES]`: a source per element of the sequence."""
        node = frame[0]
        ref = each_source_ref(self.exprs, node, frame[1], self.col(node.start_point), self.idioms.join_calls)
        if ref is not None:
            self.out.sources.append(ref)
        return None

    def list_spans(self, arguments) -> tuple:
        spans, index = [], 0
        for child in arguments.named_children if arguments is not None else ():
            if child.type == "keyword_argument":
                value = child.child_by_field_name("value")
                if value is not None and value.type in ("list", "tuple", "set"):
                    spans.append((node_text(child.child_by_field_name("name")), self.span(value)))
            elif child.type != "comment":
                if child.type in ("list", "tuple", "set"):
                    spans.append((str(index), self.span(child)))
                index += 1
        return tuple(spans)

    def string(self, frame: _Frame):
        node = frame[0]
        value = string_value(node)
        dynamic = False
        if value is None and node.type == "string":
            value, _ = fstring_parts(node)
            dynamic = True
        if value is None:
            return None
        if is_cuda_name(value) and not (is_bytes(node) or is_probe(node, self.idioms.join_calls) or is_text_operand(node)):
            self.out.sources.append(source_ref(self.exprs, node, value, dynamic, frame[1],
                                               self.col(node.start_point), self.idioms.join_calls))
        elif not dynamic and ARCH_STRING_RE.search(value):
            parent = node.parent
            within = self.span(parent) if parent is not None and parent.type in ("list", "tuple", "set") else None
            self.out.arch_strings.append(
                pf.ArchString(value, self.span(node), frame[1], string_context(node), within))
        if node.type == "concatenated_string":
            return []
        return [] if not dynamic else None

    def import_statement(self, frame: _Frame):
        self.out.imports.extend(plain_imports(frame[0], frame[1]))
        return []

    def import_from_statement(self, frame: _Frame):
        self.out.imports.append(from_import(frame[0], frame[1]))
        return []

    def callees(self, node) -> tuple[str, ...]:
        """Dotted callees of the calls inside `node` (bounded: gate bodies are read, not whole trees)."""
        found = self._callees.get(node.id)
        if found is None:
            assert self._wanted is not None, "callees are read during the walk"
            found = self._callees[node.id] = self._wanted.calls().callees(node)
        return found

    def comment(self, frame: _Frame):
        node = frame[0]
        row, byte = node.start_point
        before = self.lines[row][:byte] if row < len(self.lines) else b""
        self.out.comments.append((node_text(node), row + 1, bool(before.strip())))
        return []


_HANDLERS = {
    "function_definition": Walker.function_definition,
    "class_definition": Walker.class_definition,
    "block": Walker.block,
    "module": Walker.block,
    "if_statement": Walker.if_statement,
    "while_statement": Walker.while_statement,
    "for_statement": Walker.for_statement,
    "conditional_expression": Walker.conditional_expression,
    "return_statement": Walker.return_statement,
    "assignment": Walker.assignment,
    "as_pattern": Walker.as_pattern,
    "augmented_assignment": Walker.augmented_assignment,
    "call": Walker.call,
    "list_comprehension": Walker.comprehension,
    "generator_expression": Walker.comprehension,
    "set_comprehension": Walker.comprehension,
    "string": Walker.string,
    "concatenated_string": Walker.string,
    "import_statement": Walker.import_statement,
    "import_from_statement": Walker.import_from_statement,
    "comment": Walker.comment,
}
_INTERESTING_KINDS = frozenset(_HANDLERS)
_FACT_KINDS = frozenset(_HANDLERS) - {"comment"}  # when no comment can hold a suppression


def _child(frame: _Frame, node, path=None) -> _Frame:
    return (node, frame[1], frame[2], frame[3], frame[4] if path is None else path)


def _extend(path: tuple, more: tuple) -> tuple:
    return path + more if len(path) < _MAX_PATH else path


def parse(data: bytes) -> tree_sitter.Tree:
    return _parser().parse(data)
