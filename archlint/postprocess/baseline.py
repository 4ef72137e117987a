"""Finding identity across edits: the archlint fingerprint, GitHub's line hash, and baselines.

A baseline is the JSON or SARIF report of an earlier scan. A finding matches it when its
(rule, path, symbol, normalised snippet) key matches, never its line number, so findings keep
their match when code above them moves.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import replace
from itertools import accumulate, islice
from operator import countOf
from pathlib import Path

from archlint.model.findings import Finding

FINGERPRINT_KEY = "archlint/v1"
_SPACE_RE = re.compile(r"\s+")


class BaselineError(ValueError):
    """The baseline file is missing or is not an archlint JSON or SARIF report."""


def normalise_snippet(snippet: str) -> str:
    return _SPACE_RE.sub(" ", snippet).strip()


def fingerprint(finding: Finding) -> str:
    """Stable key of a finding: hash of (rule, path, symbol, normalised snippet)."""
    parts = (finding.rule, finding.location.path, finding.symbol, normalise_snippet(finding.snippet))
    return hashlib.sha256("\0".join(parts).encode("utf-8")).hexdigest()[:32]


def load_baseline(path: str | Path) -> Counter[str]:
    """Fingerprints recorded in a JSON (`findings[].fingerprint`) or SARIF report, with counts."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise BaselineError(f"cannot read baseline {path}: {error}") from None
    if not isinstance(data, dict):
        raise BaselineError(f"baseline {path} is not an archlint report")
    if "runs" in data:
        return Counter(_sarif_fingerprints(data))
    if data.get("version") == 1 and "findings" in data:
        return Counter(item["fingerprint"] for item in data["findings"] if "fingerprint" in item)
    raise BaselineError(f"baseline {path} is neither an archlint JSON report nor SARIF")


def _sarif_fingerprints(data: dict) -> Iterable[str]:
    for run in data.get("runs") or []:
        for result in run.get("results") or []:
            value = (result.get("partialFingerprints") or {}).get(FINGERPRINT_KEY)
            if value:
                yield value


def filter_new(findings: Iterable[Finding], baseline: Counter[str]) -> tuple[list[Finding], int]:
    """Findings not in the baseline, and how many matched. Each baseline entry matches once."""
    ordered = sorted(findings, key=Finding.sort_key)
    matched = _matched(ordered, baseline)
    return [f for f, hit in zip(ordered, matched) if not hit], sum(matched)


def mark_baselined(findings: Iterable[Finding], baseline: Counter[str]) -> list[Finding]:
    """Same matching as filter_new, but tags matches with a `baseline` property instead."""
    ordered = sorted(findings, key=Finding.sort_key)
    return [replace(f, properties=f.properties + (("baseline", "unchanged"),)) if hit else f
            for f, hit in zip(ordered, _matched(ordered, baseline))]


def _matched(ordered: list[Finding], baseline: Counter[str]) -> list[bool]:
    """Which findings a baseline entry takes, each entry once. Exact keys first; then, for a
    baseline written when paths were relative to the scanned folder rather than the repository,
    the key with the path's leading folders dropped (`mykern/jit/a.py` -> `jit/a.py`, `a.py`)."""
    remaining = Counter(baseline)
    matched = [_take(remaining, fingerprint(f)) for f in ordered]
    for index, finding in enumerate(ordered):
        if not matched[index] and +remaining:
            matched[index] = any(_take(remaining, key) for key in _shorter_keys(finding))
    return matched


def _take(remaining: Counter[str], key: str) -> bool:
    if remaining[key] > 0:
        remaining[key] -= 1
        return True
    return False


def _shorter_keys(finding: Finding) -> Iterator[str]:
    parts = finding.location.path.split("/")
    for start in range(1, len(parts)):
        yield fingerprint(replace(finding, location=replace(finding.location, path="/".join(parts[start:]))))


# ---------------------------------------------------------------- GitHub's primaryLocationLineHash
# A port of the rolling hash in github/codeql-action src/fingerprints.ts: for every line, a hash
# of the next 100 characters from the line's start, spaces and tabs skipped, line endings
# normalised to "\n", followed by ":<n>" numbering repeats of the same hash.

_MASK = (1 << 64) - 1
_BLOCK_SIZE = 100
_MOD = 37
_EOF = "\uffff"
_PLUS_ONE = (1).__add__


class LineHasher:
    """primaryLocationLineHash of any line of one text, each computed when asked.

    The character stream codeql-action hashes is built with string operations (line endings
    normalised, spaces and tabs dropped, the EOF mark appended); a line's hash is the polynomial
    hash of the 100 characters from its start, zero-padded, and its ":<n>" numbers the lines
    before it whose 100 characters are the same."""

    _COUNT_ALL_AFTER = 16  # lines asked for, after which numbering every line at once is cheaper

    def __init__(self, text: str) -> None:
        if not text.isascii() and max(text) > "\uffff":  # JavaScript's charCodeAt sees UTF-16 units
            units = text.encode("utf-16-le", "surrogatepass")
            text = "".join(chr(units[i] | units[i + 1] << 8) for i in range(0, len(units), 2))
        stream = text.replace("\r\n", "\n").replace("\r", "\n").replace(" ", "").replace("\t", "") + _EOF
        self.padded = stream + "\0" * _BLOCK_SIZE  # the zeros the rolling hash shifts in after the end
        self.starts = list(accumulate(map(_PLUS_ONE, map(len, stream.split("\n"))), initial=0))[:-1]  # each line's start
        self.windows: list[str] = []  # each line's 100 characters, as far as a line was asked for
        self.repeats: list[int] | None = None
        self.asked = 0

    def get(self, line: int) -> str | None:
        if not 1 <= line <= len(self.starts):
            return None
        self.asked += 1
        if self.repeats is None and self.asked > self._COUNT_ALL_AFTER:
            self.repeats = _repeat_numbers(self._windows_to(len(self.starts)))
        windows = self._windows_to(line)
        window = windows[line - 1]
        repeats = self.repeats[line - 1] if self.repeats is not None else countOf(islice(windows, line), window)
        return f"{_hash(window):x}:{repeats}"

    def _windows_to(self, line: int) -> list[str]:
        if len(self.windows) < line:
            padded = self.padded
            self.windows += [padded[start : start + _BLOCK_SIZE] for start in self.starts[len(self.windows) : line]]
        return self.windows


def decided_text(data: bytes, last_line: int) -> str:
    """The text of the file whose bytes are `data`, as far as it decides the line hashes of its lines
    up to `last_line` (every line's hash reads its 100 characters from the line's start, spaces and
    tabs left out, and the lines before it): the whole file where it has a carriage return or no
    more than that. Cut after a newline, which no UTF-8 sequence holds, so the part decodes as it
    does in the whole."""
    if last_line < 1 or b"\r" in data:
        return data.decode("utf-8", "replace")
    lines = data.split(b"\n", last_line - 1)
    if len(lines) < last_line:
        return data.decode("utf-8", "replace")
    start, margin = len(data) - len(lines[-1]), 512
    while True:
        end = data.find(b"\n", start + margin) + 1
        if end == 0:
            return data.decode("utf-8", "replace")
        rest = data[start:end].decode("utf-8", "replace")
        if len(rest) - rest.count(" ") - rest.count("\t") > _BLOCK_SIZE:
            return data[:start].decode("utf-8", "replace") + rest
        margin *= 4


def _repeat_numbers(windows: list[str]) -> list[int]:
    seen: Counter[str] = Counter()
    numbers = []
    for window in windows:
        seen[window] += 1
        numbers.append(seen[window])
    return numbers


def _hash(window: str) -> int:
    value = 0
    for char in window:
        value = (value * _MOD + ord(char)) & _MASK
    return value


def line_hashes(text: str) -> dict[int, str]:
    """1-based line number -> primaryLocationLineHash, exactly as codeql-action computes it."""
    hasher = LineHasher(text)
    windows = hasher._windows_to(len(hasher.starts))
    return {line: f"{_hash(window):x}:{number}"
            for line, (window, number) in enumerate(zip(windows, _repeat_numbers(windows)), 1)}
