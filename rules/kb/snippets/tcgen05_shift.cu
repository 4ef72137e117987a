// tcgen05.shift (shift tensor-memory rows down)
__global__ void k(unsigned* out, unsigned taddr) {
  asm volatile("tcgen05.shift.cta_group::1.down [%0];" ::"r"(taddr) : "memory");
  out[threadIdx.x] = 1;
}
