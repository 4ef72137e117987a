// mbarrier.arrive with .release.cluster semantics on a shared::cluster address
__global__ void k(int* out) {
  __shared__ __align__(8) unsigned long long bar;
  unsigned b = static_cast<unsigned>(__cvta_generic_to_shared(&bar));
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(b));
  asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" ::"r"(b) : "memory");
  out[threadIdx.x] = 1;
}
