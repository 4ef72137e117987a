// fence.acq_rel.cluster (.cluster scope memory fence)
__global__ void k(int* out) {
  asm volatile("fence.acq_rel.cluster;" ::: "memory");
  out[threadIdx.x] = 1;
}
