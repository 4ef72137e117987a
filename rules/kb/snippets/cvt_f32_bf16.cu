// cvt.f32.bf16 / cvt.rn.bf16.f32 (scalar bf16 conversions)
__global__ void k(float* out, unsigned short h) {
  float r;
  asm volatile("cvt.f32.bf16 %0, %1;" : "=f"(r) : "h"(h));
  unsigned short n;
  asm volatile("cvt.rn.bf16.f32 %0, %1;" : "=h"(n) : "f"(r));
  out[threadIdx.x] = r + n;
}
