// __reduce_add_sync (warp reduce intrinsic; lowers to redux.sync)
// verify: full (headers/intrinsics/attributes depend on the target: always nvcc -arch=<target> -cubin)
__global__ void k(unsigned* out, unsigned v) { out[threadIdx.x] = __reduce_add_sync(0xffffffffu, v); }
