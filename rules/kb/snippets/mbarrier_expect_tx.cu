// mbarrier.expect_tx / mbarrier.complete_tx (transaction counts on an mbarrier)
__global__ void k(int* out) {
  __shared__ __align__(8) unsigned long long bar;
  unsigned b = static_cast<unsigned>(__cvta_generic_to_shared(&bar));
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(b));
  asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], 128;" ::"r"(b));
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], 128;" ::"r"(b));
  asm volatile("mbarrier.complete_tx.relaxed.cta.shared::cta.b64 [%0], 128;" ::"r"(b));
  out[threadIdx.x] = 1;
}
