// mma.sp::ordered_metadata ... kind::f8f6f4 m16n8k64 e2m1 (sparse FP4 warp MMA)
__global__ void k(float* out, const unsigned* a, const unsigned* b, unsigned meta) {
  float d0, d1, d2, d3;
  asm volatile("mma.sp::ordered_metadata.sync.aligned.m16n8k64.row.col.kind::f8f6f4.f32.e2m1.e2m1.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9,%10,%11}, {%12,%13,%14,%15}, %16, 0x0;"
               : "=f"(d0), "=f"(d1), "=f"(d2), "=f"(d3)
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(b[2]), "r"(b[3]),
                 "f"(0.f), "f"(0.f), "f"(0.f), "f"(0.f), "r"(meta));
  out[threadIdx.x] = d0 + d1 + d2 + d3;
}
