// cp.async.bulk.prefetch.tensor.2d.L2.global (TMA prefetch into L2)
__global__ void k(const void* tmap, int x, int y, int* out) {
  asm volatile("cp.async.bulk.prefetch.tensor.2d.L2.global.tile [%0, {%1, %2}];" ::"l"(tmap), "r"(x), "r"(y) : "memory");
  out[threadIdx.x] = 1;
}
