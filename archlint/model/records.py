"""Pickling for the records (slotted frozen dataclasses) the stages pass between them.

A scan sends millions of them back from its workers and loads as many from the facts cache.
dataclasses gives a slotted record a `__setstate__` that asks `fields()` for every object it
loads; the one here sets the slots from C (`map` over `object.__setattr__`, which a frozen record
allows), and `__getstate__` reads them with one `attrgetter`: the same state, a fraction of the time.
"""

from __future__ import annotations

import dataclasses
from itertools import repeat
from operator import attrgetter
from typing import Any


def fast_pickling(namespace: dict[str, Any]) -> None:
    """Give every slotted dataclass defined in this module namespace the fast pair."""
    for value in list(namespace.values()):
        if (isinstance(value, type) and value.__module__ == namespace["__name__"]
                and dataclasses.is_dataclass(value) and "__slots__" in vars(value)):
            _install(value)


def _install(cls: type) -> None:
    names = tuple(field.name for field in dataclasses.fields(cls))
    read = attrgetter(*names)
    setter = object.__setattr__

    if len(names) == 1:
        def __getstate__(self):
            return (read(self),)
    else:
        def __getstate__(self):
            return read(self)

    def __setstate__(self, state):
        any(map(setter, repeat(self), names, state))

    # setattr: assigning over the pair object declares would not type-check
    setattr(cls, "__getstate__", __getstate__)
    setattr(cls, "__setstate__", __setstate__)


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
