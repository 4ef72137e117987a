"""Kernels launched without call syntax are still compiled into the unit."""

from __future__ import annotations

from archlint.lang.cpp.lexical import lexical_calls


def test_a_kernel_taken_by_address_through_a_cast_is_launched():
    """FlashInfer's hopper prefill: `auto kernel = (void*)PrefillWithKVCacheKernel<...>;` then
    `cudaLaunchKernel(kernel, ...)`: the kernel is compiled into the unit, as a call would make it."""
    body = b"""{
  auto kernel =
      (void*)PrefillWithKVCacheKernel<CollectiveMainloop, CollectiveEpilogue, KernelTraits>;
  cudaLaunchKernel(kernel, grid, block, args, smem, stream);
}"""
    assert "PrefillWithKVCacheKernel" in lexical_calls(body, 0, len(body))
