"""A host check that refuses GPUs for their resources, not their instructions.

Within one major version a higher minor compiles everything a lower one does (8.6 and 8.9 run all
of 8.0's instructions). A check that admits 8.0 and refuses 8.6 (flash-attn's `is_sm80 || is_sm90`
before its head-dim-256 backward with dropout) cannot be about instructions: where the refused
capability has less shared memory per block than the admitted one, that is the reason, and a
target with no more shared memory than the refused one is refused for the same reason.
"""

from __future__ import annotations

from archlint.knowledge.arch import Target
from archlint.knowledge.kb import KnowledgeBase
from archlint.model.findings import Evidence, EvidenceKind
from archlint.model.gates import HOST_KIND, Gate, gate_location

def _dotted(cc: int) -> str:
    return f"{cc // 10}.{cc % 10}"


def resource_refusal(gate: Gate, target: Target, kb: KnowledgeBase) -> tuple[str, tuple[Evidence, ...]] | None:
    """(reason, evidence) where `gate`, a host check, refuses a capability of an admitted major
    that has every instruction of an admitted one but less shared memory, and `target` has no
    more shared memory than that refused capability; None otherwise."""
    if gate.kind != HOST_KIND:
        return None
    profiled = set(kb.profiled_ccs())
    if target.cc not in profiled:
        return None
    admitted = set(gate.admits) & profiled
    pairs = [(refused, kept) for refused in sorted(profiled - admitted)
             for kept in sorted(admitted) if kept // 10 == refused // 10 and kept < refused
             and kb.profile(refused).smem_per_block_optin < kb.profile(kept).smem_per_block_optin]
    if not pairs:
        return None
    refused, kept = max(pairs, key=lambda pair: kb.profile(pair[0]).smem_per_block_optin)
    limit = kb.profile(refused).smem_per_block_optin
    have = kb.profile(target.cc).smem_per_block_optin
    if have > limit:
        return None
    reason = (f"the check admits {_dotted(kept)} but refuses {_dotted(refused)}, which has every instruction "
              f"{_dotted(kept)} has but {limit:,} bytes of shared memory per block against {kb.profile(kept).smem_per_block_optin:,}: "
              f"it refuses GPUs for their shared memory, and {target} has {have:,} bytes")
    evidence = (Evidence(gate_location(gate), f"gate `{gate.text}` excludes {target}", EvidenceKind.GATE),
                Evidence(gate_location(gate), reason, EvidenceKind.LIMIT))
    return reason, evidence
