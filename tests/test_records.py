"""Equal parts of stored results made one object (model.records.shared): same values, one copy each."""

from __future__ import annotations

import pickle
import sys

from archlint.model.findings import Evidence, EvidenceKind, Location
from archlint.model.records import shared


def _chain(path: str) -> tuple[Evidence, ...]:
    gate = Evidence(Location("flashinfer/jit/norm.py", 41, 5), "gate `is_sm90a_supported()`", EvidenceKind.GATE)
    builds = Evidence(Location("flashinfer/jit/norm.py", 52, 9), f"builds {path}", EvidenceKind.BUILDS, source=path)
    return (gate, builds)


def test_equal_records_become_one_object_and_pickle_once():
    # two targets' verdicts built apart, as the judge builds them: equal, not identical
    first, second = _chain("csrc/norm.cu"), _chain("csrc/norm.cu")
    assert first == second and first[0] is not second[0]
    table: dict = {}
    a, b = shared(first, table), shared(second, table)
    assert a == first and b == second
    assert a is b and a[0].location is b[0].location
    assert len(pickle.dumps((a, b))) < len(pickle.dumps((first, second)))
    assert pickle.loads(pickle.dumps((a, b))) == (first, second)


def test_records_that_differ_stay_apart():
    table: dict = {}
    norm, rope = shared(_chain("csrc/norm.cu"), table), shared(_chain("csrc/rope.cu"), table)
    assert norm[0] is rope[0]  # the same gate hop
    assert norm[1] != rope[1] and norm[1].source == "csrc/norm.cu" and rope[1].source == "csrc/rope.cu"


def test_values_equal_across_types_keep_their_type():
    table: dict = {}
    ints, bools, floats = shared((1, 0), table), shared((True, False), table), shared((1.0, 0.0), table)
    assert [type(v) for v in ints] == [int, int]
    assert [type(v) for v in bools] == [bool, bool]
    assert [type(v) for v in floats] == [float, float]
    assert shared(Location("a.cu", 1, True), table).col is True  # a field's value, not an equal int


def test_facts_loaded_from_separate_pickles_share_their_names():
    """Each file's facts are pickled on their own (cache entries, worker payloads); loading them
    makes every text field's string, and every string of a tuple of them, the one interned copy."""
    from archlint.model.python import PyExpr, PyFunction, Span

    def function(path: str) -> PyFunction:
        name = "".join(["gen_", "fused_moe_", "module"])  # built at run time: not a constant of this file
        return PyFunction(name, name, "", Span(1, 0, 2, 0), ("".join(["dt", "ype"]), "device"), (), path)

    first, second = (pickle.loads(pickle.dumps(function(path))) for path in ("a.py", "b.py"))
    assert first == function("a.py")
    assert first.qualname is second.qualname and first.params[0] is second.params[0]
    expr = pickle.loads(pickle.dumps(PyExpr("name", "".join(["torch.", "float16"]))))
    assert expr.text is sys.intern("torch.float16") and expr.value is None
