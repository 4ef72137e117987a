// tensormap.cp_fenceproxy (copy a tensormap from shared to global with a proxy fence)
__global__ void k(void* gmap) {
  __shared__ __align__(128) char smap[128];
  unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smap));
  smap[threadIdx.x % 128] = 0;
  asm volatile("tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned [%0], [%1], 128;"
               ::"l"(gmap), "r"(s) : "memory");
}
