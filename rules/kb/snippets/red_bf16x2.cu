// red.global.add.noftz.bf16x2 (packed bf16 atomic add)
__global__ void k(unsigned* p, unsigned v) {
  asm volatile("red.global.add.noftz.bf16x2 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
