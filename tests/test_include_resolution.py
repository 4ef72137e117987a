"""`#include` text resolved against the scanned trees when no include root holds it."""

from __future__ import annotations

from archlint.link.cuda import resolver_for

MOE = "fi/data/csrc/nv_internal/tensorrt_llm/kernels/cutlass_kernels/moe_gemm/moe_kernels.cuh"


def test_a_long_include_path_resolves_to_the_one_file_ending_with_it():
    """FlashInfer's moe units include `tensorrt_llm/kernels/cutlass_kernels/moe_gemm/moe_kernels.cuh`
    from a folder their JIT spec passes as an include path (`csrc/nv_internal`)."""
    resolver = resolver_for([MOE, "fi/data/csrc/fused_moe/cutlass_backend/moe_runner.cu"])
    include = "tensorrt_llm/kernels/cutlass_kernels/moe_gemm/moe_kernels.cuh"
    assert resolver.resolve("fi/data/csrc/fused_moe/cutlass_backend/moe_runner.cu", include) == MOE


def test_a_tail_two_files_share_goes_to_the_one_in_the_includers_tree():
    ours, theirs = "a/include/kernels/util.cuh", "b/include/kernels/util.cuh"
    resolver = resolver_for([ours, theirs, "a/src/k.cu"])
    assert resolver.resolve("a/src/k.cu", "kernels/util.cuh") == ours
    assert resolver.resolve("a/src/k.cu", "missing/util.cuh") is None
