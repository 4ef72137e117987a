// cvt.rn.satfinite.e4m3x2.f16x2 (pack an f16x2 to two FP8 values)
__global__ void k(unsigned short* out, unsigned v) {
  unsigned short r;
  asm volatile("cvt.rn.satfinite.e4m3x2.f16x2 %0, %1;" : "=h"(r) : "r"(v));
  out[threadIdx.x] = r;
}
