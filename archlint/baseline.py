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
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

from .model import Finding

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
    remaining = Counter(baseline)
    new, matched = [], 0
    for finding in sorted(findings, key=Finding.sort_key):
        key = fingerprint(finding)
        if remaining[key] > 0:
            remaining[key] -= 1
            matched += 1
        else:
            new.append(finding)
    return new, matched


def mark_baselined(findings: Iterable[Finding], baseline: Counter[str]) -> list[Finding]:
    """Same matching as filter_new, but tags matches with a `baseline` property instead."""
    remaining = Counter(baseline)
    out = []
    for finding in sorted(findings, key=Finding.sort_key):
        key = fingerprint(finding)
        if remaining[key] > 0:
            remaining[key] -= 1
            finding = replace(finding, properties=finding.properties + (("baseline", "unchanged"),))
        out.append(finding)
    return out


# ---------------------------------------------------------------- GitHub's primaryLocationLineHash
# A port of the rolling hash in github/codeql-action src/fingerprints.ts: for every line, a hash
# of the next 100 characters from the line's start, spaces and tabs skipped, line endings
# normalised to "\n", followed by ":<n>" numbering repeats of the same hash.

_MASK = (1 << 64) - 1
_BLOCK_SIZE = 100
_MOD = 37
_FIRST_MOD = pow(_MOD, _BLOCK_SIZE, 1 << 64)
_TAB, _SPACE, _LF, _CR, _EOF = 9, 32, 10, 13, 65535


class _LineHasher:
    def __init__(self) -> None:
        self.window = [0] * _BLOCK_SIZE
        self.line_numbers = [-1] * _BLOCK_SIZE
        self.hash = 0
        self.index = 0
        self.line = 0
        self.line_start = True
        self.prev_cr = False
        self.counts: Counter[str] = Counter()
        self.hashes: dict[int, str] = {}

    def output(self) -> None:
        value = format(self.hash, "x")
        self.counts[value] += 1
        self.hashes[self.line_numbers[self.index]] = f"{value}:{self.counts[value]}"
        self.line_numbers[self.index] = -1

    def update(self, current: int) -> None:
        begin = self.window[self.index]
        self.window[self.index] = current
        self.hash = (_MOD * self.hash + current - _FIRST_MOD * begin) & _MASK
        self.index = (self.index + 1) % _BLOCK_SIZE

    def process(self, current: int) -> None:
        if current in (_SPACE, _TAB) or (self.prev_cr and current == _LF):
            self.prev_cr = False
            return
        self.prev_cr = current == _CR
        if current == _CR:
            current = _LF
        if self.line_numbers[self.index] != -1:
            self.output()
        if self.line_start:
            self.line_start = False
            self.line += 1
            self.line_numbers[self.index] = self.line
        if current == _LF:
            self.line_start = True
        self.update(current)

    def finish(self) -> dict[int, str]:
        self.process(_EOF)
        for _ in range(_BLOCK_SIZE):
            if self.line_numbers[self.index] != -1:
                self.output()
            self.update(0)
        return self.hashes


def line_hashes(text: str) -> dict[int, str]:
    """1-based line number -> primaryLocationLineHash, exactly as codeql-action computes it."""
    hasher = _LineHasher()
    units = text.encode("utf-16-le", "surrogatepass")  # JavaScript's charCodeAt sees UTF-16 units
    for offset in range(0, len(units), 2):
        hasher.process(units[offset] | (units[offset + 1] << 8))
    return hasher.finish()
