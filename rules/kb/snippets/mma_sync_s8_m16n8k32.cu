// mma.sync m16n8k32 s32 += s8*s8 (Ampere integer shape)
__global__ void k(int* out, const unsigned* a, const unsigned* b) {
  int d0, d1, d2, d3;
  asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};"
               : "=r"(d0), "=r"(d1), "=r"(d2), "=r"(d3)
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(0), "r"(0), "r"(0), "r"(0));
  out[threadIdx.x] = d0 + d1 + d2 + d3;
}
