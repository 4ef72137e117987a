// st.bulk (bulk zero-initialisation of shared memory)
__global__ void k(int* out) {
  __shared__ __align__(128) char buf[256];
  unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(buf));
  asm volatile("st.bulk.weak.shared::cta [%0], 256, 0;" ::"r"(s) : "memory");
  __syncthreads();
  out[threadIdx.x] = buf[threadIdx.x % 256];
}
