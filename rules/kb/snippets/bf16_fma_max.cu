// bf16 fma / max / abs: fma.rn.bf16x2, max.bf16x2
__global__ void k(unsigned* out, unsigned a, unsigned b) {
  unsigned r, s;
  asm volatile("fma.rn.bf16x2 %0, %1, %2, %2;" : "=r"(r) : "r"(a), "r"(b));
  asm volatile("max.bf16x2 %0, %1, %2;" : "=r"(s) : "r"(r), "r"(b));
  out[threadIdx.x] = s;
}
