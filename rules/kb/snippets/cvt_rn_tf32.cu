// cvt.rn.tf32.f32 (round-to-nearest-even TF32)
__global__ void k(unsigned* out, float a) {
  unsigned r;
  asm volatile("cvt.rn.tf32.f32 %0, %1;" : "=r"(r) : "f"(a));
  out[threadIdx.x] = r;
}
