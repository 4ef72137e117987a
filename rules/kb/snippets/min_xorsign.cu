// min.xorsign.abs.f32
__global__ void k(float* out, float a, float b) {
  float r;
  asm volatile("min.xorsign.abs.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  out[threadIdx.x] = r;
}
