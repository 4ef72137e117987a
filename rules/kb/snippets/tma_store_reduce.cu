// cp.reduce.async.bulk.tensor (TMA reduce-store) and cp.async.bulk.tensor store
__global__ void k(const void* tmap, int x, int y) {
  __shared__ __align__(128) float buf[1024];
  unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(buf));
  buf[threadIdx.x % 1024] = 1.f;
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%1, %2}], [%3];" ::"l"(tmap), "r"(x), "r"(y), "r"(s) : "memory");
  asm volatile("cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile.bulk_group [%0, {%1, %2}], [%3];" ::"l"(tmap), "r"(x), "r"(y), "r"(s) : "memory");
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
  asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}
