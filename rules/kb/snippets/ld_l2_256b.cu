// ld.global.L1::no_allocate.L2::256B (L2 prefetch-size hint)
__global__ void k(const int4* p, int* out) {
  int4 v;
  asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.s32 {%0,%1,%2,%3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p + threadIdx.x));
  out[threadIdx.x] = v.x + v.y + v.z + v.w;
}
