// mbarrier.try_wait (phase token form) with .acquire.cluster semantics
__global__ void k(int* out) {
  __shared__ __align__(8) unsigned long long bar;
  unsigned b = static_cast<unsigned>(__cvta_generic_to_shared(&bar));
  unsigned long long state = 0;
  unsigned ok;
  asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.acquire.cluster.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
               : "=r"(ok) : "r"(b), "l"(state));
  out[threadIdx.x] = ok;
}
