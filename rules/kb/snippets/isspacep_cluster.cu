// isspacep.shared::cluster (is an address in the cluster's shared window)
__global__ void k(unsigned* out, const void* p) {
  unsigned r;
  asm volatile("{\n.reg .pred q;\nisspacep.shared::cluster q, %1;\nselp.u32 %0, 1, 0, q;\n}\n" : "=r"(r) : "l"(p));
  out[threadIdx.x] = r;
}
