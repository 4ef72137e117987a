// verify: full
// libcu++'s experimental TMA exposure (<cuda/barrier>, cuda::device::experimental): declared only on
// device passes for compute capability 9.0 and above (__cccl_lib_experimental_ctk12_cp_async_exposure
// in cuda/std/__cccl/ptx_isa.h), so a lower target fails to compile the call.
#include <cuda/barrier>
namespace cde = cuda::device::experimental;

__global__ void k(int* out, const CUtensorMap* map) {
  __shared__ __align__(128) int buf[256];
  __shared__ cuda::barrier<cuda::thread_scope_block> bar;
  if (threadIdx.x == 0) {
    init(&bar, blockDim.x);
    cde::cp_async_bulk_global_to_shared(buf, out, sizeof(buf), bar);
    cde::cp_async_bulk_tensor_2d_global_to_shared(buf, map, 0, 0, bar);
  }
  __syncthreads();
  buf[threadIdx.x] = threadIdx.x;
  cde::fence_proxy_async_shared_cta();
  __syncthreads();
  if (threadIdx.x == 0) {
    cde::cp_async_bulk_shared_to_global(out, buf, sizeof(buf));
    cde::cp_async_bulk_commit_group();
    cde::cp_async_bulk_wait_group_read<0>();
  }
}
