// atom with .cluster scope
__global__ void k(unsigned* p, unsigned v) {
  unsigned r;
  asm volatile("atom.add.relaxed.cluster.u32 %0, [%1], %2;" : "=r"(r) : "l"(p), "r"(v) : "memory");
  p[threadIdx.x + 1] = r;
}
