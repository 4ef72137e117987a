// cp.async.cg.shared.global 16 B (L2-only async copy)
__global__ void k(const int4* src, int* out) {
  __shared__ __align__(16) int4 buf[32];
  unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(&buf[threadIdx.x % 32]));
  asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16;" ::"r"(s), "l"(src + threadIdx.x) : "memory");
  asm volatile("cp.async.commit_group;" ::: "memory");
  asm volatile("cp.async.wait_group 0;" ::: "memory");
  out[threadIdx.x] = buf[threadIdx.x % 32].x;
}
