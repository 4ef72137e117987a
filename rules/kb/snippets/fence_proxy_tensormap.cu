// fence.proxy.tensormap::generic acquire (tensormap proxy fence)
__global__ void k(const void* tmap, int* out) {
  asm volatile("fence.proxy.tensormap::generic.acquire.gpu [%0], 128;" ::"l"(tmap) : "memory");
  out[threadIdx.x] = 1;
}
