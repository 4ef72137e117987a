"""One Judging per scan shares what no build changes (each file's sites, a unit closure's reach, its
include chains) and each build's memos across every gate: a gate's verdicts must not depend on
which gates were judged before it, nor on whether the work was shared at all."""

from __future__ import annotations

from pathlib import Path

import pytest

from archlint.engine.linking import link
from archlint.engine.steps import judge_gate, user_defines
from archlint.judge.view import Judging
from archlint.judge.reach import Unreached
from archlint.model.scan import ScanOptions

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
GATED = sorted(path.name for path in FIXTURES.iterdir() if path.name.startswith("gate-"))


@pytest.mark.parametrize("fixture", GATED)
def test_a_gate_judged_alone_gets_the_verdicts_of_the_scan(fixture):
    options = ScanOptions(paths=(str(FIXTURES / fixture),), use_cache=False, jobs=1)
    linked = link(options, eager=False)
    ctx = linked.context
    assert linked.memos, "the fixture has judged gates"
    alone = [judge_gate(memo.gate, memo.units, Judging(linked.index, ctx.kb), ctx.targets, user_defines(options))
             for memo in linked.memos]
    assert alone == list(ctx.gate_results)
    shared = Judging(linked.index, ctx.kb)
    backwards = [judge_gate(memo.gate, memo.units, shared, ctx.targets, user_defines(options))
                 for memo in reversed(linked.memos)]
    assert backwards[::-1] == list(ctx.gate_results)


def test_the_definition_around_a_place_is_the_innermost_one():
    """A class template spanning its members, a long namespace-scope definition that starts first
    and ends last, and a sibling after them: the place in the member is in all three outer ones,
    the innermost (the last to start) names it."""
    reached = {
        "Outer": (("a.cuh", (1, 1), (90, 1), frozenset({"Holder", "After"}), False),),
        "Holder": (("a.cuh", (10, 1), (40, 1), frozenset({"member"}), False),),
        "member": (("a.cuh", (20, 5), (25, 5), frozenset(), False),),
        "After": (("a.cuh", (50, 1), (60, 1), frozenset(), False),),
    }
    named = Unreached({}, reached).named(frozenset({"Outer"}))
    assert named.at("a.cuh", 22, 9) == "member"
    assert named.at("a.cuh", 30, 1) == "Holder"
    assert named.at("a.cuh", 55, 3) == "After"
    assert named.at("a.cuh", 70, 1) == "Outer"
    assert named.at("a.cuh", 95, 1) == ""
    assert named.at("b.cuh", 22, 9) == ""
