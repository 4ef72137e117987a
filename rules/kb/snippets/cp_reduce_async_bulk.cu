// cp.reduce.async.bulk global <- shared::cta, bulk_group completion, add.f32
__global__ void k(float* dst) {
  __shared__ __align__(128) float buf[64];
  unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(buf));
  buf[threadIdx.x % 64] = 1.f;
  asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%0], [%1], 256;" ::"l"(dst), "r"(s) : "memory");
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
  asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
}
