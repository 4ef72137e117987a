// cvt.rn.satfinite.e4m3x2.f32 (FP8 pack conversion, PTX)
__global__ void k(unsigned short* out, float x, float y) {
  unsigned short r;
  asm volatile("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(x), "f"(y));
  unsigned h;
  asm volatile("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(h) : "h"(r));
  out[threadIdx.x] = r + h;
}
