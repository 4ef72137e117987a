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
