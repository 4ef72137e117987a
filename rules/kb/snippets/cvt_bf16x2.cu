// cvt.rn.bf16x2.f32 (pack two floats to bf16x2)
__global__ void k(unsigned* out, float a, float b) {
  unsigned r;
  asm volatile("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(a), "f"(b));
  out[threadIdx.x] = r;
}
