"""What traps in device code: `__trap()`, `__brkpt()`, `asm("trap;")`, `assert(false)`
(or `assert(0 && "message")`), and function-like macros whose body does one of those
(`#define X_ASSERT(x) __trap()`, CuTe's `CUTE_INVALID_CONTROL_PATH`)."""

from __future__ import annotations

import re

TRAP_RE = re.compile(r'__trap\s*\(\s*\)|__brkpt\s*\(\s*\)'
                     r'|\basm\s*(?:volatile\s*|__volatile__\s*)?\(\s*"\s*trap\s*;?\s*(?:\\n)?\s*"'
                     r'|\bassert\s*\(\s*(?:false|0)\s*(?:\)|&&)')
# `assert(0 && "message")`: fails whatever the message, so its `&&` tests nothing.
_FAILING_ASSERT_RE = re.compile(r'\bassert\s*\(\s*(?:false|0)\s*&&[^;]*\)')
# A statement that is one call, `NAME(args);`, on the masked text of a line (strings blanked).
CALL_LINE_RE = re.compile(rb"^([A-Za-z_]\w*)\s*\((.*)\)$")
# Anything that makes a macro body trap only for some arguments.
_CONDITIONAL_RE = re.compile(r"\bif\b|\?|&&|\|\||\bwhile\s*\(\s*[^0)\s]")
_FALSE_ARGS = frozenset({b"false", b"0", b"(false)", b"(0)"})


def trap_macro(body: str) -> bool | None:
    """For a function-like macro's body: True if it always traps, False if it traps only when its
    condition fails (`do { if (!(c)) __trap(); } while (0)`), None if it does not trap."""
    if not TRAP_RE.search(body):
        return None
    return not _CONDITIONAL_RE.search(_FAILING_ASSERT_RE.sub("__trap()", body))


def false_arguments(args: bytes) -> bool:
    """The arguments of a call are the literal `false` (or 0): an assertion that always fails."""
    first = args.split(b",")[0].strip()
    return first in _FALSE_ARGS
