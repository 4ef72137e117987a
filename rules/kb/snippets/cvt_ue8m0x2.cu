// cvt.rp.satfinite.ue8m0x2.f32 and cvt.rn.bf16x2.ue8m0x2 (UE8M0 block-scale pack/unpack)
__global__ void k(unsigned short* out, float a, float b) {
  unsigned short r;
  asm volatile("cvt.rp.satfinite.ue8m0x2.f32 %0, %1, %2;" : "=h"(r) : "f"(a), "f"(b));
  unsigned w;
  asm volatile("cvt.rn.bf16x2.ue8m0x2 %0, %1;" : "=r"(w) : "h"(r));
  out[threadIdx.x] = r + w;
}
