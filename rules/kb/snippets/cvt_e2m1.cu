// cvt.rn.satfinite.e2m1x2.f32 and cvt.rn.f16x2.e2m1x2 (FP4 pack/unpack conversions, PTX)
__global__ void k(unsigned short* out, float x, float y) {
  unsigned short r;
  asm volatile("{\n.reg .b8 b0;\ncvt.rn.satfinite.e2m1x2.f32 b0, %1, %2;\ncvt.u16.u8 %0, b0;\n}\n" : "=h"(r) : "f"(x), "f"(y));
  unsigned h;
  asm volatile("{\n.reg .b8 b0;\ncvt.u8.u16 b0, %1;\ncvt.rn.f16x2.e2m1x2 %0, b0;\n}\n" : "=r"(h) : "h"(r));
  out[threadIdx.x] = r + h;
}
