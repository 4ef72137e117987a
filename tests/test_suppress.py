import pytest

from archlint.extract.suppressions import parse_suppression_text
from archlint.knowledge.rules import load_rules
from archlint.model.findings import Finding, Level, Location, Suppression
from archlint.postprocess.suppress import apply_suppressions


@pytest.mark.parametrize(
    "text, expected",
    [
        ("# archlint: ignore[AL101]", (("AL101",), False)),
        ("// archlint: ignore[AL101, AL203] -- reason text", (("AL101", "AL203"), False)),
        ("/* archlint: ignore[policy-gate] */", (("policy-gate",), False)),
        ("// archlint: file-ignore[AL205]", (("AL205",), True)),
        ("#archlint:ignore[ AL101 , AL102, ]", (("AL101", "AL102"), False)),
        ("# noqa: E501  # archlint: ignore[AL101]", (("AL101",), False)),
    ],
)
def test_grammar(text, expected):
    assert parse_suppression_text(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "# archlint: ignore",  # no blanket form
        "# archlint: ignore[]",
        "# Archlint: ignore[AL101]",  # case-sensitive
        "# archlint: IGNORE[AL101]",
        "# archlint: disable[AL101]",
        "# notarchlint: ignore[AL101]",
        "# archlint: ignore[AL 101]",
        "# plain comment",
    ],
)
def test_not_a_suppression(text):
    assert parse_suppression_text(text) is None


def _finding(rule="AL101", path="pkg/jit.py", line=10):
    return Finding(rule, Level.WARNING, "msg", Location(path, line, 5))


def _sup(*ids, line=10, file_level=False, comment_line=None):
    return Suppression(line, ids, file_level, comment_line or line)


def test_line_suppression_by_id_or_name():
    rules = load_rules()
    for written in ("AL101", "policy-gate"):
        marked, meta = apply_suppressions([_finding()], {"pkg/jit.py": [_sup(written)]}, rules)
        assert marked[0].suppressed
        assert meta == []


def test_python_gate_suppression_covers_finding_with_cuda_evidence():
    from archlint.model.findings import Evidence, EvidenceKind

    finding = Finding(
        "AL103", Level.NOTE, "empty", Location("pkg/jit.py", 10, 5),
        evidence=(Evidence(Location("csrc/ar.cuh", 40), "#if ... < 1200", EvidenceKind.CONDITION),),
    )
    marked, meta = apply_suppressions([finding], {"pkg/jit.py": [_sup("empty-kernel-gate")]}, load_rules())
    assert marked[0].suppressed and meta == []


def test_other_line_other_rule_other_file_not_covered():
    rules = load_rules()
    sups = {"pkg/jit.py": [_sup("AL101", line=11)], "other.py": [_sup("AL101")]}
    marked, meta = apply_suppressions([_finding(), _finding("AL102")], sups, rules)
    assert not any(f.suppressed for f in marked)
    assert [(m.rule, m.location.path, m.location.line) for m in meta] == [
        ("AL900", "other.py", 10),
        ("AL900", "pkg/jit.py", 11),
    ]


def test_file_level_suppression():
    sups = {"pkg/jit.py": [_sup("AL101", line=1, file_level=True)]}
    marked, meta = apply_suppressions([_finding(line=99)], sups, load_rules())
    assert marked[0].suppressed and meta == []


def test_unknown_id_reported_as_al901_at_comment_line():
    sups = {"k.cu": [_sup("AL2O1", line=8, comment_line=7)]}
    _, meta = apply_suppressions([], sups, load_rules())
    assert [(m.rule, m.location.line) for m in meta] == [("AL901", 7)]
    assert "AL2O1" in meta[0].message


def test_unused_only_reported_for_rules_that_ran():
    sups = {"k.cu": [_sup("AL201")]}
    _, meta = apply_suppressions([], sups, load_rules(), active_rules={"AL101"})
    assert meta == []
    _, meta = apply_suppressions([], sups, load_rules())
    assert [m.rule for m in meta] == ["AL900"]


def test_meta_finding_can_be_suppressed():
    sups = {"k.cu": [_sup("AL201", "unused-suppression")]}
    _, meta = apply_suppressions([], sups, load_rules())
    assert [(m.rule, m.suppressed) for m in meta] == [("AL900", True)]


# ---------------------------------------------------------------- Python: the lines a comment covers

SPANS_PY = b'''@supported_compute_capability(
    [90, 100]  # archlint: ignore[AL101]
)
def gen_module(
    dtype,  # archlint: ignore[AL104]
):
    if (is_sm90a_supported(device)
            and dtype == "fp8"):  # archlint: ignore[AL105]
        return 1
    # archlint: ignore[AL102] -- the statement below
    flags = get_nvcc_flags_list(
        supported_major_versions=[9, 10]
    )
    if major >= 9: return run(  # archlint: ignore[AL103]
        "sm90")
    url = "http://x/#frag"  # archlint: file-ignore[AL203]
'''


def test_python_suppression_covers_its_logical_line():
    from archlint.extract.python.facts import extract_python

    found = {s.ids[0]: (s.line, s.end_line, s.comment_line, s.file_level)
             for s in extract_python("flashinfer/jit/x.py", SPANS_PY).suppressions}
    assert found == {
        "AL101": (1, 3, 2, False),  # the decorator, not the definition below it
        "AL104": (4, 6, 5, False),  # the def's header, to its `:`
        "AL105": (7, 8, 8, False),  # the if's header
        "AL102": (11, 13, 10, False),  # the next statement, all three lines
        "AL103": (14, 15, 14, False),  # a one-line `if` and the call it runs
        "AL203": (16, 16, 16, True),
    }


@pytest.mark.parametrize("text, ids", [
    ("# noqa: AL101", ("AL101",)),
    ("# noqa: AL101,AL204", ("AL101", "AL204")),
    ("# NOQA:E501 AL204", ("AL204",)),
    ("# archlint: ignore[AL101]  # noqa: AL101", ("AL101",)),
    ("# noqa", ()),
    ("# noqa: E501", ()),
    ("# noqa: E501, B950", ()),
    ("# see AL101 in the docs", ()),
])
def test_noqa_ids(text, ids):
    from archlint.extract.suppressions import noqa_ids

    assert noqa_ids(text) == ids


def test_noqa_covers_nothing_and_gets_one_hint():
    noqa = Suppression(10, ("AL101", "AL204", "AL999"), False, 10, 10, noqa=True)
    marked, meta = apply_suppressions([_finding()], {"pkg/jit.py": [noqa]}, load_rules())
    assert not marked[0].suppressed
    assert [(m.rule, m.level, m.location.line, m.message) for m in meta] == [
        ("AL903", Level.NOTE, 10,
         "`# noqa: AL101, AL204` is not read by archlint; write `# archlint: ignore[AL101, AL204]`")]


def test_noqa_beside_the_same_suppression_gets_no_hint():
    sups = [_sup("policy-gate"), Suppression(10, ("AL101",), False, 10, 10, noqa=True)]
    marked, meta = apply_suppressions([_finding()], {"pkg/jit.py": sups}, load_rules())
    assert marked[0].suppressed and meta == []


def test_gate_text_keeps_a_hash_inside_a_string():
    from archlint.extract.python.facts import extract_python

    source = b'flags = build(\n    "-DTAG=#1",  # archlint: ignore[AL101]\n    f"{x}#y",\n)\n'
    texts = [call.text for call in extract_python("x.py", source).calls]
    assert texts == ['build( "-DTAG=#1", f"{x}#y", )']
