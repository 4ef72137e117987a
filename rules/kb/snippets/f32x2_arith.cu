// packed f32x2 arithmetic: fma / add / sub / mul .rn.f32x2
__global__ void k(unsigned long long* out, unsigned long long a, unsigned long long b) {
  unsigned long long r, s;
  asm volatile("fma.rn.f32x2 %0, %1, %2, %2;" : "=l"(r) : "l"(a), "l"(b));
  asm volatile("add.rn.f32x2 %0, %1, %2;" : "=l"(s) : "l"(r), "l"(b));
  unsigned long long u, m;
  asm volatile("sub.rn.f32x2 %0, %1, %2;" : "=l"(u) : "l"(s), "l"(b));
  asm volatile("mul.rn.f32x2 %0, %1, %2;" : "=l"(m) : "l"(u), "l"(b));
  out[threadIdx.x] = m;
}
