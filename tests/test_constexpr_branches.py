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


def _every_alternative(source: bytes) -> dict[int, bool]:
    facts = extract_cuda("gemm.cuh", source)
    return {c.line: c.every_alternative for c in facts.constructs if c.kind == "arch-tag"}


ERROR_OR_SM90 = b"""
template <typename T, typename Layout>
cudaError_t run(float* y) {
  if constexpr (sizeof(T) == 1 && is_row_major<Layout>) {
    FLASHINFER_ERROR("Row-major layout is not supported for fp8 data type");
  } else {
    using ArchTag = cutlass::arch::Sm90;
    using OperatorClass = cutlass::arch::OpClassTensorOp;
    using Mainloop = typename cutlass::gemm::collective::CollectiveBuilder<ArchTag, OperatorClass, T>::CollectiveOp;
    return launch<Mainloop>(y);
  }
}
"""


def test_an_alternative_that_only_reports_an_error_does_not_break_a_uniform_chain():
    assert _every_alternative(ERROR_OR_SM90) == {7: True}


def test_an_alternative_that_launches_other_work_does():
    fallback = ERROR_OR_SM90.replace(b'FLASHINFER_ERROR("Row-major layout is not supported for fp8 data type");',
                                     b"simt_kernel<T><<<1, 128>>>(y); FLASHINFER_ERROR(\"slow path\");")
    assert _every_alternative(fallback) == {7: False}


DISPATCH = b"""
template <int QK, int VO>
cudaError_t dispatch(float* out) {
  if constexpr (QK == VO) {
    if constexpr (VO == 64) {
      run<Traits<64, 192>>(out);
    } else if constexpr (VO == 128) {
      run<Traits<128, 128>>(out);
    } else {
      run<Traits<256, 64>>(out);
    }
  } else {
    return cudaErrorNotSupported;
  }
  if constexpr (VO == 64) { only_for_64(out); }
  return cudaGetLastError();
}
"""


def test_what_every_working_alternative_names_is_a_sure_use_and_what_one_names_is_not():
    facts = extract_cuda("dispatch.cuh", DISPATCH)
    (item,) = [d for d in facts.declarations.items if "dispatch" in d.names]
    assert {"run", "Traits"} <= set(item.sure_uses)
    assert "only_for_64" not in item.sure_uses  # no `else`: the chain may take nothing
    assert "only_for_64" in item.uses
