// fence.mbarrier_init.release.cluster (make mbarrier.init visible to the cluster)
__global__ void k(int* out) {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  out[threadIdx.x] = 1;
}
