"""JSON text as `json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)` writes it, faster.

With an indent, the standard library encodes in pure Python, one generator per container; a
SARIF log of a large tree (megabytes) took a third of a second. This writes the same bytes with
one recursive function, strings still escaped by the standard library's C encoder.
"""

from __future__ import annotations

import json
from json.encoder import encode_basestring  # the C version when present

INDENT = "  "


def dumps_indented(value: object) -> str:
    """The text json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False) gives, for plain
    data (dicts with string keys, lists, tuples, strings, numbers, booleans, None); anything else
    is left to json.dumps."""
    out: list[str] = []
    try:
        _write(value, out, "\n")
    except _NotPlain:
        return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)
    return "".join(out)


class _NotPlain(Exception):
    pass


def _write(value: object, out: list[str], newline: str) -> None:
    # the standard library's order of tests (json.encoder._make_iterencode): a str or int
    # subclass, an enum say, prints as its plain value
    if isinstance(value, str):
        out.append(encode_basestring(value))
    elif isinstance(value, dict):
        _write_dict(value, out, newline)
    elif isinstance(value, (list, tuple)):
        _write_list(value, out, newline)
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, int):
        out.append(int.__repr__(value))
    elif isinstance(value, float):
        out.append(json.dumps(float(value)))  # NaN and Infinity as json.dumps spells them
    else:
        raise _NotPlain


def _write_dict(value: dict, out: list[str], newline: str) -> None:
    if not value:
        out.append("{}")
        return
    if not all(isinstance(key, str) for key in value):
        raise _NotPlain  # json.dumps converts such keys; not worth copying here
    inner = newline + INDENT
    separator = "{" + inner
    for key in sorted(value):
        out.append(separator)
        out.append(encode_basestring(key))
        out.append(": ")
        _write(value[key], out, inner)
        separator = "," + inner
    out.append(newline + "}")


def _write_list(value: list | tuple, out: list[str], newline: str) -> None:
    if not value:
        out.append("[]")
        return
    inner = newline + INDENT
    separator = "[" + inner
    for item in value:
        out.append(separator)
        _write(item, out, inner)
        separator = "," + inner
    out.append(newline + "]")
