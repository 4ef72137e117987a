"""A part of the stored scan state written as what changed since an entry of it stored before (its
base): the value pickled with the base's records and tuples, two levels down, as references to
them. A re-scan that judges one gate again keeps the other gates' results, memos and link answers
as the very objects it loaded; writing them again took a fifth of an edited gate's scan on a large
tree, where the delta is a few kilobytes.

A reference is a position among the base's parts (`parts`), which a reader finds by loading the
base's entry and walking it the same way: the walk goes through tuples and frozen records (in
field order) only: never sets, whose order is not the same in another process, nor anything a
scan could change after loading it (a reference would load it as the base stored it).
"""

from __future__ import annotations

import dataclasses
import io
import pickle
from typing import Any

from archlint.engine.collector import collector_paused

# a delta is written only where the value keeps most of the base's parts, and only while it is
# small beside the base (else the value is written whole, to be the next base)
KEPT_AT_LEAST = 0.5
SIZE_AT_MOST = 0.5


@dataclasses.dataclass(frozen=True)
class Delta:
    base: str  # the file name of the base's entry, beside this one's
    payload: bytes  # the value's pickle, the base's parts in it as references


def parts(value: object) -> list[object]:
    """The base's parts a later value may share: the value's items or fields, and theirs."""
    found: list[object] = []
    for child in _children(value):
        if _walked(child):
            found.append(child)
            found.extend(grandchild for grandchild in _children(child) if _walked(grandchild))
    return found


def delta(value: object, base: object, base_size: int) -> bytes | None:
    """`value` pickled against `base` (whose entry is `base_size` bytes), or None where it keeps too
    little of it for a delta to pay."""
    at = {id(part): number for number, part in enumerate(parts(base))}
    if not at:
        return None
    mine = parts(value)
    if not mine or sum(id(part) in at for part in mine) < KEPT_AT_LEAST * len(mine):
        return None
    out = io.BytesIO()
    try:
        _Against(out, at).dump(value)
    except (pickle.PicklingError, TypeError, AttributeError, RecursionError):
        return None
    payload = out.getvalue()
    return payload if len(payload) <= SIZE_AT_MOST * base_size else None


def undelta(payload: bytes, base: object) -> object:
    """The value a delta of `base` holds."""
    with collector_paused(freeze=True):
        return _Over(io.BytesIO(payload), parts(base)).load()


class _Against(pickle.Pickler):
    def __init__(self, out: io.BytesIO, at: dict[int, int]) -> None:
        super().__init__(out, protocol=5)
        self._at = at

    def persistent_id(self, obj: Any) -> int | None:
        return self._at.get(id(obj))


class _Over(pickle.Unpickler):
    def __init__(self, data: io.BytesIO, found: list[object]) -> None:
        super().__init__(data)
        self._found = found

    def persistent_load(self, pid: Any) -> object:
        return self._found[pid]


def _children(value: object) -> list[object]:
    if isinstance(value, tuple):
        return list(value)
    if _frozen_record(value):
        return [getattr(value, field.name) for field in dataclasses.fields(value)]  # type: ignore[arg-type]
    return []


def _walked(value: object) -> bool:
    return isinstance(value, tuple) or _frozen_record(value)


def _frozen_record(value: object) -> bool:
    params = getattr(type(value), "__dataclass_params__", None)
    return params is not None and params.frozen
