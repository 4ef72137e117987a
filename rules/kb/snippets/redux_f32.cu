// redux.sync.max.abs.NaN.f32 (floating-point warp reduction)
__global__ void k(float* out, float v) {
  float r;
  asm volatile("redux.sync.max.abs.NaN.f32 %0, %1, 0xffffffff;" : "=f"(r) : "f"(v));
  out[threadIdx.x] = r;
}
