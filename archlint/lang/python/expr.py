"""A small, plain expression tree for the Python expressions archlint reasons about.

Gates, path roots and flag lists are all judged from expressions; keeping them as frozen data
(not tree-sitter nodes) lets facts be cached and lets gates be evaluated after linking.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from archlint.model.python import PyExpr, Span

# Deeper sub-expressions become 'other' leaves: bounded recursion, bounded cache size.
MAX_DEPTH = 40
MAX_TEXT = 160
# `short` of a node longer than this many bytes is read from its first bytes only when they suffice.
_HEAD = 1024

_new = object.__new__
_set = object.__setattr__


def new_expr(kind: str, text: str, value: int | None = None, args: tuple[PyExpr, ...] = ()) -> PyExpr:
    """`PyExpr(kind, text, value, args)`, its slots set here rather than through the frozen
    dataclass's `__init__` (the walk makes hundreds of thousands, and took about a tenth longer
    through `__init__`):
    equal, same repr and same pickle."""
    expr = _new(PyExpr)
    _set(expr, "kind", kind)
    _set(expr, "text", text)
    _set(expr, "value", value)
    _set(expr, "args", args)
    return expr


def new_span(line: int, col: int, end_line: int, end_col: int) -> Span:
    """`Span(line, col, end_line, end_col)`, built as `new_expr` builds a PyExpr."""
    span = _new(Span)
    _set(span, "line", line)
    _set(span, "col", col)
    _set(span, "end_line", end_line)
    _set(span, "end_col", end_col)
    return span


def node_text(node) -> str:
    return node.text.decode("utf-8", "replace")


def short(text: str) -> str:
    one = " ".join(text.split())
    return one if len(one) <= MAX_TEXT else one[: MAX_TEXT - 3] + "..."


def tight(text: str) -> str:
    """`short`'s one-line text of code written over several lines as it would be written on one:
    `f( a=1 )` (a call's lines joined) becomes `f(a=1)`; string literals are left as they are."""
    out: list[str] = []
    quote = ""
    at = 0
    while at < len(text):
        char = text[at]
        if quote:
            if char == "\\":
                out.append(text[at:at + 2])
                at += 2
                continue
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == " " and ((out and out[-1] in "([{") or text[at + 1:at + 2] in (")", "]", "}")):
            at += 1
            continue
        out.append(char)
        at += 1
    return "".join(out)


# An attribute chain whose text is only ASCII names and dots, none of them True, False or None (the
# only other one-word nodes an attribute's object can be; numbers start with a digit), is what
# `dotted` joins from its nodes: its text.
_PLAIN_CHAIN = re.compile(rb"(?!(?:True|False|None)\b)[A-Za-z_]\w*(?:\.(?!(?:True|False|None)\b)[A-Za-z_]\w*)+", re.ASCII)


def dotted(node) -> str | None:
    """'a.b.c' for identifier/attribute chains, else None (iterative: chains can be long)."""
    kind = node.type
    if kind == "identifier":
        return node.text.decode("utf-8", "replace")
    if kind != "attribute":
        return None
    if not node.has_error:
        text = node.text
        if _PLAIN_CHAIN.fullmatch(text):
            return text.decode("ascii")
    parts = []
    while node.type == "attribute":
        attr = node.child_by_field_name("attribute")
        parts.append(node_text(attr))
        node = node.child_by_field_name("object")
    if node.type != "identifier":
        return None
    parts.append(node_text(node))
    return ".".join(reversed(parts))


def string_value(node) -> str | None:
    """The value of a plain string literal (implicit concatenation included), else None."""
    if node.type == "concatenated_string":
        values = [string_value(child) for child in node.named_children]
        known = [value for value in values if value is not None]
        return "".join(known) if len(known) == len(values) else None
    if node.type != "string":
        return None
    pieces: list[str] = []
    for child in node.named_children:
        if child.type == "string_content":
            pieces.append(node_text(child))
        elif child.type == "interpolation":
            return None
        elif child.type == "escape_sequence":
            pieces.append(_unescape(node_text(child)))
    return "".join(pieces)


def is_bytes(node) -> bool:
    """A bytes literal (`b"probe.cu"`, `rb"..."`): data or a label handed to a C API, such as the
    program name `nvrtcCreateProgram` prints in its log, never a path the build reads."""
    if node.type == "concatenated_string":
        return any(is_bytes(child) for child in node.named_children)
    if node.type != "string" or not node.children or node.children[0].type != "string_start":
        return False
    return "b" in node_text(node.children[0]).lower()


def _unescape(text: str) -> str:
    try:
        return text.encode("latin-1").decode("unicode_escape")
    except (UnicodeDecodeError, UnicodeEncodeError):
        return text


def fstring_parts(node) -> tuple[str, tuple]:
    """For an f-string: ('compute_{}{}a', (interpolated nodes...))."""
    text, holes = [], []
    for child in node.named_children:
        if child.type == "string_content":
            text.append(node_text(child))
        elif child.type == "escape_sequence":
            text.append(_unescape(node_text(child)))
        elif child.type == "interpolation":
            text.append("{}")
            expression = child.child_by_field_name("expression")
            if expression is not None:
                holes.append(expression)
    return "".join(text), tuple(holes)


_SEQ = {"list": "list", "tuple": "tuple", "set": "set", "expression_list": "tuple", "pattern_list": "tuple"}
_LEAF = {"true": ("bool", "True"), "false": ("bool", "False"), "none": ("none", "None")}


class ExprBuilder:
    """Builds PyExprs from the nodes of one syntax tree. Nested calls would otherwise rebuild the same
    sub-expressions once per enclosing call, so each is memoised by node; a memoised expression is
    reused only at a depth no deeper than the one it was built at, and only if no MAX_DEPTH cut
    happened below it: then it is exactly what a fresh build would give. One builder per tree walk;
    `data` is the source the tree was parsed from."""

    def __init__(self, data: bytes = b"") -> None:
        self._memo: dict[int, tuple[PyExpr, int]] = {}
        self._cuts = 0
        self._data = data
        # One expression per name and per number as written (frozen, so sharing them is safe): a
        # module repeats its names thousands of times.
        self._names: dict[bytes, PyExpr] = {}
        self._numbers: dict[bytes, PyExpr] = {}

    def short_text(self, node) -> str:
        """`short(node_text(node))` with its comments left out (a call written over several lines
        may carry a suppression on one), reading only the first bytes of a long node when they
        decide it: the whitespace-collapsed text of a prefix is a prefix of the whole one."""
        start, end = node.start_byte, node.end_byte
        if not self._data:
            return short(node.text.decode("utf-8", "replace"))
        if end - start > _HEAD:
            # A cut character decodes to one replacement character at the end: all before it is exact.
            head = " ".join(self._code(node, start, start + _HEAD).split())
            if len(head) > MAX_TEXT + 1:
                return head[: MAX_TEXT - 3] + "..."
        return short(self._code(node, start, end))

    def _code(self, node, start: int, end: int) -> str:
        """The source from `start` to `end` (bytes inside `node`), each comment replaced by a space."""
        data = self._data
        at = data.find(b"#", start, end)
        if at == -1:
            return data[start:end].decode("utf-8", "replace")
        pieces, kept = [], start
        while at != -1:
            inner = node.descendant_for_byte_range(at, at + 1)
            if inner is not None and inner.type == "comment" and inner.start_byte == at:
                pieces.append(data[kept:at])
                kept = min(inner.end_byte, end)
                at = data.find(b"#", kept, end)
            else:  # in a string
                at = data.find(b"#", at + 1, end)
        pieces.append(data[kept:end])
        return b" ".join(pieces).decode("utf-8", "replace")

    def build(self, node, depth: int = 0) -> PyExpr:
        if depth > MAX_DEPTH:
            self._cuts += 1
            return new_expr("other", self.short_text(node))
        kind = node.type
        # Names and numbers are looked up by their text; the rest is memoised by node.
        if kind == "identifier":
            return self._name(node.text)
        if kind == "attribute":
            if not node.has_error:
                text = node.text
                expr = self._names.get(text)
                if expr is not None:  # an attribute's text has a dot: a plain chain's, read before
                    return expr
                if _PLAIN_CHAIN.fullmatch(text):
                    expr = self._names[text] = new_expr("name", text.decode("ascii"))
                    return expr
            name = dotted(node)
            if name is not None:
                return new_expr("name", name)
        elif kind == "integer":
            text = node.text
            expr = self._numbers.get(text)
            if expr is None:
                expr = self._numbers[text] = _integer(text)
            return expr
        key = node.id
        hit = self._memo.get(key)
        if hit is not None and depth <= hit[1]:
            return hit[0]
        before = self._cuts
        expr = self._build(node, kind, depth)
        if self._cuts == before:
            self._memo[key] = (expr, depth)
        return expr

    def _name(self, text: bytes) -> PyExpr:
        expr = self._names.get(text)
        if expr is None:
            expr = self._names[text] = new_expr("name", text.decode("utf-8", "replace"))
        return expr

    def _build(self, node, kind: str, depth: int) -> PyExpr:
        if kind == "call":
            return self._call(node, depth + 1)
        if kind == "attribute":
            return self._attribute(node, depth + 1)
        if kind == "parenthesized_expression" and node.named_child_count == 1:
            return self.build(node.named_children[0], depth + 1)
        if kind in _LEAF:
            return new_expr(*_LEAF[kind])
        if kind == "string" or kind == "concatenated_string":
            value = string_value(node)
            if value is not None:
                return new_expr("str", value)
            if kind == "string":
                text, holes = fstring_parts(node)
                return new_expr("fstr", text, None, tuple(self.build(h, depth + 1) for h in holes))
            return new_expr("other", self.short_text(node))
        builder = _BUILDERS.get(kind)
        if builder is not None:
            return builder(self, node, depth + 1)
        if kind in _SEQ:
            items = tuple(self._item(child, depth + 1) for child in node.named_children if child.type != "comment")
            return new_expr("seq", _SEQ[kind], None, items)
        return new_expr("other", self.short_text(node))

    def _item(self, node, depth: int) -> PyExpr:
        """An element of a list, tuple or set display; `*xs` is a 'splat' whose one arg is `xs`."""
        if node.type == "list_splat" and node.named_child_count == 1:
            return new_expr("splat", self.short_text(node), None, (self.build(node.named_children[0], depth),))
        return self.build(node, depth)

    def _call(self, node, depth: int) -> PyExpr:
        children = node.children
        if len(children) == 2 and not node.has_error:  # function, arguments: no comment between
            function, arguments = children
        else:
            function = node.child_by_field_name("function")
            arguments = node.child_by_field_name("arguments")
        build = self.build
        args = [build(function, depth)]
        shallow = depth <= MAX_DEPTH
        if arguments is not None and arguments.type == "generator_expression":
            args.append(build(arguments, depth))  # `tuple(f"x_{m}.cu" for m in MS)`: its one argument
            arguments = None
        for child in arguments.named_children if arguments is not None else ():
            kind = child.type
            if kind == "identifier" and shallow:
                args.append(self._name(child.text))
            elif kind == "keyword_argument":
                parts = child.children
                if len(parts) == 3 and not child.has_error:  # name, '=', value
                    key, value = parts[0], parts[2]
                else:
                    key = child.child_by_field_name("name")
                    value = child.child_by_field_name("value")
                args.append(new_expr("kw", key.text.decode("utf-8", "replace"), None, (build(value, depth),)))
            elif kind == "list_splat" or kind == "dictionary_splat":
                args.append(new_expr("splat", self.short_text(child)))
            elif kind != "comment":
                args.append(build(child, depth))
        if args[0].kind == "name" and function.type in ("identifier", "attribute"):
            callee = args[0].text  # what dotted(function) gives, without a second walk
        else:
            callee = dotted(function) or ""
        return new_expr("call", callee, None, tuple(args))

    def _attribute(self, node, depth: int) -> PyExpr:
        obj = node.child_by_field_name("object")
        attr = node.child_by_field_name("attribute")
        return new_expr("attr", node_text(attr), None, (self.build(obj, depth),))

    def _subscript(self, node, depth: int) -> PyExpr:
        value = node.child_by_field_name("value")
        index = [child for child in node.children_by_field_name("subscript")]
        index_expr = self.build(index[0], depth) if len(index) == 1 else new_expr("other", "")
        return new_expr("subscript", "", None, (self.build(value, depth), index_expr))

    def _compare(self, node, depth: int) -> PyExpr:
        operands: list[PyExpr] = []
        ops: list[str] = []
        pending: list[str] = []
        for child in node.children:
            if child.is_named:
                if pending:
                    ops.append(" ".join(pending))
                    pending = []
                operands.append(self.build(child, depth))
            else:
                pending.append(node_text(child))
        return new_expr("compare", ",".join(ops), None, tuple(operands))

    def _boolean(self, node, depth: int) -> PyExpr:
        operator = node.child_by_field_name("operator")
        left = self.build(node.child_by_field_name("left"), depth)
        right = self.build(node.child_by_field_name("right"), depth)
        return new_expr(node_text(operator), "", None, (left, right))

    def _not(self, node, depth: int) -> PyExpr:
        return new_expr("not", "", None, (self.build(node.child_by_field_name("argument"), depth),))

    def _binary(self, node, depth: int) -> PyExpr:
        operator = node.child_by_field_name("operator")
        left = self.build(node.child_by_field_name("left"), depth)
        right = self.build(node.child_by_field_name("right"), depth)
        return new_expr("binop", node_text(operator), None, (left, right))

    def _unary(self, node, depth: int) -> PyExpr:
        operator = node.child_by_field_name("operator")
        argument = self.build(node.child_by_field_name("argument"), depth)
        if node_text(operator) == "-" and argument.kind == "int" and argument.value is not None:
            return new_expr("int", "-" + argument.text, -argument.value)
        return new_expr("unary", node_text(operator), None, (argument,))

    def _conditional(self, node, depth: int) -> PyExpr:
        parts = [child for child in node.named_children if child.type != "comment"]
        if len(parts) != 3:
            return new_expr("other", self.short_text(node))
        return new_expr("cond", "", None, tuple(self.build(part, depth) for part in parts))

    def _dictionary(self, node, depth: int) -> PyExpr:
        items = []
        for pair in node.named_children:
            key, value = pair.child_by_field_name("key"), pair.child_by_field_name("value")
            if pair.type != "pair" or key is None or value is None:
                return new_expr("other", self.short_text(node))
            text = string_value(key) if key.type == "string" else None
            if text is None:
                return new_expr("other", self.short_text(node))
            items.append(new_expr("kw", text, None, (self.build(value, depth),)))
        return new_expr("dict", "", None, tuple(items))

    def _comprehension(self, node, depth: int) -> PyExpr:
        body = node.child_by_field_name("body")
        if body is None:
            return new_expr("other", self.short_text(node))
        return new_expr("comp", node.type.split("_")[0], None, (self.build(body, depth),))


def _integer(written: bytes) -> PyExpr:
    text = written.decode("utf-8", "replace").replace("_", "")
    try:
        return new_expr("int", text, int(text, 0))
    except ValueError:
        return new_expr("other", text)


_BUILDERS: dict[str, Callable[[ExprBuilder, Any, int], PyExpr]] = {
    "dictionary": ExprBuilder._dictionary,
    "list_comprehension": ExprBuilder._comprehension,
    "generator_expression": ExprBuilder._comprehension,
    "set_comprehension": ExprBuilder._comprehension,
    "subscript": ExprBuilder._subscript,
    "comparison_operator": ExprBuilder._compare,
    "boolean_operator": ExprBuilder._boolean,
    "not_operator": ExprBuilder._not,
    "binary_operator": ExprBuilder._binary,
    "unary_operator": ExprBuilder._unary,
    "conditional_expression": ExprBuilder._conditional,
}


def int_values(expr: PyExpr | None) -> tuple[int, ...] | None:
    """The ints of a literal list/tuple/set (or `list(...)`/`tuple(...)` of one), else None."""
    if expr is None:
        return None
    if expr.kind == "call" and expr.text in ("list", "tuple", "set", "sorted", "frozenset") and len(expr.args) == 2:
        expr = expr.args[1]
    if expr.kind != "seq" or not expr.args:
        return None
    values = tuple(item.value for item in expr.args if item.kind == "int" and item.value is not None)
    return values if len(values) == len(expr.args) else None


def str_values(expr: PyExpr | None) -> tuple[str, ...] | None:
    if expr is None or expr.kind != "seq":
        return None
    if all(item.kind == "str" for item in expr.args):
        return tuple(item.text for item in expr.args)
    return None


def read_names(expr: PyExpr) -> tuple[str, ...]:
    """The dotted names and callees an expression spells, at any depth, each once (an attribute of
    a value that is not a name is read from the value, never by name)."""
    return tuple(dict.fromkeys(sub.text for sub in walk(expr) if sub.kind in ("name", "call") and sub.text))


def walk(expr: PyExpr):
    """Every sub-expression, pre-order (iterative)."""
    stack = [expr]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(current.args))
