// Block-wide reductions in shared memory: one result per block, written once by thread 0;
// a final single-block pass adds the per-block results in a fixed order, so sums are
// deterministic (no floating-point atomics).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

namespace pairmd {

constexpr int kBlockSize = 256;

// Blocks of kBlockSize threads that cover n threads.
inline int blocks_for(size_t n) { return static_cast<int>((n + kBlockSize - 1) / kBlockSize); }

template <typename T, typename Op>
__device__ T block_reduce(T v, Op op, T identity) {
  __shared__ T warp_part[kBlockSize / 32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_down_sync(0xffffffffu, v, o));
  if (lane == 0) warp_part[warp] = v;
  __syncthreads();
  v = threadIdx.x < blockDim.x / 32 ? warp_part[lane] : identity;
  if (warp == 0)
    for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_down_sync(0xffffffffu, v, o));
  __syncthreads();  // warp_part may be reused by a following reduction
  return v;         // valid in thread 0
}

struct SumOp {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    return a + b;
  }
};
struct MinOp {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    return a < b ? a : b;
  }
};
struct MaxOp {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    return a > b ? a : b;
  }
};

// Adds `nparts` values per output in a fixed order: out[k] = sum_b parts[k * stride + b].
// Launch with one block of kBlockSize threads per output.
__global__ void sum_block_parts(const double* parts, int nparts, int stride, int nout, double* out);

}  // namespace pairmd
