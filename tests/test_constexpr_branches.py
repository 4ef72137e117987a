"""Instructions inside `if constexpr` branches: compiled only for the template arguments that take them."""

from __future__ import annotations

from archlint.extract.cuda.facts import extract_cuda

SOURCE = b"""
template <int kScope>
__device__ bool wait(unsigned addr) {
  unsigned ready;
  if constexpr (kScope == 1) {
    asm volatile("mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%0], 0;" :: "r"(addr));
  } else if constexpr (kScope == 2) {
    asm volatile("{ setmaxnreg.inc.sync.aligned.u32 240; }");
  } else
    asm volatile("fence.proxy.async.shared::cta;");
  asm volatile("elect.sync %0|p, 0xffffffff;" : "=r"(ready));
  if (ready) { asm volatile("fence.proxy.async.shared::cta;"); }
  return ready;
}
"""


def _marks():
    facts = extract_cuda("wait.cuh", SOURCE)
    return {(c.line, c.name.split(".")[0]): c.in_constexpr_branch for c in facts.constructs if c.kind == "ptx"}


def test_every_branch_of_an_if_constexpr_chain_is_marked():
    marks = _marks()
    assert marks[(6, "mbarrier")] is True
    assert marks[(8, "setmaxnreg")] is True
    assert marks[(10, "fence")] is True  # the braceless final `else`


def test_code_after_the_chain_and_under_a_plain_if_is_not():
    marks = _marks()
    assert marks[(11, "elect")] is False
    assert marks[(12, "fence")] is False
