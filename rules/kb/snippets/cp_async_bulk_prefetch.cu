// cp.async.bulk.prefetch.L2.global (bulk prefetch into L2)
__global__ void k(const int* src, int* out) {
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], 256;" ::"l"(src) : "memory");
  out[threadIdx.x] = 1;
}
