// cvt.rs (stochastic rounding): .satfinite.e4m3x4.f32 and .f16x2.f32
__global__ void k(unsigned* out, float a, float b, float c, float d, unsigned rbits) {
  unsigned r;
  asm volatile("cvt.rs.satfinite.e4m3x4.f32 %0, {%1, %2, %3, %4}, %5;" : "=r"(r) : "f"(a), "f"(b), "f"(c), "f"(d), "r"(rbits));
  unsigned h;
  asm volatile("cvt.rs.f16x2.f32 %0, %1, %2, %3;" : "=r"(h) : "f"(a), "f"(b), "r"(rbits));
  out[threadIdx.x] = r + h;
}
