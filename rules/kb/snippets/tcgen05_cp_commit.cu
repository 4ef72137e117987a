// tcgen05.cp / tcgen05.commit / tcgen05.fence (tensor memory copy, completion, ordering)
__global__ void k(unsigned* out, unsigned taddr, unsigned long long sdesc) {
  __shared__ __align__(8) unsigned long long bar;
  unsigned b = static_cast<unsigned>(__cvta_generic_to_shared(&bar));
  asm volatile("tcgen05.fence::before_thread_sync;" ::: "memory");
  asm volatile("tcgen05.cp.cta_group::1.128x256b [%0], %1;" ::"r"(taddr), "l"(sdesc) : "memory");
  asm volatile("tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%0];" ::"r"(b) : "memory");
  asm volatile("tcgen05.fence::after_thread_sync;" ::: "memory");
  out[threadIdx.x] = 1;
}
