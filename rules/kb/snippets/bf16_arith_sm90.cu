// bf16x2 add/sub/mul (non-fma bf16 arithmetic): add.rn / sub.rn / mul.rn .bf16x2
__global__ void k(unsigned* out, unsigned a, unsigned b) {
  unsigned r;
  asm volatile("add.rn.bf16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
  unsigned s, m;
  asm volatile("sub.rn.bf16x2 %0, %1, %2;" : "=r"(s) : "r"(r), "r"(b));
  asm volatile("mul.rn.bf16x2 %0, %1, %2;" : "=r"(m) : "r"(s), "r"(b));
  out[threadIdx.x] = m;
}
