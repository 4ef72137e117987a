"""The rule table: every check module, keyed by rule id (one place to grep, like ruff's codes.rs)."""

from __future__ import annotations

from typing import Callable, Iterator

from archlint.checks import (
    admitted_not_built,
    empty_kernel_gate,
    exact_arch_branch,
    exact_arch_host_check,
    gate_admits_unsupported,
    genuine_gate,
    host_refuses_admitted,
    policy_gate,
    silent_noop_branch,
    smem_over_budget,
    unguarded_arch_specific,
    unresolved_gate,
)
from archlint.checks.context import Context
from archlint.model.findings import Finding

Check = Callable[[Context], Iterator[Finding]]


def all_checks() -> dict[str, Check]:
    return {
        "AL101": policy_gate.check,
        "AL102": genuine_gate.check,
        "AL103": empty_kernel_gate.check,
        "AL104": unresolved_gate.check,
        "AL105": gate_admits_unsupported.check,
        "AL106": host_refuses_admitted.check,
        "AL107": admitted_not_built.check,
        "AL108": exact_arch_host_check.check,
        "AL201": unguarded_arch_specific.check,
        "AL202": silent_noop_branch.check,
        "AL203": exact_arch_branch.check,
        "AL204": smem_over_budget.check,
    }


# Rules whose findings for a file depend only on that file's facts, the macro table and which builds
# compile it (Context.live); the others speak of gates.
FILE_RULES = ("AL201", "AL202", "AL203", "AL204")
