"""Property tests: the condition parser, the three-valued evaluator, the directive scanner, suppressions."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from archlint.extract.suppressions import parse_suppression_text
from archlint.lang.cpp.directives import scan_directives
from archlint.lang.cpp.evaluate import Evaluator
from archlint.lang.cpp.expr import ExprError, parse_condition, parse_strict, render
from archlint.model.cexpr import Binary, Defined, Name, Num, Ternary, Unary

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
KNOWN = {"KA": 7, "KB": 0, "KC": 1000, "KD": 3}
UNKNOWN = ("UA", "UB")
LIMIT = 1 << 64

# ---------------------------------------------------------------- parsing never fails in an unplanned way

TOKENS = st.sampled_from(
    ["(", ")", "&&", "||", "!", "==", "!=", "<", "<=", ">", ">=", "+", "-", "*", "/", "%", "<<", ">>", "&", "|",
     "^", "~", "?", ":", ",", "defined", "defined(", "__CUDA_ARCH__", "900", "0x1F", "0b101", "07", "1'000",
     "10ULL", "'a'", "'\\n'", "X", "F(", "true", "false", " ", "#", "\\", "\"", "1" * 5000]
)
CONDITION_TEXT = st.one_of(st.text(max_size=200), st.lists(TOKENS, max_size=60).map(" ".join))


@FUZZ
@given(CONDITION_TEXT)
def test_parse_condition_never_raises(text):
    parse_condition(text)


@FUZZ
@given(CONDITION_TEXT)
def test_parse_strict_raises_only_expr_error(text):
    try:
        parse_strict(text)
    except ExprError:
        pass


def test_deep_and_long_conditions_are_opaque_not_errors():
    for text in ("(" * 5000 + "1" + ")" * 5000, " || ".join(["A"] * 20000), "!" * 20000 + "1", "1" * 10000):
        parse_condition(text)
        try:
            parse_strict(text)
        except ExprError:
            pass


# ---------------------------------------------------------------- evaluation against a reference

LEAVES = st.one_of(
    st.integers(min_value=0, max_value=2000).map(Num),
    st.sampled_from(sorted(KNOWN) + list(UNKNOWN)).map(Name),
    st.sampled_from(sorted(KNOWN) + list(UNKNOWN)).map(Defined),
)
BINARY_OPS = ("&&", "||", "==", "!=", "<", "<=", ">", ">=", "+", "-", "*", "/", "%", "<<", ">>", "&", "|", "^")


def _extend(children):
    return st.one_of(
        st.builds(Unary, st.sampled_from("!-+~"), children),
        st.builds(Binary, st.sampled_from(BINARY_OPS), children, children),
        st.builds(Ternary, children, children, children),
    )


EXPRS = st.recursive(LEAVES, _extend, max_leaves=24)


def c_div(a: int, b: int) -> int:
    """C's `/`: the quotient truncated toward zero."""
    quotient = abs(a) // abs(b)
    return quotient if (a < 0) == (b < 0) else -quotient


def reference(expr) -> int | None:
    """Python ints with C semantics; unknown (None) propagates by Kleene's tables."""
    if isinstance(expr, Num):
        return expr.value
    if isinstance(expr, Name):
        return KNOWN.get(expr.name)
    if isinstance(expr, Defined):
        return 1 if expr.name in KNOWN else None
    if isinstance(expr, Unary):
        value = reference(expr.operand)
        if value is None:
            return None
        return {"!": int(value == 0), "-": -value, "+": value, "~": ~value}[expr.op]
    if isinstance(expr, Ternary):
        cond = reference(expr.cond)
        if cond is None:
            then, other = reference(expr.then), reference(expr.other)
            return then if then == other else None
        return reference(expr.then if cond else expr.other)
    return _reference_binary(expr)


def _truth(value: int | None) -> int | None:
    return None if value is None else int(value != 0)


def _reference_binary(expr: Binary) -> int | None:
    if expr.op in ("&&", "||"):
        left, right = _truth(reference(expr.left)), _truth(reference(expr.right))
        absorbing = 0 if expr.op == "&&" else 1
        if absorbing in (left, right):
            return absorbing
        return None if None in (left, right) else 1 - absorbing
    a, b = reference(expr.left), reference(expr.right)
    if a is None or b is None:
        return None
    if expr.op in ("/", "%"):
        if b == 0:
            return None
        return c_div(a, b) if expr.op == "/" else a - c_div(a, b) * b
    if expr.op in ("<<", ">>"):
        if not 0 <= b < 64:
            return None
        return a << b if expr.op == "<<" else a >> b
    result = {
        "==": int(a == b), "!=": int(a != b), "<": int(a < b), "<=": int(a <= b), ">": int(a > b),
        ">=": int(a >= b), "+": a + b, "-": a - b, "*": a * b, "&": a & b, "|": a | b, "^": a ^ b,
    }[expr.op]
    return result if -LIMIT < result < LIMIT else None


def evaluator() -> Evaluator:
    return Evaluator(target=None, defines=dict(KNOWN))


@FUZZ
@given(EXPRS)
def test_evaluator_agrees_with_the_reference(expr):
    assert evaluator().value(expr) == reference(expr)


@FUZZ
@given(EXPRS)
def test_render_then_parse_keeps_the_value(expr):
    assert evaluator().value(parse_strict(render(expr))) == reference(expr)


@FUZZ
@given(st.integers(-(10**6), 10**6), st.integers(-(10**6), 10**6).filter(bool))
def test_division_truncates_toward_zero(a, b):
    ev = evaluator()
    quotient = ev.value(Binary("/", Num(a) if a >= 0 else Unary("-", Num(-a)), Num(b) if b >= 0 else Unary("-", Num(-b))))
    remainder = ev.value(Binary("%", Num(a) if a >= 0 else Unary("-", Num(-a)), Num(b) if b >= 0 else Unary("-", Num(-b))))
    assert quotient * b + remainder == a
    assert abs(remainder) < abs(b)
    assert remainder == 0 or (remainder < 0) == (a < 0)


def test_kleene_tables():
    ev = evaluator()
    unknown, true, false = Name("UA"), Num(1), Num(0)
    assert ev.value(Binary("&&", false, unknown)) == 0
    assert ev.value(Binary("&&", unknown, false)) == 0
    assert ev.value(Binary("&&", true, unknown)) is None
    assert ev.value(Binary("||", unknown, true)) == 1
    assert ev.value(Binary("||", false, unknown)) is None
    assert ev.value(Unary("!", unknown)) is None


# ---------------------------------------------------------------- directive scanner and suppressions

DIRECTIVE_LINES = st.lists(
    st.one_of(
        st.sampled_from([
            b"#if __CUDA_ARCH__ >= 900", b"#ifdef X", b"#ifndef GUARD", b"#elif defined(Y) && Y > 2", b"#else",
            b"#endif", b"#define GUARD", b"#define F(a, b) ((a) + (b))", b"#undef X", b'#include "a.cuh"',
            b"#include <cuda.h>", b"  #  if 1 \\", b"/* open comment", b"*/", b'"string /*', b"// archlint: ignore[AL101]",
            b"asm volatile(\"wgmma.fence.sync.aligned;\");", b"__global__ void k() {", b"}", b"\x00", b"\xff\xfe",
        ]),
        st.binary(max_size=40),
    ),
    max_size=80,
).map(b"\n".join)


@FUZZ
@given(st.one_of(st.binary(max_size=2000), DIRECTIVE_LINES))
def test_scan_directives_never_raises(data):
    structure = scan_directives("fuzz.cu", data)
    assert len(structure.masked) == len(data)
    for region in structure.regions:
        assert region.parent < region.index


@FUZZ
@given(st.one_of(
    st.text(max_size=300),
    st.builds(lambda a, b, c: f"{a}archlint: {b}[{c}", st.text(max_size=20), st.sampled_from(["ignore", "file-ignore", "ignore "]), st.text(max_size=40)),
))
def test_parse_suppression_text_never_raises(text):
    parsed = parse_suppression_text(text)
    if parsed is not None:
        ids, file_level = parsed
        assert ids and isinstance(file_level, bool)


@FUZZ
@given(st.lists(st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_-]{0,12}", fullmatch=True), min_size=1, max_size=5), st.booleans())
def test_well_formed_suppressions_parse(ids, file_level):
    word = "file-ignore" if file_level else "ignore"
    assert parse_suppression_text(f"// archlint: {word}[{', '.join(ids)}] -- reason") == (tuple(ids), file_level)
