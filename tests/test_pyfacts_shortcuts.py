"""The Python walk's shortcuts give what the plain reading gives: the callee table against a walk
of each subtree, long texts read from their first bytes, dotted names read from their text,
string literals skipped because they can name nothing, suppressions only where a comment can
hold one."""

from archlint.extract.python.facts import extract_python
from archlint.extract.python.queries import Interesting, find_callees
from archlint.extract.python.walk import _FACT_KINDS, parse
from archlint.lang.python.expr import ExprBuilder, dotted, node_text, short

MANY = "\n".join(f"        helper_{index}.run(x)" for index in range(70))
SOURCE = f'''
import torch

def gate(x, major):
    if major not in (9, 10):
        raise RuntimeError(describe(major))
    check = lambda: probe(x)
    def inner():
        return nested_call(x)
    if use_many(x):
{MANY}
        outer(middle(inner_most(x)))
    result = [compute(i) for i in x] if flag() else fallback(x)
    return finish(result)


class Runner:
    def run(self):
        if self.ready():
            return self.go(lambda y: hidden(y))
        return wait()
'''


def all_nodes(root):
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(node.named_children)


def test_callee_table_matches_a_walk_of_every_subtree():
    tree = parse(SOURCE.encode())
    table = Interesting(tree.root_node, _FACT_KINDS).calls()
    nodes = list(all_nodes(tree.root_node))
    assert len(nodes) > 300
    for node in nodes:
        assert table.callees(node) == find_callees(node), node_text(node)[:80]


def test_a_body_with_more_callees_than_the_cap_keeps_the_walks_first():
    facts = extract_python("pkg/gate.py", SOURCE.encode())
    test = next(test for test in facts.tests if test.text == "use_many(x)")
    assert len(test.body_calls) == 64
    # the walk meets the last statements first: the enclosing call before the calls inside it
    assert {"outer", "middle", "inner_most", "helper_69.run"} <= set(test.body_calls)
    assert "helper_0.run" not in test.body_calls
    exit_test = next(test for test in facts.tests if test.text == "major not in (9, 10)")
    assert exit_test.exits and "probe" not in exit_test.rest_calls and "nested_call" not in exit_test.rest_calls
    assert {"finish", "compute", "flag", "fallback", "outer"} <= set(exit_test.rest_calls)


def test_long_texts_are_shortened_from_their_first_bytes_as_from_the_whole():
    long_call = "configure(" + ", ".join(f"option_{index}=[{index},\n    {index + 1}]" for index in range(200)) + ")\n"
    wide = "run(" + " ".join(["é"] * 2000) + ")\n"
    for source in (long_call, wide, "f(  a,\n\n   b)\n"):
        data = source.encode()
        call = parse(data).root_node.named_children[0].named_children[0]
        assert ExprBuilder(data).short_text(call) == short(node_text(call))
    facts = extract_python("pkg/long.py", long_call.encode())
    assert facts.calls[0].text.endswith("...") and len(facts.calls[0].text) == 160


def test_dotted_names_from_text_and_from_nodes_agree():
    source = "a.b.c\nNone.x\nTrue.real\nself . x\n(a).b\na.b().c\nf(x).y\nnaïve.attr\n_x._y9\n"
    tree = parse(source.encode())
    expected = ["a.b.c", None, None, "self.x", None, None, None, "naïve.attr", "_x._y9"]
    for statement, want in zip(tree.root_node.named_children, expected):
        assert dotted(statement.named_children[0]) == want


def test_strings_that_can_name_nothing_are_skipped_and_the_rest_are_read():
    source = (
        'def build():\n'
        '    """Builds the kernels."""\n'
        '    log("starting the build")\n'
        '    srcs = ["kernel" ".cu", f"{name}_sm90.cu", "plain"]\n'
        '    flags = ["-gencode=arch=compute_90a,code=sm_90a", "90a", "fast"]\n'
        '    return gen(srcs, flags)\n'
    )
    facts = extract_python("pkg/build.py", source.encode())
    assert sorted((ref.dynamic, ref.text) for ref in facts.sources) == [(False, '"kernel" ".cu"'),
                                                                         (True, 'f"{name}_sm90.cu"')]
    assert [s.value for s in facts.arch_strings] == ["-gencode=arch=compute_90a,code=sm_90a", "90a"]


def test_suppressions_are_read_only_where_a_comment_can_hold_one():
    quiet = extract_python("pkg/a.py", b"# just a note\nif major >= 9:  # fine\n    run()\n")
    assert quiet.suppressions == ()
    noisy = extract_python("pkg/b.py", b"# archlint: ignore[AL101]\nif major >= 9:\n    run()\n")
    assert [(s.line, s.ids) for s in noisy.suppressions] == [(2, ("AL101",))]


def test_pruning_never_skips_a_subtree_with_something_the_walk_records():
    source = SOURCE + 'x = compute(y)[0].z + "plain" + f"{value}.cu"\nflags = ("-O3", "sm_90a")\n'
    tree = parse(source.encode())
    wanted = Interesting(tree.root_node, _FACT_KINDS)
    recorded = _FACT_KINDS - {"string", "concatenated_string"}
    skipped = 0
    for node in all_nodes(tree.root_node):
        if wanted.holds(node):
            continue
        skipped += 1
        for below in all_nodes(node):
            assert below.type not in recorded, node_text(node)
            assert below.type != "string" or not any(c in node_text(below) for c in "0123456789.{\\")
    assert skipped > 50
