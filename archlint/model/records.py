"""Pickling for the records (slotted frozen dataclasses) the stages pass between them.

A scan sends millions of them back from its workers and loads as many from the facts cache.
dataclasses gives a slotted record a `__setstate__` that asks `fields()` for every object it
loads; the one here sets the slots from C (`map` over `object.__setattr__`, which a frozen record
allows), and `__getstate__` reads them with one `attrgetter`: the same state, a fraction of the time.
A record interns its text fields' strings and its number fields' numbers as it loads (`_setstate`).
"""

from __future__ import annotations

import dataclasses
from itertools import repeat
from operator import attrgetter
from sys import intern
from typing import Any


def fast_pickling(namespace: dict[str, Any]) -> None:
    """Give every slotted dataclass defined in this module namespace the fast pair."""
    for value in list(namespace.values()):
        if (isinstance(value, type) and value.__module__ == namespace["__name__"]
                and dataclasses.is_dataclass(value) and "__slots__" in vars(value)):
            _install(value)


def _install(cls: type) -> None:
    fields = dataclasses.fields(cls)
    names = tuple(field.name for field in fields)
    read = attrgetter(*names)

    if len(names) == 1:
        def __getstate__(self):
            return (read(self),)
    else:
        def __getstate__(self):
            return read(self)

    __setstate__ = _setstate(names, [field.type for field in fields])

    # setattr: assigning over the pair object declares would not type-check
    setattr(cls, "__getstate__", __getstate__)
    setattr(cls, "__setstate__", __setstate__)


def _setstate(names: tuple[str, ...], annotations: list) -> Any:
    """A `__setstate__` that sets the slots and makes each text field's string, and each number
    field's number, the one copy the process holds: a scan loads the facts of thousands of files,
    each pickle with its own copies of the same names (`self`, `torch`, `dtype`: 2.1 million
    strings of 265,000 values on FlashInfer 0.7.2.post1) and line numbers."""
    texts = [_TEXT.get(str(annotation)) for annotation in annotations]
    setter = object.__setattr__
    if not any(texts):
        def plain(self, state):
            any(map(setter, repeat(self), names, state))
        return plain
    # generated as dataclasses generates its methods: a loop in Python would cost more than the
    # interning (millions of records load per scan)
    values = [f"v{i}" for i in range(len(names))]
    lines = [f"    {', '.join(values)}, = state"]
    lines += [f"    setter(self, {name!r}, {(text or '{}').format(value)})" for name, value, text in zip(names, values, texts)]
    namespace = {"setter": setter, "intern": intern, "_interned_all": _interned_all, "_numbers": _numbers}
    exec("def __setstate__(self, state):\n" + "\n".join(lines), namespace)
    return namespace["__setstate__"]


_TEXT = {  # annotation -> the expression that interns a value of it
    "str": "(intern({0}) if {0}.__class__ is str else {0})",
    "tuple[str, ...]": "(_interned_all({0}) if {0} else {0})",
    "int": "({0} if -6 < {0} < 257 else _numbers.setdefault({0}, {0}))",  # past CPython's cached ones
}
_numbers: dict[int, int] = {}  # the numbers loaded so far (line numbers, mostly), one object each


def _interned_all(values: Any) -> Any:
    try:
        return tuple(map(intern, values))
    except TypeError:  # not all strings, whatever the annotation says: kept as loaded
        return values


def shared(value: Any, table: dict) -> Any:
    """`value` with equal parts made one object: equal records, tuples, strings and ints are then
    pickled once (pickle shares by identity), so what is stored is smaller and loads faster. `table`
    holds what was seen so far (pass the same one to share across values); a record is rebuilt only
    where one of its parts was replaced. Other values (None, bools, enums, sets) are kept as they are."""
    kind = type(value)
    if kind is str:
        return table.setdefault(value, value)
    if kind is int:
        return table.setdefault((int, value), value)
    if kind is tuple:
        items = tuple([shared(item, table) for item in value])
        return table.setdefault((tuple, *map(id, items)), items)
    names = _field_names(kind)
    if names is None:
        return value
    old = [getattr(value, name) for name in names]
    parts = [shared(part, table) for part in old]
    key = (kind, *map(id, parts))
    if key in table:
        return table[key]
    if any(new is not was for new, was in zip(parts, old)):
        value = object.__new__(kind)
        any(map(object.__setattr__, repeat(value), names, parts))
    table[key] = value
    return value


_FIELDS: dict[type, tuple[str, ...] | None] = {}


def _field_names(kind: type) -> tuple[str, ...] | None:
    """A frozen dataclass's field names (None for any other type)."""
    if kind not in _FIELDS:
        params = getattr(kind, "__dataclass_params__", None)
        _FIELDS[kind] = tuple(f.name for f in dataclasses.fields(kind)) if params is not None and params.frozen else None
    return _FIELDS[kind]
