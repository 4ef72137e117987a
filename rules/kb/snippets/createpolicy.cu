// createpolicy.fractional (L2 cache eviction policy) + ld.global.L2::cache_hint
__global__ void k(const int* p, int* out) {
  unsigned long long pol;
  int v;
  asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(pol));
  asm volatile("ld.global.L2::cache_hint.b32 %0, [%1], %2;" : "=r"(v) : "l"(p), "l"(pol));
  out[threadIdx.x] = v;
}
