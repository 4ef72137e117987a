// mma.sync m16n8k4 f64 (Hopper double-precision shape)
__global__ void k(double* out, const double* a, const double* b) {
  double d0, d1, d2, d3;
  asm volatile("mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%7,%8,%9,%10};"
               : "=d"(d0), "=d"(d1), "=d"(d2), "=d"(d3)
               : "d"(a[0]), "d"(a[1]), "d"(b[0]), "d"(0.0), "d"(0.0), "d"(0.0), "d"(0.0));
  out[threadIdx.x] = d0 + d1 + d2 + d3;
}
