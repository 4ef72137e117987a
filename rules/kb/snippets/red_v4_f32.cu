// red.global.add.v4.f32 (vector atomic add)
__global__ void k(float* p, float a) {
  asm volatile("red.global.add.v4.f32 [%0], {%1, %1, %1, %1};" ::"l"(p), "f"(a) : "memory");
}
