// __shfl_sync / __shfl_down_sync (warp shuffle intrinsics)
// verify: full (headers/intrinsics/attributes depend on the target: always nvcc -arch=<target> -cubin)
__global__ void k(int* out, int v) { out[threadIdx.x] = __shfl_sync(0xffffffffu, v, 0) + __shfl_down_sync(0xffffffffu, v, 1); }
