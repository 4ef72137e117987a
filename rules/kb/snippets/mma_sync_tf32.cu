// mma.sync m16n8k8 f32 += tf32*tf32
__global__ void k(float* out, const unsigned* a, const unsigned* b) {
  float d0, d1, d2, d3;
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};"
               : "=f"(d0), "=f"(d1), "=f"(d2), "=f"(d3)
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]),
                 "f"(0.f), "f"(0.f), "f"(0.f), "f"(0.f));
  out[threadIdx.x] = d0 + d1 + d2 + d3;
}
