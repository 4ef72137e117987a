// atom.cas.b128 (128-bit compare-and-swap)
__global__ void k(unsigned long long* p, unsigned long long a, unsigned long long b) {
  unsigned long long lo, hi;
  asm volatile("{\n.reg .b128 c, s, d;\nmov.b128 c, {%2, %3};\nmov.b128 s, {%3, %2};\n"
               "atom.cas.relaxed.gpu.b128 d, [%4], c, s;\nmov.b128 {%0, %1}, d;\n}\n"
               : "=l"(lo), "=l"(hi) : "l"(a), "l"(b), "l"(p) : "memory");
  p[threadIdx.x + 2] = lo + hi;
}
