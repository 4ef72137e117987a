// prefetch.tensormap (prefetch a TMA descriptor)
__global__ void k(const void* tmap, int* out) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(tmap) : "memory");
  out[threadIdx.x] = 1;
}
