"""The PTX opcode extractor: examples from real inline assembly, and fuzzing."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from archlint.lang.cpp.ptx import PtxError, asm_strings, opcodes


def test_escaped_newlines_and_braces():
    text = r"{\n.reg .pred p;\nsetp.ne.b32 p, %4, 0;\n@p cp.async.cg.shared.global.L2::128B [%0], [%1], %2, %3;\n}\n"
    assert opcodes(text) == ["setp.ne.b32", "cp.async.cg.shared.global.L2::128B"]


def test_real_newlines_labels_and_guards():
    text = "{\n.reg .pred P1;\nLAB_WAIT:\nmbarrier.try_wait.parity.shared::cta.b64 P1, [%0], %1;\n@P1 bra DONE;\nbra LAB_WAIT;\nDONE:\n}\n"
    assert opcodes(text) == ["mbarrier.try_wait.parity.shared::cta.b64", "bra", "bra"]


def test_operands_spanning_lines():
    text = ("wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 \n{%0, %1, %2, %3},\n %4,\n %5,\n p, 1, 1, 1, 1;\n")
    assert opcodes(text) == ["wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16"]


def test_comments_negated_guards_and_unique_labels():
    text = "// load\nLAB_%=: /* spin */ @!%p1 setmaxnreg.inc.sync.aligned.u32 240; // done\n"
    assert opcodes(text) == ["setmaxnreg.inc.sync.aligned.u32"]


def test_tma_opcode_keeps_double_colon_modifiers():
    text = "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
    assert opcodes(text) == ["cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"]


def test_no_semicolon_at_end_and_empty():
    assert opcodes("trap") == ["trap"]
    assert opcodes("") == [] and opcodes("   \n ") == []
    assert opcodes("%0, %1;") == []


def test_non_text_raises_ptx_error():
    try:
        opcodes(b"mov.b32 %0, 1;")  # type: ignore[arg-type]
    except PtxError:
        return
    raise AssertionError("bytes must raise PtxError")


def test_asm_strings_concatenates_and_handles_raw_strings():
    source = (
        'void f() {\n  asm volatile("griddepcontrol.wait;" ::: "memory");\n'
        '  asm volatile(\n    "{\\n"\n    // comment between literals\n    "elect.sync %0|p, 0xffffffff;\\n"\n    "}\\n" : "=r"(x));\n'
        '  asm volatile(R"(\n    tcgen05.fence::after_thread_sync;\n  )");\n}\n'
    )
    blocks = asm_strings(source)
    assert [line for line, _ in blocks] == [2, 3, 8]
    assert [opcodes(text) for _, text in blocks] == [
        ["griddepcontrol.wait"], ["elect.sync"], ["tcgen05.fence::after_thread_sync"]]


# ---------------------------------------------------------------- properties

MODIFIER = st.from_regex(r"[a-z][a-z0-9_]{0,6}(::[a-z0-9_]{1,5})?", fullmatch=True)
OPCODE = st.builds(lambda head, mods: ".".join([head, *mods]),
                   st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True), st.lists(MODIFIER, max_size=5))
OPERANDS = st.lists(st.sampled_from(["%0", "%1", "[%2]", "{%3, %4}", "p", "0xffffffff", "[%0+8]", "_"]), max_size=4)
PREFIX = st.sampled_from(["", "@p ", "@!p ", "L1:\n", "{ ", "} ", "LAB_%=: "])
SEPARATOR = st.sampled_from([";", ";\n", ";\\n", " ; ", ";\\n\\t"])
FILLER = st.sampled_from(["", "\n", "// note\n", "/* c */", ".reg .b32 r;", "{\n", "}\n", "\\n"])


@st.composite
def program(draw):
    ops = draw(st.lists(OPCODE, max_size=8))
    parts = []
    for op in ops:
        parts.append(draw(FILLER) + draw(PREFIX) + op + " " + ", ".join(draw(OPERANDS)) + draw(SEPARATOR))
    return ops, "".join(parts) + draw(FILLER)


@given(program())
@settings(max_examples=300)
def test_generated_programs_round_trip(case):
    ops, text = case
    assert opcodes(text) == ops


@given(st.text())
@settings(max_examples=500)
def test_arbitrary_text_never_raises(text):
    result = opcodes(text)
    assert isinstance(result, list) and all(isinstance(op, str) and op for op in result)


@given(st.text(alphabet=st.sampled_from(list('asm volatile("%;{}\\n/*)R(:.@') + ["\n"]), max_size=200))
@settings(max_examples=300)
def test_asm_strings_never_raises(source):
    for line, text in asm_strings(source):
        assert line >= 1
        opcodes(text)
