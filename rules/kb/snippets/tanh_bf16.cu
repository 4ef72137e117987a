// tanh.approx.bf16x2 / ex2.approx.ftz.bf16x2
__global__ void k(unsigned* out, unsigned a) {
  unsigned r, s;
  asm volatile("tanh.approx.bf16x2 %0, %1;" : "=r"(r) : "r"(a));
  asm volatile("ex2.approx.ftz.bf16x2 %0, %1;" : "=r"(s) : "r"(r));
  out[threadIdx.x] = s;
}
