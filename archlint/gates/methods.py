"""Capability methods: a backend's own answer to "do you run on this GPU?".

vLLM's attention backends answer `supports_compute_capability(cls, capability)` and its linear
kernels `is_supported(cls, compute_capability)`; the backend selection skips a class that says no,
so each override is the gate in front of the class's kernels. The method names and the form each
takes the capability in are the gate vocabulary's `capability_method` rows. The method is evaluated
from its own returns with its first parameter bound to each known capability (its answer, or the
first element of the `(ok, reason)` pair it returns).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from archlint.gates.capability import Evaluator
from archlint.gates.capability_values import Capability, Trace, truth
from archlint.model.python import PyFunction, PythonFacts


@dataclass(frozen=True)
class MethodGate:
    method: PyFunction
    admits: tuple[int, ...]
    exact: bool  # every known capability got a yes or a no
    guards: tuple[str, ...]  # full qualnames of the class's other methods


def capability_methods(index, evaluator: Evaluator, module: str, facts: PythonFacts,
                       ccs: tuple[int, ...]) -> Iterator[MethodGate]:
    """The capability methods the module defines whose answer differs between known capabilities
    (the base class's `return True` is no gate)."""
    forms = index.idioms.method_form
    for fn in facts.functions:
        form = forms.get(fn.name)
        params = fn.params[1:] if fn.params[:1] in (("self",), ("cls",)) else fn.params
        if form is None or not fn.cls or not params:
            continue
        qualname = index.qualify(module, fn.qualname)
        answers = {cc: _answer(evaluator, qualname, Capability(cc // 10, cc % 10) if form == "pair" else cc, cc)
                   for cc in ccs}
        if False not in answers.values() or len(set(map(repr, answers.values()))) < 2:
            continue
        guards = tuple(index.qualify(module, other.qualname) for other in facts.functions
                       if other.cls == fn.cls and other is not fn)
        yield MethodGate(fn, tuple(cc for cc in ccs if answers[cc] is not False),
                         all(answer is not None and isinstance(answer, bool) for answer in answers.values()), guards)


def _answer(evaluator: Evaluator, qualname: str, capability: object, cc: int):
    value = evaluator.call_value(qualname, (capability,), cc, Trace())
    if isinstance(value, tuple) and not isinstance(value, Capability) and value:
        value = value[0]  # is_supported's (ok, reason)
    return truth(value)
