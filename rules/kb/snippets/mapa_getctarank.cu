// mapa / getctarank (distributed shared memory addressing in a cluster)
__global__ void k(unsigned* out) {
  __shared__ int x;
  unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(&x)), r, peer;
  asm volatile("mapa.shared::cluster.u32 %0, %1, 0;" : "=r"(peer) : "r"(a));
  asm volatile("getctarank.shared::cluster.u32 %0, %1;" : "=r"(r) : "r"(peer));
  out[threadIdx.x] = r + peer;
}
