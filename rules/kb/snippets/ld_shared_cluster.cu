// ld/st.shared::cluster (access a peer CTA's shared memory)
__global__ void k(unsigned* out) {
  __shared__ unsigned x;
  unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(&x)), v;
  asm volatile("st.shared::cluster.u32 [%0], 7;" ::"r"(a) : "memory");
  asm volatile("ld.shared::cluster.u32 %0, [%1];" : "=r"(v) : "r"(a) : "memory");
  out[threadIdx.x] = v;
}
