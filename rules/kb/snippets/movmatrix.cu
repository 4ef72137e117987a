// movmatrix.sync.aligned.m8n8.trans.b16 (transpose a fragment in registers)
__global__ void k(unsigned* out, unsigned v) {
  unsigned r;
  asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;" : "=r"(r) : "r"(v));
  out[threadIdx.x] = r;
}
