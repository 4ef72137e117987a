// max.NaN.f32 (NaN-propagating max)
__global__ void k(float* out, float a, float b) {
  float r;
  asm volatile("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  out[threadIdx.x] = r;
}
