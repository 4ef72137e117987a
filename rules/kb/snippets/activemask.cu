// activemask.b32 and match.any.sync.b32 (warp-level queries)
__global__ void k(unsigned* out, unsigned v) {
  unsigned m, r;
  asm volatile("activemask.b32 %0;" : "=r"(m));
  asm volatile("match.any.sync.b32 %0, %1, %2;" : "=r"(r) : "r"(v), "r"(m));
  out[threadIdx.x] = r;
}
