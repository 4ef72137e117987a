// packed 16-bit integer SIMD: add.s16x2 / max.s16x2
__global__ void k(unsigned* out, unsigned a, unsigned b) {
  unsigned r, s;
  asm volatile("add.s16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
  asm volatile("max.s16x2 %0, %1, %2;" : "=r"(s) : "r"(r), "r"(b));
  out[threadIdx.x] = s;
}
