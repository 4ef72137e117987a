// ld.global.v8.b32 (256-bit vector load)
__global__ void k(const int* p, int* out) {
  int a0, a1, a2, a3, a4, a5, a6, a7;
  asm volatile("ld.global.v8.b32 {%0,%1,%2,%3,%4,%5,%6,%7}, [%8];"
               : "=r"(a0), "=r"(a1), "=r"(a2), "=r"(a3), "=r"(a4), "=r"(a5), "=r"(a6), "=r"(a7) : "l"(p + threadIdx.x * 8));
  out[threadIdx.x] = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
}
