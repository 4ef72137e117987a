// cp.async.bulk.tensor.2d ... .tile::gather4 (TMA row gather)
__global__ void k(const void* tmap, int x, int y, int* out) {
  __shared__ __align__(128) char buf[4096];
  __shared__ __align__(8) unsigned long long bar;
  unsigned sbuf = static_cast<unsigned>(__cvta_generic_to_shared(buf));
  unsigned sbar = static_cast<unsigned>(__cvta_generic_to_shared(&bar));
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile::gather4.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %3, %3, %3}], [%4];"
      ::"r"(sbuf), "l"(tmap), "r"(x), "r"(y), "r"(sbar) : "memory");
  out[threadIdx.x] = buf[threadIdx.x];
}
