// stmatrix .m16n8 .trans .b8 (8-bit matrix store)
__global__ void k(unsigned* out, unsigned v) {
  __shared__ __align__(16) unsigned char buf[512];
  unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(buf)) + (threadIdx.x % 16) * 16;
  asm volatile("stmatrix.sync.aligned.m16n8.x1.trans.shared.b8 [%0], {%1};" ::"r"(s), "r"(v) : "memory");
  __syncthreads();
  out[threadIdx.x] = buf[threadIdx.x % 512];
}
