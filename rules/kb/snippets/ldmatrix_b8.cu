// ldmatrix .m8n16 .b8x16.b6x16_p32 and .m16n16 .trans .b8 (8-bit and sub-byte matrix loads)
__global__ void k(unsigned* out) {
  __shared__ __align__(16) unsigned char buf[512];
  unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(buf)) + (threadIdx.x % 8) * 16, r;
  buf[threadIdx.x % 512] = 1;
  __syncthreads();
  asm volatile("ldmatrix.sync.aligned.m8n16.x1.shared.b8x16.b6x16_p32 {%0}, [%1];" : "=r"(r) : "r"(s));
  unsigned t0, t1;
  asm volatile("ldmatrix.sync.aligned.m16n16.x1.trans.shared.b8 {%0, %1}, [%2];" : "=r"(t0), "=r"(t1) : "r"(s));
  out[threadIdx.x] = r + t0 + t1;
}
