"""archlint's primaryLocationLineHash against a character-by-character port of codeql-action's
rolling hash (src/fingerprints.ts), on texts built from the characters that matter to it."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from archlint.postprocess.baseline import LineHasher, decided_text, line_hashes

_MASK, _BLOCK, _MOD = (1 << 64) - 1, 100, 37
_FIRST_MOD = pow(_MOD, _BLOCK, 1 << 64)


def reference(text: str) -> dict[int, str]:
    window, numbers = [0] * _BLOCK, [-1] * _BLOCK
    state = {"hash": 0, "index": 0, "line": 0, "start": True, "cr": False}
    counts: Counter[str] = Counter()
    out: dict[int, str] = {}

    def output():
        value = format(state["hash"], "x")
        counts[value] += 1
        out[numbers[state["index"]]] = f"{value}:{counts[value]}"
        numbers[state["index"]] = -1

    def update(current):
        begin = window[state["index"]]
        window[state["index"]] = current
        state["hash"] = (_MOD * state["hash"] + current - _FIRST_MOD * begin) & _MASK
        state["index"] = (state["index"] + 1) % _BLOCK

    def process(current):
        if current in (32, 9) or (state["cr"] and current == 10):
            state["cr"] = False
            return
        state["cr"] = current == 13
        current = 10 if current == 13 else current
        if numbers[state["index"]] != -1:
            output()
        if state["start"]:
            state["start"] = False
            state["line"] += 1
            numbers[state["index"]] = state["line"]
        if current == 10:
            state["start"] = True
        update(current)

    units = text.encode("utf-16-le", "surrogatepass")
    for offset in range(0, len(units), 2):
        process(units[offset] | units[offset + 1] << 8)
    process(65535)
    for _ in range(_BLOCK):
        if numbers[state["index"]] != -1:
            output()
        update(0)
    return out


TEXTS = st.lists(
    st.sampled_from([" ", "\t", "\r", "\n", "\r\n", "a", "b", "{", "\0", "\uffff", "é", "\U0001f600", "x" * 60]),
    max_size=80,
).map("".join)


@settings(max_examples=300, deadline=None)
@given(TEXTS)
def test_same_hashes_as_the_rolling_hash(text):
    assert line_hashes(text) == reference(text)


def test_a_line_past_the_end_has_no_hash():
    hasher = LineHasher("a\nb\n")
    assert hasher.get(3) is not None  # the EOF mark after the last newline starts a line
    assert hasher.get(4) is None and hasher.get(0) is None


@settings(max_examples=100, deadline=None)
@given(TEXTS, st.lists(st.integers(1, 40), max_size=30))
def test_lines_asked_one_at_a_time_match_the_whole_table(text, lines):
    whole = line_hashes(text)
    hasher = LineHasher(text)
    assert [hasher.get(line) for line in lines] == [whole.get(line) for line in lines]


@settings(max_examples=200, deadline=None)
@given(TEXTS, st.integers(1, 40), st.sampled_from(["", "\n", "\r\n", "x" * 150 + "\n", " \t" * 80 + "\n"]))
def test_the_part_a_report_decodes_gives_the_same_hashes(text, last, filler):
    """A SARIF report decodes a source only as far as its last finding's line decides the hashes:
    the lines up to it hash as in the whole file, CRLF files, long lines, blank tails and all."""
    data = (text + filler * 30).encode("utf-8", "surrogatepass")
    whole = line_hashes(data.decode("utf-8", "replace"))
    part = LineHasher(decided_text(data, last))
    assert [part.get(line) for line in range(1, last + 1)] == [whole.get(line) for line in range(1, last + 1)]
